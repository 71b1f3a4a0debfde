"""The Kubernetes CEL extension functions that cel-expr-python does not ship, in Python.

Semantics follow the upstream libraries (k8s.io/apiserver/pkg/cel/library: quantity, semver,
lists, regex, urls; cel-go ext: strings, sets, lists), read for behaviour, not copied.
cel-expr-python's native extensions cover the rest: ``cel.bind`` (bindings), ``.?`` / ``optional``
(optional), ``math.*`` (math), ``base64.*`` (encoders), and ``matches`` is core. The strings
extension is re-implemented here instead of loaded natively because the engine refuses two
declarations of one function name, and Kubernetes overloads ``indexOf``/``lastIndexOf`` for
strings *and* lists.

``SPECS`` is the single table: (name, member?, parameter kinds, return kind, implementation).
A parameter kind ``"any"`` expands into one overload per concrete kind, because the engine only
dispatches Python overloads on concrete kinds (a ``dyn`` parameter never matches at runtime).
"""

from __future__ import annotations

import importlib
import re as _stdlib_re
from datetime import datetime, timedelta
from typing import Any, Callable

from compiler.cel.quantity import Quantity, QuantityError, is_quantity, parse_quantity
from compiler.cel.strings import (
    ascii_case,
    char_at,
    format_string,
    index_of,
    join,
    last_index_of,
    quote,
    replace,
    reverse,
    split,
    substring,
)
from compiler.cel.values import (
    SEMVER_TAG,
    OverloadError,
    Semver,
    as_quantity,
    as_semver,
    cel_equal,
    is_quantity_value,
    order_key,
    parse_url,
    quantity_value,
    semver_value,
    url_parts,
    url_query,
)

_re: Any
try:  # RE2 semantics, like Kubernetes' Go regexp and the engine's own ``matches``
    _re = importlib.import_module("re2")
except ImportError:  # pragma: no cover - google-re2 is optional; the stdlib dialect is close
    _re = _stdlib_re

Spec = tuple[str, bool, tuple[str, ...], str, Callable[..., Any]]
_REGEX_CACHE: dict[str, Any] = {}


def compile_regex(pattern: str) -> Any:
    """An RE2 (Go-syntax) regex, cached; ``ValueError`` if it does not compile."""
    compiled = _REGEX_CACHE.get(pattern)
    if compiled is None:
        try:
            compiled = _re.compile(pattern)
        except Exception as exc:
            raise ValueError(f"invalid regex {pattern!r}: {exc}") from None
        _REGEX_CACHE[pattern] = compiled
    return compiled


# --- quantity -----------------------------------------------------------------------------------


def _quantity(text: str) -> dict[str, str]:
    try:
        return quantity_value(parse_quantity(text))
    except QuantityError as exc:
        raise ValueError(str(exc)) from None


def _compare(a: Any, b: Any) -> int:
    """compareTo for Quantity and Semver receivers (both arrive as tagged maps)."""
    if is_quantity_value(a):
        return as_quantity(a).compare(as_quantity(b))
    if isinstance(a, dict) and SEMVER_TAG in a:
        return as_semver(a).compare(as_semver(b))
    raise OverloadError("no such overload: compareTo needs a Quantity or Semver receiver")


def _qnum(value: Any) -> Quantity:
    return Quantity.of(value) if isinstance(value, int) and not isinstance(value, bool) else as_quantity(value)


def _semver(text: str, normalize: bool = False) -> dict[str, str]:
    try:
        return semver_value(Semver.parse(text, normalize))
    except ValueError as exc:
        raise ValueError(str(exc)) from None


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        Semver.parse(text, normalize)
    except ValueError:
        return False
    return True


# --- lists (Kubernetes lists library + cel-go ext.Lists) -----------------------------------------


def _is_sorted(items: list[Any]) -> bool:
    keys = [order_key(x) for x in items]
    return all(not (b < a) for a, b in zip(keys, keys[1:]))


def _sum(items: list[Any]) -> Any:
    if not items:
        return 0
    if any(isinstance(x, (timedelta, datetime)) for x in items):
        # The engine cannot return a duration from a dyn-typed Python function.
        raise OverloadError("sum() of durations is not supported by this engine")
    if any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in items):
        raise OverloadError("sum: list must contain only int, uint, double or duration values")
    return sum(items)


def _extreme(items: list[Any], pick: Callable[..., Any], name: str) -> Any:
    if not items:
        raise ValueError(f"{name} called on an empty list")
    return pick(items, key=order_key)


def _list_index(items: list[Any], value: Any, last: bool = False) -> int:
    indices = range(len(items) - 1, -1, -1) if last else range(len(items))
    return next((i for i in indices if cel_equal(items[i], value)), -1)


def _distinct(items: list[Any]) -> list[Any]:
    out: list[Any] = []
    for x in items:
        if not any(cel_equal(x, y) for y in out):
            out.append(x)
    return out


def _flatten(items: list[Any], depth: int = 1) -> list[Any]:
    if depth < 0:
        raise ValueError("flatten: level must be non-negative")
    out: list[Any] = []
    for x in items:
        out.extend(_flatten(x, depth - 1) if isinstance(x, list) and depth > 0 else [x])
    return out


def _slice(items: list[Any], start: int, end: int) -> list[Any]:
    if not 0 <= start <= end <= len(items):
        raise IndexError(f"slice: invalid range [{start}, {end}) for a list of {len(items)}")
    return items[start:end]


def _sets_contains(a: list[Any], b: list[Any]) -> bool:
    return all(any(cel_equal(x, y) for y in a) for x in b)


def _sets_intersects(a: list[Any], b: list[Any]) -> bool:
    return any(any(cel_equal(x, y) for y in a) for x in b)


# --- regex and URLs ----------------------------------------------------------------------------


def _find(s: str, pattern: str) -> str:
    m = compile_regex(pattern).search(s)
    return m.group(0) if m else ""


def _find_all(s: str, pattern: str, limit: int = -1) -> list[str]:
    if limit == 0:
        return []
    found = [m.group(0) for m in compile_regex(pattern).finditer(s)]
    return found if limit < 0 else found[:limit]


def _host_port(u: Any) -> tuple[str, str]:
    """Go's url.Hostname()/Port(): IPv6 literals lose their brackets."""
    netloc = url_parts(u).netloc.rsplit("@", 1)[-1]
    if netloc.startswith("["):
        end = netloc.find("]")
        rest = netloc[end + 1 :]
        return netloc[1:end], rest[1:] if rest.startswith(":") else ""
    host, sep, port = netloc.partition(":")
    return (host, port) if sep and ":" not in port else (netloc, "")


SPECS: tuple[Spec, ...] = (
    # quantity
    ("quantity", False, ("string",), "map", _quantity),
    ("isQuantity", False, ("string",), "bool", is_quantity),
    ("sign", True, ("map",), "int", lambda q: as_quantity(q).sign()),
    ("sign", False, ("map",), "int", lambda q: as_quantity(q).sign()),
    ("isGreaterThan", True, ("map", "map"), "bool", lambda a, b: _compare(a, b) > 0),
    ("isLessThan", True, ("map", "map"), "bool", lambda a, b: _compare(a, b) < 0),
    ("compareTo", True, ("map", "map"), "int", _compare),
    ("asApproximateFloat", True, ("map",), "double", lambda q: as_quantity(q).as_approximate_float()),
    ("asInteger", True, ("map",), "int", lambda q: as_quantity(q).as_integer()),
    ("isInteger", True, ("map",), "bool", lambda q: as_quantity(q).is_integer()),
    ("add", True, ("map", "map"), "map", lambda a, b: quantity_value(as_quantity(a).add(_qnum(b)))),
    ("add", True, ("map", "int"), "map", lambda a, b: quantity_value(as_quantity(a).add(_qnum(b)))),
    ("sub", True, ("map", "map"), "map", lambda a, b: quantity_value(as_quantity(a).sub(_qnum(b)))),
    ("sub", True, ("map", "int"), "map", lambda a, b: quantity_value(as_quantity(a).sub(_qnum(b)))),
    ("mul", True, ("map", "int"), "map", lambda a, b: quantity_value(as_quantity(a).mul(b))),
    # semver
    ("semver", False, ("string",), "map", _semver),
    ("semver", False, ("string", "bool"), "map", _semver),
    ("isSemver", False, ("string",), "bool", _is_semver),
    ("isSemver", False, ("string", "bool"), "bool", _is_semver),
    ("major", True, ("map",), "int", lambda v: as_semver(v).major),
    ("minor", True, ("map",), "int", lambda v: as_semver(v).minor),
    ("patch", True, ("map",), "int", lambda v: as_semver(v).patch),
    # strings
    ("charAt", True, ("string", "int"), "string", char_at),
    ("indexOf", True, ("string", "string"), "int", index_of),
    ("indexOf", True, ("string", "string", "int"), "int", index_of),
    ("lastIndexOf", True, ("string", "string"), "int", last_index_of),
    ("lastIndexOf", True, ("string", "string", "int"), "int", last_index_of),
    ("lowerAscii", True, ("string",), "string", lambda s: ascii_case(s, False)),
    ("upperAscii", True, ("string",), "string", lambda s: ascii_case(s, True)),
    ("replace", True, ("string", "string", "string"), "string", replace),
    ("replace", True, ("string", "string", "string", "int"), "string", replace),
    ("split", True, ("string", "string"), "list", split),
    ("split", True, ("string", "string", "int"), "list", split),
    ("substring", True, ("string", "int"), "string", substring),
    ("substring", True, ("string", "int", "int"), "string", substring),
    ("trim", True, ("string",), "string", str.strip),
    ("join", True, ("list",), "string", join),
    ("join", True, ("list", "string"), "string", join),
    ("format", True, ("string", "list"), "string", format_string),
    ("reverse", True, ("string",), "string", reverse),
    ("strings.quote", False, ("string",), "string", quote),
    # lists
    ("isSorted", True, ("list",), "bool", _is_sorted),
    ("sum", True, ("list",), "dyn", _sum),
    ("min", True, ("list",), "dyn", lambda xs: _extreme(xs, min, "min")),
    ("max", True, ("list",), "dyn", lambda xs: _extreme(xs, max, "max")),
    ("indexOf", True, ("list", "any"), "int", _list_index),
    ("lastIndexOf", True, ("list", "any"), "int", lambda xs, v: _list_index(xs, v, last=True)),
    ("reverse", True, ("list",), "list", reverse),
    ("distinct", True, ("list",), "list", _distinct),
    ("flatten", True, ("list",), "list", _flatten),
    ("flatten", True, ("list", "int"), "list", _flatten),
    ("slice", True, ("list", "int", "int"), "list", _slice),
    ("sort", True, ("list",), "list", lambda xs: sorted(xs, key=order_key)),
    ("lists.range", False, ("int",), "list", lambda n: list(range(n))),
    ("sets.contains", False, ("list", "list"), "bool", _sets_contains),
    ("sets.equivalent", False, ("list", "list"), "bool",
     lambda a, b: _sets_contains(a, b) and _sets_contains(b, a)),
    ("sets.intersects", False, ("list", "list"), "bool", _sets_intersects),
    # regex
    ("find", True, ("string", "string"), "string", _find),
    ("findAll", True, ("string", "string"), "list", _find_all),
    ("findAll", True, ("string", "string", "int"), "list", _find_all),
    # URLs
    ("url", False, ("string",), "map", parse_url),
    ("isURL", False, ("string",), "bool", lambda s: _ok(parse_url, s)),
    ("getScheme", True, ("map",), "string", lambda u: url_parts(u).scheme),
    ("getHost", True, ("map",), "string", lambda u: url_parts(u).netloc.rsplit("@", 1)[-1]),
    ("getHostname", True, ("map",), "string", lambda u: _host_port(u)[0]),
    ("getPort", True, ("map",), "string", lambda u: _host_port(u)[1]),
    ("getEscapedPath", True, ("map",), "string", lambda u: url_parts(u).path),
    ("getQuery", True, ("map",), "map", url_query),
)


def _ok(fn: Callable[[str], Any], arg: str) -> bool:
    try:
        fn(arg)
    except ValueError:
        return False
    return True


ANY_KINDS = ("int", "uint", "double", "string", "bool", "bytes", "null", "list", "map",
             "duration", "timestamp")


def expanded_specs() -> list[Spec]:
    """``SPECS`` with every ``"any"`` parameter replaced by each concrete kind."""
    out: list[Spec] = []
    for name, member, params, ret, impl in SPECS:
        variants: list[tuple[str, ...]] = [()]
        for p in params:
            variants = [v + (k,) for v in variants for k in (ANY_KINDS if p == "any" else (p,))]
        out.extend((name, member, v, ret, impl) for v in variants)
    return out


FUNCTION_NAMES: frozenset[str] = frozenset(s[0] for s in SPECS)

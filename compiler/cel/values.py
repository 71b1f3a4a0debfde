"""How Kubernetes-specific CEL values travel through the engine, plus CEL equality and order.

The engine (cel-expr-python) passes only plain values (int, float, str, bool, None, bytes,
list, dict, timedelta, datetime) to and from Python functions. Kubernetes adds three opaque
types — Quantity, Semver and URL — so each is carried as a one-key map tagged with a reserved
key. The tagged value is canonical (quantities by exact value, versions without build
metadata), which makes CEL's own ``==`` agree with upstream ``Equal``:
``quantity("1Gi") == quantity("1024Mi")`` is true. ``type(q)`` reads ``map``; that is the price.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from fractions import Fraction
from typing import Any
from urllib.parse import parse_qs, urlsplit

from compiler.cel.quantity import Quantity

QUANTITY_TAG = "__k8s_quantity__"
SEMVER_TAG = "__k8s_semver__"
URL_TAG = "__k8s_url__"


class OverloadError(TypeError):
    """A function received a value of the wrong CEL type (no such overload)."""


# --- Quantity -----------------------------------------------------------------------------------


def quantity_value(q: Quantity) -> dict[str, str]:
    return {QUANTITY_TAG: q.canonical()}


@functools.lru_cache(maxsize=4096)
def _fraction(text: str) -> Fraction:
    return Fraction(text)


def as_quantity(value: Any) -> Quantity:
    if isinstance(value, dict) and len(value) == 1 and QUANTITY_TAG in value:
        return Quantity(_fraction(value[QUANTITY_TAG]))
    raise OverloadError(f"no such overload: expected a quantity, got {describe(value)}")


def is_quantity_value(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and QUANTITY_TAG in value


# --- Semver (k8s.io/apiserver/pkg/cel/library/semverlib.go semantics) ---------------------------

_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)


@dataclass(frozen=True)
class Semver:
    major: int
    minor: int
    patch: int
    pre: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str, normalize: bool = False) -> Semver:
        if normalize:
            text = _normalize_semver(text)
        m = _SEMVER.match(text)
        if not m:
            raise ValueError(f"invalid semver {text!r}")
        pre = tuple(m.group(4).split(".")) if m.group(4) else ()
        return cls(int(m.group(1)), int(m.group(2)), int(m.group(3)), pre)

    def compare(self, other: Semver) -> int:
        a, b = (self.major, self.minor, self.patch), (other.major, other.minor, other.patch)
        if a != b:
            return -1 if a < b else 1
        if self.pre == other.pre:
            return 0
        if not self.pre or not other.pre:  # a release outranks its pre-releases
            return 1 if not self.pre else -1
        for x, y in zip(self.pre, other.pre):
            if x == y:
                continue
            xn, yn = x.isdigit(), y.isdigit()
            if xn and yn:
                return -1 if int(x) < int(y) else 1
            if xn != yn:
                return -1 if xn else 1
            return -1 if x < y else 1
        return -1 if len(self.pre) < len(other.pre) else 1

    def canonical(self) -> str:
        core = f"{self.major}.{self.minor}.{self.patch}"
        return core + ("-" + ".".join(self.pre) if self.pre else "")


def _normalize_semver(text: str) -> str:
    """Upstream ``semver(s, true)``: drop a leading v, pad to three parts, strip leading zeros."""
    text = text[1:] if text.startswith("v") else text
    m = re.match(r"^([0-9.]+)(.*)$", text, re.S)
    if not m:
        return text
    core, rest = m.groups()
    parts = core.split(".")
    if len(parts) > 3 or not all(parts):
        return text
    return ".".join([str(int(p)) for p in parts] + ["0"] * (3 - len(parts))) + rest


def semver_value(v: Semver) -> dict[str, str]:
    return {SEMVER_TAG: v.canonical()}


def as_semver(value: Any) -> Semver:
    if isinstance(value, dict) and len(value) == 1 and SEMVER_TAG in value:
        return Semver.parse(value[SEMVER_TAG])
    raise OverloadError(f"no such overload: expected a semver, got {describe(value)}")


# --- URL (Go net/url ParseRequestURI semantics, simplified) -------------------------------------


def parse_url(text: str) -> dict[str, str]:
    """An absolute URI or an absolute path, as upstream ``url()`` accepts."""
    parts = urlsplit(text)
    if not (parts.scheme or text.startswith("/")) or any(c in text for c in " \t\n"):
        raise ValueError(f"URL {text!r} must be an absolute URI or an absolute path")
    if parts.scheme and not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*$", parts.scheme):
        raise ValueError(f"URL {text!r} has an invalid scheme")
    return {URL_TAG: text}


def url_parts(value: Any) -> Any:
    if isinstance(value, dict) and len(value) == 1 and URL_TAG in value:
        return urlsplit(value[URL_TAG])
    raise OverloadError(f"no such overload: expected a URL, got {describe(value)}")


def url_query(value: Any) -> dict[str, list[str]]:
    return {k: v for k, v in parse_qs(url_parts(value).query, keep_blank_values=True).items()}


# --- CEL equality and ordering over plain values -------------------------------------------------


def describe(value: Any) -> str:
    return cel_type_name(value)


def cel_type_name(value: Any) -> str:
    if value is None:
        return "null_type"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (bytes, bytearray)):
        return "bytes"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        for tag, name in ((QUANTITY_TAG, "Quantity"), (SEMVER_TAG, "Semver"), (URL_TAG, "URL")):
            if len(value) == 1 and tag in value:
                return name
        return "map"
    if isinstance(value, timedelta):
        return "google.protobuf.Duration"
    if isinstance(value, datetime):
        return "google.protobuf.Timestamp"
    return type(value).__name__


def cel_equal(a: Any, b: Any) -> bool:
    """CEL ``==``: bools never equal numbers; ints and doubles compare numerically."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(cel_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(cel_equal(a[k], b[k]) for k in a)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def order_key(value: Any) -> Any:
    """A sort key for CEL-comparable values; raises for values CEL cannot order."""
    if isinstance(value, bool):
        return (0, value)
    if isinstance(value, (int, float)):
        return (1, value)
    if isinstance(value, (str, bytes, bytearray, timedelta, datetime)):
        return (2, type(value).__name__, value)
    if is_quantity_value(value):
        return (3, as_quantity(value).value)
    if isinstance(value, dict) and len(value) == 1 and SEMVER_TAG in value:
        return (4, _SemverKey(as_semver(value)))
    raise OverloadError(f"no such overload: {cel_type_name(value)} values are not comparable")


@dataclass(frozen=True)
class _SemverKey:
    v: Semver

    def __lt__(self, other: _SemverKey) -> bool:
        return self.v.compare(other.v) < 0

"""cel-go's strings extension (ext.Strings, as Kubernetes enables it), in Python.

Indexes count Unicode code points, as cel-go's do (Python ``str`` indexes already are). The
engine's native strings extension is not used: see ``compiler.cel.library``.
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta
from typing import Any

from compiler.cel.values import OverloadError


def _check_index(s: str, i: int, what: str) -> None:
    if i < 0 or i > len(s):
        raise IndexError(f"{what}: index out of range: {i}")


def char_at(s: str, i: int) -> str:
    _check_index(s, i, "charAt")
    return s[i] if i < len(s) else ""


def index_of(s: str, sub: str, offset: int = 0) -> int:
    _check_index(s, offset, "indexOf")
    return s.find(sub, offset)


def last_index_of(s: str, sub: str, offset: int | None = None) -> int:
    if offset is None:
        return s.rfind(sub)
    _check_index(s, offset, "lastIndexOf")
    return s.rfind(sub, 0, offset + len(sub))


def ascii_case(s: str, upper: bool) -> str:
    table = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    return s.translate(table) if upper else s.translate({v: k for k, v in table.items()})


def replace(s: str, old: str, new: str, n: int = -1) -> str:
    return s.replace(old, new, n if n >= 0 else -1)


def split(s: str, sep: str, n: int = -1) -> list[str]:
    if n == 0:
        return []
    if sep == "":
        chars = list(s)
        return chars if n < 0 or n >= len(chars) else chars[: n - 1] + ["".join(chars[n - 1 :])]
    return s.split(sep, n - 1 if n > 0 else -1)


def substring(s: str, start: int, end: int | None = None) -> str:
    end = len(s) if end is None else end
    _check_index(s, start, "substring")
    _check_index(s, end, "substring")
    if start > end:
        raise IndexError(f"substring: invalid range, start {start} > end {end}")
    return s[start:end]


def join(items: list[Any], sep: str = "") -> str:
    if not all(isinstance(x, str) for x in items):
        raise OverloadError("join: list must contain only strings")
    return sep.join(items)


def quote(s: str) -> str:
    escapes = {"\\": "\\\\", '"': '\\"', "\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n",
               "\r": "\\r", "\t": "\\t", "\v": "\\v"}
    return '"' + "".join(escapes.get(c, c) for c in s) + '"'


def reverse(value: Any) -> Any:
    return value[::-1]


def _fmt_s(value: Any, nested: bool = False) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return quote(value) if nested else value
    if isinstance(value, float):
        return _fmt_double(value, None, "g")
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, list):
        return "[" + ", ".join(_fmt_s(x, True) for x in value) + "]"
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: str(kv[0]))
        return "{" + ", ".join(f"{_fmt_s(k, True)}: {_fmt_s(v, True)}" for k, v in items) + "}"
    if isinstance(value, timedelta):
        return f"{value.total_seconds():g}s"
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    return str(value)


def _fmt_double(value: Any, precision: int | None, verb: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise OverloadError(f"format: %{verb} needs a number, got {type(value).__name__}")
    x = float(value)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if verb == "g":
        return repr(x)[:-2] if x.is_integer() and abs(x) < 1e21 else repr(x)
    return f"{x:.{6 if precision is None else precision}{verb}}"


def _fmt_int(value: Any, verb: str) -> str:
    if verb in "xX" and isinstance(value, (str, bytes, bytearray)):
        data = value.encode() if isinstance(value, str) else bytes(value)
        out = data.hex()
        return out.upper() if verb == "X" else out
    if isinstance(value, bool) or not isinstance(value, int):
        raise OverloadError(f"format: %{verb} needs an integer, got {type(value).__name__}")
    spec = {"d": "d", "b": "b", "o": "o", "x": "x", "X": "X"}[verb]
    return format(value, spec)


_VERB = re.compile(r"%(?:\.(\d+))?([a-zA-Z%])")


def format_string(template: str, args: list[Any]) -> str:
    out: list[str] = []
    pos = 0
    index = 0
    for m in _VERB.finditer(template):
        out.append(template[pos : m.start()])
        pos = m.end()
        precision, verb = m.group(1), m.group(2)
        if verb == "%":
            out.append("%")
            continue
        if index >= len(args):
            raise IndexError(f"format: index {index} out of range")
        arg = args[index]
        index += 1
        if verb == "s":
            out.append(_fmt_s(arg))
        elif verb in "fe":
            out.append(_fmt_double(arg, int(precision) if precision else None, verb))
        elif verb in "dboxX":
            out.append(_fmt_int(arg, verb))
        else:
            raise ValueError(f"format: unrecognized formatting clause %{verb}")
    out.append(template[pos:])
    return "".join(out)



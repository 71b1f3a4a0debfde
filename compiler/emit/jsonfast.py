"""``json.dumps(data, indent=2, sort_keys=True)``, the same bytes about 3x faster.

With ``indent`` set, the standard library cannot use its C encoder and falls back to a
generator per nesting level; allocation.json for 1,000 teams (4.7 MB, 4 million keys) took
~0.3 s that way, a fifth of an incremental check. This writer appends to one list and uses the
C string escaper. It handles dicts with ``str`` keys, lists, tuples, ``str``, ``int``, ``bool``,
``None`` and finite floats; anything else (other key types, NaN, custom objects, cycles) goes to
``json.dumps`` itself, so errors and edge cases stay the standard library's.
tests/test_emit_fast.py compares both on generated data.

A caller that knows the shape of a repeated part may hand in a ``Written``: text it writes for
the indentation at hand, with the plain value it stands for (allocation.json's 10,000 budget
entries at 1,000 teams; tests/test_whole_policy_json.py holds each writer to the plain value's
bytes).
"""

from __future__ import annotations

import json
import math
from json.encoder import encode_basestring_ascii
from typing import Any, Callable

_MAX_DEPTH = 500


class _Fallback(Exception):
    pass


class Written:
    """A value its caller writes: ``write(nl)`` is its text where ``nl`` is the newline and
    indentation of its line (``"\\n    "``), the same bytes as ``plain()`` would be written (one
    string, or the pieces that join to it), or None to write ``plain()``."""

    __slots__ = ("plain", "write")

    def __init__(self, plain: Callable[[], Any], write: Callable[[str], str | list[str] | None]) -> None:
        self.plain = plain
        self.write = write


def _plain(o: Any) -> Any:
    if type(o) is Written:
        return o.plain()
    raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")  # json's own words


def dumps_sorted_indent2(data: Any) -> str:
    return "".join(dumps_pieces(data))


def dumps_pieces(data: Any) -> list[str]:
    """``dumps_sorted_indent2(data)`` in the pieces that join to it, each ``Written`` piece as its
    writer gave it (``compiler.report.fragments.recipe`` keeps a report by them)."""
    out = _pieces(data, "\n")
    return [json.dumps(data, indent=2, sort_keys=True, default=_plain)] if out is None else out


def written_at(data: Any, nl: str) -> str | None:
    """``data`` as ``dumps_sorted_indent2`` writes it on a line whose newline and indentation is
    ``nl`` (a ``Written``'s text), or None where only ``json.dumps`` would write it."""
    out = _pieces(data, nl)
    return None if out is None else "".join(out)


def _pieces(data: Any, nl: str) -> list[str] | None:
    """``data`` written at ``nl`` in pieces, or None for what this writer leaves to ``json.dumps``."""
    out: list[str] = []
    try:
        _value(data, nl, out, 0)
    except _Fallback:
        return None
    return out


def _value(v: Any, nl: str, out: list[str], depth: int) -> None:
    t = type(v)
    if t is str:
        out.append(encode_basestring_ascii(v))
    elif t is dict:
        if not v:
            out.append("{}")
            return
        if depth > _MAX_DEPTH:
            raise _Fallback
        inner = nl + "  "
        first = True
        try:
            keys = sorted(v)
        except TypeError:
            raise _Fallback from None
        for k in keys:
            if type(k) is not str:
                raise _Fallback
            out.append(("{" if first else ",") + inner + encode_basestring_ascii(k) + ": ")
            first = False
            _value(v[k], inner, out, depth + 1)
        out.append(nl + "}")
    elif t is list or t is tuple:
        if not v:
            out.append("[]")
            return
        if depth > _MAX_DEPTH:
            raise _Fallback
        inner = nl + "  "
        first = True
        for item in v:
            out.append(("[" if first else ",") + inner)
            first = False
            _value(item, inner, out, depth + 1)
        out.append(nl + "]")
    elif v is None:
        out.append("null")
    elif t is bool:
        out.append("true" if v else "false")
    elif t is int:
        out.append(int.__repr__(v))
    elif t is float and math.isfinite(v):
        out.append(float.__repr__(v))
    elif t is Written:
        text = v.write(nl)
        if text is None:
            _value(v.plain(), nl, out, depth)
        elif type(text) is list:
            out.extend(text)
        else:
            out.append(text)
    else:
        raise _Fallback

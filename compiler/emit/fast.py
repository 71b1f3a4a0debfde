"""A YAML writer specialised for manifests, byte-identical to the reference emitter.

The reference is PyYAML's pure-Python ``SafeDumper`` with ``compiler.emit.tree``'s settings (block
style, insertion order, ``allow_unicode``, width 65536, indent 2, multi-line strings as literal
blocks). Measured on the 1,000-team benchmark it spends ~10 s where this writer spends ~2 s
(bench/README.md): PyYAML builds a node graph and an event stream per document and analyses
every scalar character by character; manifests repeat the same few thousand strings, so here
each distinct string is analysed once and its rendering memoised.

The writer covers what manifests hold: dicts with ``str`` keys, lists, ``str``, ``int``,
``bool`` and ``None``, multi-line ASCII strings as literal blocks. Anything else — a float, a
key that is not a simple key, a very long or unusual string (non-ASCII lines, ``keep``
chomping), an object that appears twice in the document (PyYAML writes an anchor), another
type — raises ``Unsupported`` and the caller renders that document with the reference emitter.
Strings the quick check below cannot prove plain are rendered once by the reference emitter
itself and cached, so quoting and escaping are PyYAML's own. tests/test_emit_fast.py compares
both writers on generated data (hypothesis) and on the golden cases.
"""

from __future__ import annotations

from typing import Any, Callable

import yaml
from yaml.nodes import ScalarNode

_STR_TAG = "tag:yaml.org,2002:str"
_RESOLVER = yaml.resolver.Resolver()
_LEADING = frozenset("#,[]{}&*!|>'\"%@`")
_BREAKS = ("\n", "\x85", "\u2028", "\u2029")
MAX_SCALAR = 16_000  # PyYAML folds lines past column 65536; this leaves room for any indentation
_CACHE_LIMIT = 1 << 20


class Unsupported(Exception):
    """The document needs the reference emitter."""


# Rendering of a string by the reference emitter, in value and in simple-key position.
Reference = Callable[[Any], str]


class FastEmitter:
    def __init__(self, reference: Reference) -> None:
        self.reference = reference
        self.values: dict[str, str] = {}
        self.keys: dict[str, str] = {}

    # scalars -----------------------------------------------------------------------------

    def _plain(self, s: str) -> bool:
        """True when PyYAML would write ``s`` plain in block context (as key or value).

        Mirrors ``Emitter.analyze_scalar`` for printable ASCII, where only indicators and
        surrounding spaces matter, then asks the resolver, as the serializer does, whether the
        plain text would read back as a string (``'true'``, ``'1.34'``, ``'null'`` are quoted)."""
        if not s.isascii() or not s.isprintable():
            return False
        first = s[0]
        if first == " " or s[-1] == " " or first in _LEADING:
            return False
        if first in "?:-" and (len(s) == 1 or s[1] == " "):
            return False
        if s.startswith(("---", "...")) or s[-1] == ":" or ": " in s or " #" in s:
            return False
        return _RESOLVER.resolve(ScalarNode, s, (True, False)) == _STR_TAG

    def _check(self, s: str) -> None:
        if len(s) > MAX_SCALAR or any(b in s for b in _BREAKS):
            raise Unsupported("multi-line or long string")  # literal blocks go through block()
        if len(self.values) > _CACHE_LIMIT:
            self.values.clear()
            self.keys.clear()

    def value(self, s: str) -> str:
        try:
            return self.values[s]
        except KeyError:
            pass
        self._check(s)
        if s and self._plain(s):
            out = s
        else:
            text = self.reference({"k": s})  # "k: <scalar>\n"
            out = text[3:-1]
        self.values[s] = out
        return out

    def key(self, s: str) -> str:
        try:
            return self.keys[s]
        except KeyError:
            pass
        self._check(s)
        if len(s) >= 128 or not s:
            raise Unsupported("not a simple key")  # PyYAML writes "? key"
        if self._plain(s):
            out = s
        else:
            text = self.reference({s: None})  # "<key>: null\n"
            if text.startswith("? ") or not text.endswith(": null\n"):
                raise Unsupported("complex key")
            out = text[: -len(": null\n")]
        self.keys[s] = out
        return out

    def block(self, s: str, indent: int) -> str:
        """A multi-line string after ``key:`` or ``-``: a literal block (``|``) indented to
        ``indent``, as ``Emitter.write_literal`` writes it, or PyYAML's double-quoted fallback
        when a block cannot hold the text (a trailing space, a space before a line break)."""
        if len(s) > 4 * MAX_SCALAR or not s.isascii() or any(b in s for b in _BREAKS[1:]):
            raise Unsupported("unusual multi-line string")
        if s[-1] == " " or " \n" in s or not s.replace("\n", "").isprintable():
            return self._quoted(s)
        hints = "2" if s[0] in " \n" else ""
        if s[-1] != "\n":
            hints += "-"
        elif len(s) == 1 or s[-2] == "\n":
            raise Unsupported("keep chomping")  # '+' makes PyYAML end the document with '...'
        lines = s.split("\n")
        if s[-1] == "\n":
            lines.pop()
        pad = " " * indent
        return f" |{hints}\n" + "".join(f"{pad}{line}\n" if line else "\n" for line in lines)

    def _quoted(self, s: str) -> str:
        text = self.reference({"k": s})  # PyYAML falls back to double quotes: one line, escaped
        if text.count("\n") != 1:
            raise Unsupported("folded quoted string")
        return " " + text[3:]

    def scalar(self, v: Any) -> str:
        t = type(v)
        if t is str:
            return self.value(v)
        if t is bool:
            return "true" if v else "false"
        if t is int:
            return str(v)
        if v is None:
            return "null"
        raise Unsupported(f"type {t.__name__}")

    # collections -------------------------------------------------------------------------

    def dump(self, data: Any) -> str:
        out: list[str] = []
        seen: set[int] = set()
        t = type(data)
        if t is dict and data:
            self._mapping(data, 0, False, out, seen)
        elif t is list and data:
            self._sequence(data, 0, False, out, seen)
        elif t is dict or t is list:
            return "{}\n" if t is dict else "[]\n"
        else:
            raise Unsupported("top-level scalar")  # PyYAML adds a document end marker
        return "".join(out)

    def _mapping(self, d: dict[Any, Any], indent: int, inline: bool, out: list[str], seen: set[int]) -> None:
        # Hot loop (4M nodes on the 1,000-team benchmark): locals, no helper calls per node.
        n = id(d)
        if n in seen:
            raise Unsupported("shared object")  # PyYAML would write an anchor and alias
        seen.add(n)
        pad = " " * indent
        keys, values, append = self.keys, self.values, out.append
        prefix = "" if inline else pad
        for k, v in d.items():
            if type(k) is not str:
                raise Unsupported("non-string key")
            ks = keys.get(k) or self.key(k)
            t = type(v)
            if t is str:
                r = values.get(v)
                if r is not None:
                    append(f"{prefix}{ks}: {r}\n")
                elif "\n" in v:
                    append(f"{prefix}{ks}:{self.block(v, indent + 2)}")
                else:
                    append(f"{prefix}{ks}: {self.value(v)}\n")
            elif t is dict or t is list:
                if v:
                    append(f"{prefix}{ks}:\n")
                    if t is dict:
                        self._mapping(v, indent + 2, False, out, seen)
                    else:
                        self._sequence(v, indent, False, out, seen)  # PyYAML: indentless under a key
                else:
                    self._empty(v, seen)
                    append(f"{prefix}{ks}: {'{}' if t is dict else '[]'}\n")
            else:
                append(f"{prefix}{ks}: {self.scalar(v)}\n")
            prefix = pad

    def _sequence(self, items: list[Any], indent: int, inline: bool, out: list[str], seen: set[int]) -> None:
        n = id(items)
        if n in seen:
            raise Unsupported("shared object")
        seen.add(n)
        pad = " " * indent
        values, append = self.values, out.append
        prefix = "" if inline else pad
        for v in items:
            t = type(v)
            if t is str:
                r = values.get(v)
                if r is not None:
                    append(f"{prefix}- {r}\n")
                elif "\n" in v:
                    append(f"{prefix}-{self.block(v, indent + 2)}")
                else:
                    append(f"{prefix}- {self.value(v)}\n")
            elif t is dict or t is list:
                if v:
                    append(f"{prefix}- ")
                    if t is dict:
                        self._mapping(v, indent + 2, True, out, seen)
                    else:
                        self._sequence(v, indent + 2, True, out, seen)
                else:
                    self._empty(v, seen)
                    append(f"{prefix}- {'{}' if t is dict else '[]'}\n")
            else:
                append(f"{prefix}- {self.scalar(v)}\n")
            prefix = pad

    @staticmethod
    def _empty(v: Any, seen: set[int]) -> None:
        if id(v) in seen:
            raise Unsupported("shared object")
        seen.add(id(v))

"""Reading ``kubectl get ... -o json`` exports: whole files or one item at a time.

``kubectl`` writes a ``List`` (``{"apiVersion": "v1", "items": [...], "kind": "List", ...}``);
a JSON array of objects and a single object are accepted too. ``iter_items`` streams the items of
a large export (100,000 Workloads are ~0.5 GB of JSON) without holding the document: it decodes
one item at a time from a sliding buffer. Every problem is an ``ExportError`` naming the file and,
where there is one, the object (``kind namespace/name`` or its position in ``items``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

CHUNK = 1 << 20
_WS = " \t\r\n"


class ExportError(ValueError):
    """An export that cannot be read as what it should be; the message names file and object."""


class ExportMissing(ExportError):
    """The file itself cannot be opened: an environment (usage) error, not a bad export."""


def describe(obj: Any, index: int | None = None) -> str:
    """``Workload team-a/job-1`` or ``item 3`` for an error message."""
    if isinstance(obj, dict):
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        name = meta.get("name") if isinstance(meta, dict) else None
        ns = meta.get("namespace") if isinstance(meta, dict) else None
        if name:
            where = f"{ns}/{name}" if ns else str(name)
            return f"{obj.get('kind', 'object')} {where}" + (f" (item {index})" if index is not None else "")
    return f"item {index}" if index is not None else "the document"


class _Stream:
    """A text buffer over a file that decodes one JSON value at a time."""

    def __init__(self, fh: TextIO, path: Path) -> None:
        self.fh, self.path = fh, path
        self.buf = ""
        self.pos = 0
        self.base = 0  # characters dropped from the buffer's front
        self.eof = False
        self.decoder = json.JSONDecoder()

    def _fill(self) -> bool:
        if self.eof:
            return False
        try:
            chunk = self.fh.read(CHUNK)
        except UnicodeDecodeError:
            raise ExportError(f"{self.path}: not UTF-8 text") from None
        if not chunk:
            self.eof = True
            return False
        self.base += self.pos
        self.buf = self.buf[self.pos:] + chunk
        self.pos = 0
        return True

    def peek(self) -> str | None:
        """The next non-blank character (not consumed); None at the end of the file."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _WS:
                self.pos += 1
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._fill():
                return None

    def expect(self, char: str, what: str) -> None:
        got = self.peek()
        if got != char:
            found = "the end of the file (truncated?)" if got is None else repr(got)
            raise ExportError(f"{self.path}: expected {what}, found {found} at character {self.offset()}")
        self.pos += 1

    def offset(self) -> int:
        return self.base + self.pos

    def value(self, what: str) -> Any:
        """Decode the next complete JSON value, reading more of the file as needed."""
        if self.peek() is None:
            raise ExportError(f"{self.path}: {what}: the file ends early (truncated?)")
        while True:
            try:
                val, end = self.decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                if self._fill():
                    continue
                raise ExportError(f"{self.path}: {what}: not valid JSON ({exc.msg}; the file may be truncated)") from None
            if end == len(self.buf) and self._fill():
                continue  # a number cut by the chunk boundary would decode short
            self.pos = end
            return val


def iter_items(path: Path, kinds: Iterable[str] | None = None) -> Iterator[dict[str, Any]]:
    """Objects of an export, streamed; only those whose ``kind`` is in ``kinds`` when given (an item
    without ``kind`` is taken as the expected one: ``kubectl -o json`` always writes it)."""
    wanted = set(kinds) if kinds is not None else None
    try:
        fh = path.open("r", encoding="utf-8", newline="")
    except OSError as exc:
        raise ExportMissing(f"{path}: cannot read ({exc.strerror or exc})") from None
    with fh:
        s = _Stream(fh, path)
        first = s.peek()
        if first is None:
            raise ExportError(f"{path}: empty file (expected the output of kubectl get ... -o json)")
        if first == "[":
            s.pos += 1
            yield from _array(s, wanted)
        elif first == "{":
            yield from _document(s, wanted)
        else:
            raise ExportError(f"{path}: not a JSON export (starts with {first!r}; use kubectl get ... -o json)")
        if s.peek() is not None:
            raise ExportError(f"{path}: unexpected data after the end of the JSON document at character {s.offset()}")


def _document(s: _Stream, wanted: set[str] | None) -> Iterator[dict[str, Any]]:
    s.expect("{", "'{'")
    head: dict[str, Any] = {}
    streamed = False
    if s.peek() == "}":
        s.pos += 1
        raise ExportError(f"{s.path}: an empty JSON object, not an export")
    while True:
        key = s.value("a key")
        if not isinstance(key, str):
            raise ExportError(f"{s.path}: malformed JSON object")
        s.expect(":", "':'")
        if key == "items":
            if s.peek() != "[":
                raise ExportError(f"{s.path}: 'items' is not a list")
            s.pos += 1
            streamed = True
            yield from _array(s, wanted)
        else:
            head[key] = s.value(f"field {key!r}")
        nxt = s.peek()
        if nxt == ",":
            s.pos += 1
            continue
        s.expect("}", "',' or '}'")
        break
    if not streamed:  # a single object
        _check_kind(s.path, head, wanted, None)
        yield head


def _array(s: _Stream, wanted: set[str] | None) -> Iterator[dict[str, Any]]:
    index = 0
    if s.peek() == "]":
        s.pos += 1
        return
    while True:
        item = s.value(f"item {index}")
        if not isinstance(item, dict):
            raise ExportError(f"{s.path}: item {index} is not an object")
        _check_kind(s.path, item, wanted, index)
        yield item
        index += 1
        nxt = s.peek()
        if nxt == ",":
            s.pos += 1
            continue
        s.expect("]", "',' or ']' after item " + str(index - 1))
        return


def _check_kind(path: Path, obj: dict[str, Any], wanted: set[str] | None, index: int | None) -> None:
    kind = obj.get("kind")
    if wanted is not None and kind is not None and kind not in wanted:
        raise ExportError(f"{path}: {describe(obj, index)} is a {kind}, expected {' or '.join(sorted(wanted))}")
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        raise ExportError(f"{path}: {describe(obj, index)} has no metadata.name")


def load_items(path: Path, kinds: Iterable[str] | None = None) -> list[dict[str, Any]]:
    return list(iter_items(path, kinds))

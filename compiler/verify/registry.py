"""The CRDs verify checks custom resources against, loaded from a directory tree.

Any mix of files works: multi-document YAML, ``kind: List`` exports (``kubectl get crd -o
yaml``), JSON; documents that are not CRDs (Helm templates, samples, values files) are ignored.
Parsing is lazy: a cheap scan indexes each CRD document by group and kind, and its YAML is
parsed only when an object of that kind is verified — the upstream set holds ~5 MB of YAML
(Workload and ApplicationSet alone are 1.4 MB each) that a typical build never needs.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Protocol

import yaml

from compiler.diagnostics import UsageError

try:
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML without libyaml
    _Loader = yaml.SafeLoader

_DOC_SEPARATOR = re.compile(r"^---[ \t]*(?:#.*)?$", re.M)
_TOP_KIND = re.compile(r"^kind:[ \t]*['\"]?([A-Za-z]+)['\"]?[ \t]*$", re.M)
_GROUP = re.compile(r"^  group:[ \t]*['\"]?([A-Za-z0-9.-]+)['\"]?[ \t]*$", re.M)
_NAMES_BLOCK = re.compile(r"^  names:[ \t]*\n((?:(?:    .*)?\n)*)", re.M)
_NAMES_KIND = re.compile(r"^    kind:[ \t]*['\"]?([A-Za-z0-9]+)['\"]?[ \t]*$", re.M)
_SUFFIXES = (".yaml", ".yml", ".json")


class ParsedDocs(Protocol):
    """Where a CRD document's parse may come from instead of YAML: PyYAML builds the ~200 KB
    ClusterQueue CRD in ~0.05 s, which a one-team edit would pay in every process that verifies a
    ClusterQueue (``compiler.pipeline.tables.ParsedCrds`` keeps them in the store, by text)."""

    def get(self, text: str) -> dict[str, Any] | None: ...

    def put(self, text: str, doc: dict[str, Any]) -> None: ...


class CrdLoadError(UsageError):
    """The CRD directory (or a CRD in it) cannot be read: a usage/environment error (exit 2)."""


@dataclass
class CrdEntry:
    """One CustomResourceDefinition; ``definition`` parses its document on first use."""

    group: str
    kind: str
    source: Path
    _text: str | None = None
    _doc: dict[str, Any] | None = None
    cache: dict[str, Any] = field(default_factory=dict)  # compiled schemas per version
    parsed: ParsedDocs | None = None  # set by ``CrdRegistry.remember``

    @property
    def definition(self) -> dict[str, Any]:
        if self._doc is None:
            text = self._text or ""
            doc = None if self.parsed is None else self.parsed.get(text)
            try:
                if doc is None:
                    doc = yaml.load(text, Loader=_Loader)
                    if self.parsed is not None and isinstance(doc, dict):
                        self.parsed.put(text, doc)
            except yaml.YAMLError as exc:
                raise CrdLoadError(f"{self.source}: CRD for {self.kind}.{self.group} does not parse: {exc}") from None
            if not _is_crd(doc) or (doc["spec"].get("group"), _names_kind(doc)) != (self.group, self.kind):
                raise CrdLoadError(f"{self.source}: expected a CRD for {self.kind}.{self.group}")
            self._doc, self._text = doc, None
        return self._doc

    @property
    def scope(self) -> str:
        return str(self.definition["spec"].get("scope", "Namespaced"))

    def version(self, name: str) -> dict[str, Any] | None:
        """The ``spec.versions[]`` entry called ``name`` (old CRDs: ``spec.version``)."""
        spec = self.definition["spec"]
        for v in spec.get("versions") or []:
            if isinstance(v, dict) and v.get("name") == name:
                return v
        if spec.get("version") == name:
            return {"name": name, "served": True}
        return None

    def served_versions(self) -> list[str]:
        spec = self.definition["spec"]
        names = [str(v.get("name")) for v in spec.get("versions") or [] if v.get("served", True)]
        return names or ([str(spec["version"])] if spec.get("version") else [])

    def schema(self, version: str) -> dict[str, Any] | None:
        v = self.version(version) or {}
        schema = (v.get("schema") or {}).get("openAPIV3Schema")
        if schema is None:  # apiextensions v1beta1: one schema for all versions
            schema = (self.definition["spec"].get("validation") or {}).get("openAPIV3Schema")
        return schema if isinstance(schema, dict) else None


def _is_crd(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and doc.get("kind") == "CustomResourceDefinition"
        and isinstance(doc.get("spec"), dict)
        and isinstance(doc["spec"].get("names"), dict)
    )


def _names_kind(doc: dict[str, Any]) -> str:
    return str(doc["spec"]["names"].get("kind", ""))


class CrdRegistry:
    """CRDs by (group, kind). Build with ``CrdRegistry.load(path)`` or ``from_documents``."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str], CrdEntry] = {}
        self.duplicates: list[str] = []  # "kind.group: kept <file>, ignored <file>"
        self.skipped: list[str] = []  # files that could not be read or parsed (not CRDs)
        self.root: Path | None = None

    def remember(self, parsed: ParsedDocs | None) -> None:
        """Parse the CRDs not yet parsed through ``parsed`` (None: YAML only)."""
        for entry in self._entries.values():
            entry.parsed = parsed

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def load(cls, root: Path | str) -> CrdRegistry:
        root = Path(root)
        if not root.exists():
            raise CrdLoadError(f"CRD directory {root} does not exist")
        if not root.is_dir():
            raise CrdLoadError(f"CRD directory {root} is not a directory")
        registry = cls()
        registry.root = root
        try:
            files = sorted(p for p in root.rglob("*") if p.suffix in _SUFFIXES and p.is_file())
        except OSError as exc:
            raise CrdLoadError(f"cannot list CRD directory {root}: {exc}") from None
        for path in files:
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                registry.skipped.append(f"{path}: {exc}")
                continue
            registry._index_text(text, path)
        return registry

    @classmethod
    def from_documents(cls, docs: Iterable[Any], source: str = "<memory>") -> CrdRegistry:
        registry = cls()
        for doc in docs:
            registry._add_parsed(doc, Path(source))
        return registry

    def _index_text(self, text: str, path: Path) -> None:
        if "CustomResourceDefinition" not in text:
            return
        if path.suffix == ".json":
            try:
                self._add_parsed(json.loads(text), path)
            except ValueError as exc:
                self.skipped.append(f"{path}: {exc}")
            return
        for chunk in _DOC_SEPARATOR.split(text):
            if "CustomResourceDefinition" not in chunk:
                continue
            top = _TOP_KIND.search(chunk)
            if top and top.group(1) == "CustomResourceDefinition":
                group, names = _GROUP.search(chunk), _NAMES_BLOCK.search(chunk)
                kind = _NAMES_KIND.search(names.group(1)) if names else None
                if group and kind:
                    self._add(CrdEntry(group.group(1), kind.group(1), path, _text=chunk))
                    continue
            try:  # unusual layout or a List export: parse it now
                self._add_parsed(yaml.load(chunk, Loader=_Loader), path)
            except yaml.YAMLError as exc:
                self.skipped.append(f"{path}: {exc}")

    def _add_parsed(self, doc: Any, path: Path) -> None:
        if isinstance(doc, dict) and doc.get("kind", "").endswith("List") and isinstance(doc.get("items"), list):
            for item in doc["items"]:
                self._add_parsed(item, path)
        elif _is_crd(doc):
            self._add(CrdEntry(str(doc["spec"].get("group", "")), _names_kind(doc), path, _doc=doc))

    def _add(self, entry: CrdEntry) -> None:
        key = (entry.group, entry.kind)
        kept = self._entries.get(key)
        if kept is None:
            self._entries[key] = entry
        else:
            self.duplicates.append(f"{entry.kind}.{entry.group}: kept {kept.source}, ignored {entry.source}")

    # -- lookup --------------------------------------------------------------------------------
    def get(self, group: str, kind: str) -> CrdEntry | None:
        return self._entries.get((group, kind))

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def kinds(self) -> list[tuple[str, str]]:
        """(group, kind) pairs, sorted."""
        return sorted(self._entries)

    def __repr__(self) -> str:
        return f"CrdRegistry({len(self)} CRDs from {self.root or 'documents'})"

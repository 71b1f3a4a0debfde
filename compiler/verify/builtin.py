"""Schemas of built-in Kubernetes kinds, from the ``kubernetes-validate`` package's bundled
``kubernetes-json-schema/v1.XX.0-local-strict`` folders (strict: unknown fields rejected).

Each folder's ``_definitions.json`` is loaded once and shared by every kind of that version;
each (version, kind) validator is compiled once. ``kubernetes_validate.validate()`` is not used
because it reloads both files for every object (~12 ms each).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compiler.verify.jsonschema_backend import Validator, compile_validator, make_registry

_DEFINITIONS_URI = "https://kubernetes.io/api/_definitions.json"
_FOLDER = re.compile(r"^v(\d+)\.(\d+)\.0-local-strict$")
_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.\d+)?(?:[-+].*)?$")


class BuiltinSchemaError(Exception):
    """The bundled schema folder is missing (kubernetes-validate not installed)."""


@functools.lru_cache(maxsize=1)
def schema_root() -> Path:
    # find_spec locates the package without importing it (its import pulls in jsonschema: ~0.25 s)
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:  # pragma: no cover - a declared dependency
        raise BuiltinSchemaError("kubernetes-validate is not installed")
    root = Path(list(spec.submodule_search_locations)[0]) / "kubernetes-json-schema"
    if not root.is_dir():
        raise BuiltinSchemaError(f"no bundled schemas under {root}")
    return root


@functools.lru_cache(maxsize=1)
def bundled_versions() -> tuple[tuple[int, int], ...]:
    """(major, minor) of every bundled strict schema folder, ascending."""
    found = (_FOLDER.match(p.name) for p in schema_root().iterdir())
    return tuple(sorted((int(m.group(1)), int(m.group(2))) for m in found if m))


def parse_version(text: str) -> tuple[int, int] | None:
    m = _VERSION.match(str(text).strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


@dataclass(frozen=True)
class ResolvedVersion:
    requested: str
    bundled: tuple[int, int]
    exact: bool

    @property
    def label(self) -> str:
        return f"{self.bundled[0]}.{self.bundled[1]}"


def resolve(requested: str) -> ResolvedVersion | None:
    """The newest bundled version not newer than ``requested`` (else the oldest bundled)."""
    wanted = parse_version(requested)
    versions = bundled_versions()
    if wanted is None or not versions:
        return None
    older = [v for v in versions if v <= wanted]
    chosen = older[-1] if older else versions[0]
    return ResolvedVersion(str(requested), chosen, chosen == wanted)


class _VersionSchemas:
    """Definitions, registry and compiled validators of one bundled Kubernetes version."""

    def __init__(self, version: tuple[int, int]) -> None:
        self.folder = schema_root() / f"v{version[0]}.{version[1]}.0-local-strict"
        self.definitions: dict[str, Any] = json.loads((self.folder / "_definitions.json").read_text())
        self.groups: frozenset[str] = frozenset(
            gvk.get("group", "")
            for d in self.definitions.get("$defs", {}).values()
            for gvk in d.get("x-kubernetes-group-version-kind", [])
        )
        self._registry: Any = None
        self._validators: dict[tuple[str, str, str], Validator | None] = {}
        self._schemas: dict[tuple[str, str, str], dict[str, Any]] = {}

    def validator(self, group: str, version: str, kind: str) -> Validator | None:
        key = (group, version, kind)
        if key not in self._validators:
            self._validators[key] = self._compile(group, version, kind)
        return self._validators[key]

    def _compile(self, group: str, version: str, kind: str) -> Validator | None:
        prefix = f"{group.split('.')[0]}-" if group else ""
        path = self.folder / f"{kind.lower()}-{prefix}{version}.json"
        if not path.is_file():
            return None
        schema = json.loads(path.read_text())
        gvks = schema.get("x-kubernetes-group-version-kind") or []
        if not any((g.get("group", ""), g.get("version"), g.get("kind")) == key
                   for g in gvks for key in [(group, version, kind)]):
            return None  # same file name, different group (e.g. a CRD group named like a built-in)
        if self._registry is None:
            self._registry = make_registry([(_DEFINITIONS_URI, self.definitions)])
        self._schemas[(group, version, kind)] = schema
        return compile_validator(schema, draft=2020, registry=self._registry)

    def fields_at(self, group: str, version: str, kind: str, path: tuple[str | int, ...]) -> list[str]:
        """Property names the schema allows at ``path`` (for "did you mean" hints)."""
        node: Any = self._schemas.get((group, version, kind))
        for part in (*path, None):
            node = self._deref(node)
            if part is None or not isinstance(node, dict):
                break
            if isinstance(part, int):
                node = node.get("items")
            else:
                node = (node.get("properties") or {}).get(part) or node.get("additionalProperties")
        return sorted((node or {}).get("properties") or {}) if isinstance(node, dict) else []

    def _deref(self, node: Any) -> Any:
        while isinstance(node, dict):
            ref = node.get("$ref") or next((s.get("$ref") for s in node.get("allOf") or [] if isinstance(s, dict)), None)
            if not isinstance(ref, str) or "#/$defs/" not in ref:
                return node
            node = self.definitions.get("$defs", {}).get(ref.rsplit("/", 1)[-1])
        return node


@functools.lru_cache(maxsize=None)
def version_schemas(version: tuple[int, int]) -> _VersionSchemas:
    return _VersionSchemas(version)


@functools.lru_cache(maxsize=None)
def is_builtin_group(group: str, version: tuple[int, int]) -> bool:
    """A group Kubernetes itself serves at ``version`` or at the newest bundled version."""
    if group == "":
        return True
    newest = bundled_versions()[-1]
    return group in version_schemas(version).groups or group in version_schemas(newest).groups


def split_api_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version

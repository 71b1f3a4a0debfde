"""Loading CRDs from a directory: every file layout, lazily, with clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from compiler.diagnostics import UsageError
from compiler.model.manifest import Manifest
from compiler.verify import CrdLoadError, CrdRegistry, verify


def crd(group: str, kind: str, *, plural: str | None = None) -> dict:
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {"n": {"type": "integer"}}}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural or kind.lower() + 's'}.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"kind": kind, "plural": plural or kind.lower() + "s", "singular": kind.lower()},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}]},
            "status": {"acceptedNames": {"kind": "Decoy", "plural": "decoys"}}}


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    (tmp_path / "a").mkdir()
    multi = [crd("a.example.com", "Alpha"), {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
             crd("a.example.com", "Beta")]
    (tmp_path / "a" / "multi.yaml").write_text("# leading comment\n" + yaml.safe_dump_all(multi))
    listing = {"apiVersion": "v1", "kind": "List", "items": [crd("b.example.com", "Gamma")]}
    (tmp_path / "a" / "export.yml").write_text(yaml.safe_dump(listing))
    (tmp_path / "delta.json").write_text(json.dumps(crd("c.example.com", "Delta")))
    (tmp_path / "template.yaml").write_text("kind: CustomResourceDefinition\nspec: {{ .Values.x }}\n  group: [\n")
    (tmp_path / "values.yaml").write_text("image: {tag: 1}\n")
    (tmp_path / "dup.yaml").write_text(yaml.safe_dump(crd("a.example.com", "Alpha")))
    (tmp_path / "binary.yaml").write_bytes(b"\xff\xfe\x00CustomResourceDefinition")
    (tmp_path / "README.md").write_text("kind: CustomResourceDefinition")
    return tmp_path


def test_loads_every_layout(tree: Path) -> None:
    registry = CrdRegistry.load(tree)
    assert registry.kinds() == [("a.example.com", "Alpha"), ("a.example.com", "Beta"),
                                ("b.example.com", "Gamma"), ("c.example.com", "Delta")]
    assert len(registry) == 4 and ("a.example.com", "Beta") in registry
    assert registry.get("a.example.com", "Decoy") is None  # status.acceptedNames is not the kind
    assert len(registry.duplicates) == 1 and "dup.yaml" in registry.duplicates[0]
    assert any("binary.yaml" in s for s in registry.skipped)
    assert any("template.yaml" in s for s in registry.skipped)


def test_parsing_is_lazy(tree: Path) -> None:
    entry = CrdRegistry.load(tree).get("a.example.com", "Beta")
    assert entry is not None and entry._doc is None
    assert entry.scope == "Namespaced" and entry.served_versions() == ["v1"]
    assert entry._doc is not None and entry.schema("v1") is not None


def test_verify_uses_loaded_crds(tree: Path) -> None:
    registry = CrdRegistry.load(tree)
    ok = {"apiVersion": "a.example.com/v1", "kind": "Beta", "metadata": {"name": "b", "namespace": "n"}, "spec": {"n": 1}}
    bad = {**ok, "spec": {"n": "one"}}
    result = verify([Manifest("c", "x", ok), Manifest("c", "x", bad)], kube_versions={"c": "1.34"}, crds=registry)
    assert [(d.code, d.path) for d in result.diagnostics] == [("VERIFY002", "spec.n")]


def test_broken_lazy_crd_is_reported_at_use(tmp_path: Path) -> None:
    text = yaml.safe_dump(crd("e.example.com", "Eps")) + "  broken: [\n"
    (tmp_path / "eps.yaml").write_text(text)
    registry = CrdRegistry.load(tmp_path)
    assert registry.kinds() == [("e.example.com", "Eps")]
    obj = {"apiVersion": "e.example.com/v1", "kind": "Eps", "metadata": {"name": "e"}}
    result = verify([Manifest("c", "x", obj)], kube_versions={"c": "1.34"}, crds=registry)
    assert [d.code for d in result.diagnostics] == ["VERIFY014"]
    assert "does not parse" in result.diagnostics[0].message


def test_missing_directory_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(CrdLoadError, match="does not exist"):
        CrdRegistry.load(tmp_path / "nope")
    (tmp_path / "file.yaml").write_text("x: 1")
    with pytest.raises(CrdLoadError, match="not a directory"):
        CrdRegistry.load(tmp_path / "file.yaml")
    assert issubclass(CrdLoadError, UsageError)


def test_from_documents_accepts_lists_and_ignores_others() -> None:
    registry = CrdRegistry.from_documents([None, "text", {"kind": "List", "items": [crd("f.example.com", "Phi")]}])
    assert registry.kinds() == [("f.example.com", "Phi")]
    assert "1 CRDs" in repr(registry)

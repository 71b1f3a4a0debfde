"""``gpupolicy import``: the round trip on the demo and the golden cases, the fixture cluster through
the installed CLI, and bad exports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REPO, run_cli
from import_synth import compile_dir, errors, kueue_view, synth_exports

from compiler.catalog import builtin_catalog
from compiler.tools import kube_export
from compiler.tools.cluster_import.cluster import analyse
from compiler.tools.cluster_import.draft import build_draft
from compiler.tools.kube_export import ExportError, load_items

FIX = REPO / "tests" / "fixtures" / "import"
CASES = {"demo": REPO / "policies", **{p.parent.name: p for p in sorted((REPO / "tests" / "golden").glob("*/policies"))}}


@pytest.mark.parametrize("case", sorted(CASES))
def test_round_trip_gives_back_the_same_kueue_objects(case: str, tmp_path: Path) -> None:
    """Import the compiler's own output (nodes from the node contract, the rendered Kueue objects,
    labelled pods): the draft compiles back to the same ClusterQueues, Cohorts and ResourceFlavors."""
    res = compile_dir(REPO, CASES[case])
    if res.policy is None or not res.manifests:
        pytest.skip(f"{case}: the source policy does not compile right now ({[d.code for d in errors(res)]})")
    draft = build_draft([analyse(e, builtin_catalog()) for e in synth_exports(res)])
    for rel, text in draft.files().items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    back = compile_dir(tmp_path, tmp_path / "policies")
    assert back.policy is not None and not errors(back), [f"{d.code} {d.message}" for d in errors(back)]
    assert kueue_view(back) == kueue_view(res)


def _import(tmp_path: Path, *extra: str) -> tuple[int, str, str]:
    out = tmp_path / "draft"
    p = run_cli("import", "--nodes", str(FIX / "nodes.json"), "--pods", str(FIX / "pods.json"),
                "--cluster-policy", str(FIX / "cluster-policy.json"), "--cluster", "prod", "--out", str(out), *extra,
                cwd=tmp_path)
    return p.returncode, p.stdout, p.stderr


def test_import_fixture_cluster(tmp_path: Path) -> None:
    code, out, err = _import(tmp_path, "--kueue", str(FIX / "kueue.json"))
    assert code == 1, err  # the exported quotas exceed the H100s: kept exactly, so KUEUE001 until fixed
    assert "KUEUE001" in err and "Traceback" not in err
    draft = tmp_path / "draft"
    fleet = (draft / "policies" / "fleet.yaml").read_text()
    assert "guessed:" in fleet and "layout: all-1g.10gb" in fleet and "mode: timeslicing" in fleet
    team_b = (draft / "policies" / "teams" / "team-b.yaml").read_text()
    assert "guaranteed: 8\n      borrow: 4\n      lend: 2" in team_b  # quotas kept exactly
    assert "class: l4-ts4" in team_b and "class: a100-80gb-mig-1g.10gb" in team_b
    inv = (draft / "INVENTORY.md").read_text()
    for kind in ("unknown-gpu", "mixed-nodes", "unlabelled-pods", "no-queue", "shared-across-teams",
                 "over-capacity", "not-imported"):
        assert f"**{kind}**" in inv, kind
    assert "NVIDIA-Z100-ULTRA" in inv and "spec.catalog" in inv  # unknown product: label value and how to add it
    assert "nominalQuota 100" in inv  # the CPU quota is listed, not silently dropped
    assert "hf-token" not in inv and "do-not-copy" not in inv


def test_import_draft_validates_when_quotas_fit(tmp_path: Path) -> None:
    kueue = json.loads((FIX / "kueue.json").read_text())
    for obj in kueue["items"]:
        if obj["metadata"]["name"] == "team-a" and obj["kind"] == "ClusterQueue":
            obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"][1]["nominalQuota"] = 8
    (tmp_path / "kueue.json").write_text(json.dumps(kueue))
    code, out, err = _import(tmp_path, "--kueue", str(tmp_path / "kueue.json"))
    assert code == 0, err
    assert "3 pool(s), 3 team(s)" in out
    assert run_cli("validate", "--root", str(tmp_path / "draft"), cwd=tmp_path).returncode == 0


@pytest.mark.parametrize("content, needle", [
    ("{not json", "not valid JSON"),
    ('{"apiVersion": "v1", "kind": "List", "items": [{"kind": "Node", "metadata": {"name": "a"}}', "truncated"),
    ('{"apiVersion": "v1", "kind": "List", "items": [{"kind": "Pod", "metadata": {"name": "p", "namespace": "x"}}]}',
     "Pod x/p (item 0) is a Pod, expected Node"),
    ("", "empty file"),
    ('{"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n1", "labels": ["x"]}}]}',
     "Node n1 (item 0) is malformed"),
])
def test_bad_node_export_names_file_and_object(tmp_path: Path, content: str, needle: str) -> None:
    bad = tmp_path / "nodes.json"
    bad.write_text(content)
    p = run_cli("import", "--nodes", str(bad), "--out", str(tmp_path / "d"), cwd=tmp_path)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert str(bad) in p.stderr and needle in p.stderr, p.stderr


def test_streaming_reader_across_chunk_boundaries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kube_export, "CHUNK", 7)
    items = [{"kind": "Node", "metadata": {"name": f"n{i}", "labels": {"é": "ü" * i}}, "n": 12345678} for i in range(20)]
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps({"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"x": 1}}))
    assert load_items(path, ["Node"]) == items
    path.write_text(json.dumps(items))
    assert load_items(path, ["Node"]) == items
    path.write_text(json.dumps(items)[:-3])
    with pytest.raises(ExportError, match="truncated"):
        load_items(path, ["Node"])


def test_import_from_directory_of_clusters(tmp_path: Path) -> None:
    """The demo's two clusters exported into --from DIR/<cluster>/*.json, imported through the CLI."""
    res = compile_dir(REPO, REPO / "policies")
    assert res.policy is not None
    exports = tmp_path / "exports"
    for e in synth_exports(res):
        d = exports / e.name
        d.mkdir(parents=True)
        for name, items in (("nodes", e.nodes), ("pods", e.pods), ("kueue", e.kueue)):
            (d / f"{name}.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    p = run_cli("import", "--from", str(exports), "--name", "acme", "--out", str(tmp_path / "draft"), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "2 cluster(s), 6 pool(s), 5 team(s)" in p.stdout
    teams = sorted(f.name for f in (tmp_path / "draft" / "policies" / "teams").iterdir())
    assert teams == ["interns.yaml", "nlp.yaml", "recsys.yaml", "search.yaml", "vision.yaml"]
    inv = (tmp_path / "draft" / "INVENTORY.md").read_text()
    assert "serving-namespace" in inv and "the draft validates" in inv

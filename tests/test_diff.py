"""``gpupolicy diff --base``: per-team deltas and the flags for changes a sync cannot apply in place."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REPO, run_cli

from compiler.lower.common import obj
from compiler.model.manifest import Manifest
from compiler.tools.diff_flags import find_flags
from compiler.tools.diff_render import MARKER

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env={**os.environ, **GIT_ENV})


def edit(root: Path, rel: str, old: str, new: str) -> None:
    path = root / "policies" / rel
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """Two commits: the demo, then vision's budget raised and the interns team (and its queue) removed."""
    root = tmp_path / "repo"
    shutil.copytree(REPO / "policies", root / "policies")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "demo")
    edit(root, "teams/vision.yaml", "guaranteed: 8\n      borrow: 8", "guaranteed: 12\n      borrow: unlimited")
    (root / "policies" / "teams" / "interns.yaml").unlink()
    git(root, "commit", "-qam", "raise vision, retire interns")
    return root


def test_per_team_deltas_and_flags(repo: Path) -> None:
    p = run_cli("diff", "--base", "HEAD~1", "--format", "json", cwd=repo)
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    teams = {t["team"]: t for t in report["teams"]}
    assert set(teams) == {"vision", "interns"}
    [vision] = teams["vision"]["budgets"]
    assert (vision["cluster"], vision["class"]) == ("onprem", "a100-80gb-mig-3g.40gb")
    assert vision["before"] == {"guaranteed": 8, "borrowable": 8, "lendable": 4}
    assert vision["after"] == {"guaranteed": 12, "borrowable": None, "lendable": 4}
    assert teams["interns"]["status"] == "removed"
    assert teams["interns"]["budgets"][0]["after"] is None
    flags = {(f["kind"], f["cluster"], f["obj"]) for f in report["flags"]}
    assert ("destructive", "cloud", "Namespace interns-sandbox") in flags
    assert ("in-use", "cloud", "ClusterQueue interns") in flags
    assert "out/cloud/kueue/localqueue.interns-sandbox.interns.yaml" in report["removed"]
    modified = {m["path"]: m["diff"] for m in report["modified"]}
    cq = modified["out/onprem/kueue/clusterqueue._.vision.yaml"]
    assert "-        nominalQuota: 8" in cq and "+        nominalQuota: 12" in cq
    assert "-        borrowingLimit: 8" in cq  # unlimited: the field goes away


def test_markdown_for_a_pr_comment(repo: Path) -> None:
    edit(repo, "teams/nlp.yaml", "isolation: exclusive", "isolation: isolated")  # uncommitted: the work tree counts
    p = run_cli("diff", "--base", "HEAD~1", cwd=repo)
    assert p.returncode == 0, p.stderr
    md = p.stdout
    assert md.startswith(MARKER)
    assert "| onprem | a100-80gb-mig-3g.40gb | 8 → 12 (+4) | 8 → unlimited | 4 |" in md
    assert "- isolation: `exclusive` → `isolated`" in md
    assert "### ⚠️ Changes a sync cannot apply in place" in md and "kueue.x-k8s.io/resource-in-use" in md
    assert "```diff" in md
    text = run_cli("diff", "--base", "HEAD~1", "--format", "text", cwd=repo).stdout
    assert "! destructive: cloud: Namespace interns-sandbox" in text


def test_no_change(repo: Path) -> None:
    p = run_cli("diff", "--base", "HEAD", cwd=repo)
    assert p.returncode == 0 and "No change to the rendered output." in p.stdout


def test_base_without_policies(repo: Path) -> None:
    git(repo, "checkout", "-q", "--orphan", "empty")
    git(repo, "rm", "-rq", "--cached", "policies")
    git(repo, "commit", "-q", "--allow-empty", "-m", "empty")
    git(repo, "checkout", "-q", "-f", "main")
    p = run_cli("diff", "--base", "empty", "--format", "json", cwd=repo)
    report = json.loads(p.stdout)
    assert "no policy directory" in report["base_note"] and not report["removed"] and report["added"]


def test_usage_errors(repo: Path, tmp_path: Path) -> None:
    assert run_cli("diff", "--base", "no-such-ref", cwd=repo).returncode == 2
    plain = tmp_path / "plain"
    shutil.copytree(REPO / "policies", plain / "policies")
    p = run_cli("diff", "--base", "HEAD", cwd=plain, env={"GIT_CEILING_DIRECTORIES": str(tmp_path)})
    assert p.returncode == 2 and "git" in p.stderr


def test_broken_work_tree_exits_1(repo: Path) -> None:
    edit(repo, "teams/vision.yaml", "department: research", "department: reserch")
    p = run_cli("diff", "--base", "HEAD", cwd=repo)
    assert p.returncode == 1 and "FLEET002" in p.stderr


def _kueue(kind: str, name: str, spec: dict, namespace: str | None = None, component: str = "kueue") -> Manifest:  # type: ignore[type-arg]
    o = obj("kueue.x-k8s.io/v1beta2", kind, name, namespace=namespace)
    o["spec"] = spec
    return Manifest("onprem", component, o)


def _cq(name: str, flavors: list[str]) -> Manifest:
    groups = [{"coveredResources": ["nvidia.com/gpu"],
               "flavors": [{"name": f, "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}]} for f in flavors]}]
    return _kueue("ClusterQueue", name, {"cohortName": "ai", "resourceGroups": groups})


def _tree(*ms: Manifest) -> dict[str, Manifest]:
    return {m.relpath: m for m in ms}


def test_flags_local_queue_repointed_and_flavor_in_use() -> None:
    base = _tree(_kueue("LocalQueue", "vision", {"clusterQueue": "vision"}, "vision-train"),
                 _cq("vision", ["h100", "a100"]), _kueue("ResourceFlavor", "a100", {}), _kueue("ResourceFlavor", "h100", {}))
    head = _tree(_kueue("LocalQueue", "vision", {"clusterQueue": "research"}, "vision-train"),
                 _cq("vision", ["h100"]), _kueue("ResourceFlavor", "h100", {}))
    flags = {(f.kind, f.obj): f.message for f in find_flags(base, head)}
    msg = flags[("immutable", "LocalQueue vision-train/vision")]
    assert "`spec.clusterQueue` changes from `vision` to `research`" in msg and "Replace=true" in msg
    assert "ClusterQueue vision" in flags[("in-use", "ResourceFlavor a100")]
    # the new LocalQueue names a ClusterQueue the new render lacks
    assert "LocalQueue vision-train/vision" in flags[("dangling", "ClusterQueue research")]


def test_flags_rename_and_move() -> None:
    base = _tree(_cq("vision", ["h100"]), _kueue("ResourceFlavor", "h100", {"nodeLabels": {"pool": "h100"}}),
                 _kueue("AdmissionCheck", "mk", {"controllerName": "kueue.x-k8s.io/multikueue"}))
    head = _tree(_cq("computer-vision", ["h100"]), _kueue("ResourceFlavor", "h100", {"nodeLabels": {"pool": "h100"}}),
                 _kueue("AdmissionCheck", "mk", {"controllerName": "kueue.x-k8s.io/multikueue"}, component="multikueue"))
    flags = {(f.kind, f.obj): f.message for f in find_flags(base, head)}
    assert "ClusterQueue computer-vision" in flags[("rename", "ClusterQueue vision")]
    assert "`kueue` to `multikueue`" in flags[("moved", "AdmissionCheck mk")]

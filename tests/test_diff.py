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
from compiler.tools.diff import DiffReport, Row, TeamDelta
from compiler.tools.diff_flags import Flag, find_flags
from compiler.tools.diff_render import MARKER, MAX_MARKDOWN, render_markdown

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


INTERNS_LEFT_BEHIND = (
    "is no longer rendered, but Argo CD does not delete it (`argocd.argoproj.io/sync-options: Prune=false`): it stays "
    "on the cluster, unmanaged, with everything in it Argo CD does not prune (jobs, workloads, Secrets, volumes); what "
    "gpupolicy rendered in it is pruned (LocalQueue interns, ResourceQuota gpupolicy-reserved-priority, Role "
    "gpupolicy-training, RoleBinding gpupolicy-training); it keeps its labels (`app.kubernetes.io/managed-by=gpupolicy`, "
    "`gpupolicy.dev/team=interns`, `gpupolicy.dev/department=research`, `gpupolicy.dev/purpose=training` and 3 more), "
    "so admission policies and selectors keyed on them still apply to it; its Application shows it OutOfSync until "
    "someone deletes it")


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
    flags = {(f["kind"], f["cluster"], f["obj"]): f["message"] for f in report["flags"]}
    # the Namespace carries Prune=false: Argo CD leaves it (and its labels) on the cluster, it is not deleted
    assert flags[("left-behind", "cloud", "Namespace interns-sandbox")] == INTERNS_LEFT_BEHIND
    assert not [k for k in flags if k[0] == "destructive"]
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
    assert "| left-behind | cloud | `Namespace interns-sandbox` | is no longer rendered, but Argo CD does not delete it" in md
    assert "still apply to it" in md and "destructive" not in md and "deletes every object" not in md
    text = run_cli("diff", "--base", "HEAD~1", "--format", "text", cwd=repo).stdout
    assert f"! left-behind: cloud: Namespace interns-sandbox {INTERNS_LEFT_BEHIND}\n" in text
    assert "destructive" not in text


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
    assert "`spec.clusterQueue` changes from `vision` to `research`" in msg
    # Replace=true alone is a kubectl replace, refused on an immutable field like an update
    assert "sync-options: Force=true,Replace=true` for one sync" in msg
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


KEEP = {"argocd.argoproj.io/sync-options": "Prune=false"}


def _core(kind: str, name: str, namespace: str | None = None, annotations: dict[str, str] | None = None,
          labels: dict[str, str] | None = None) -> Manifest:
    return Manifest("onprem", "namespaces", obj("v1", kind, name, namespace=namespace, labels=labels,
                                                annotations=annotations))


def test_removed_objects_argo_cd_prunes_are_destructive() -> None:
    """No ``Prune=false`` (or another prune option): the removal deletes, and says so."""
    base = _tree(_core("Namespace", "scratch"), _core("PersistentVolumeClaim", "cache", "serving"),
                 _core("Namespace", "confirm", annotations={"argocd.argoproj.io/sync-options": "Prune=confirm"}))
    flags = {(f.kind, f.obj): f.message for f in find_flags(base, {})}
    assert flags == {
        ("destructive", "Namespace scratch"): "is removed: deleting a Namespace deletes every object in it (jobs, "
                                              "workloads, model-cache volumes)",
        ("destructive", "Namespace confirm"): "is removed: deleting a Namespace deletes every object in it (jobs, "
                                              "workloads, model-cache volumes)",
        ("destructive", "PersistentVolumeClaim serving/cache"): "is removed: its volume and data may be deleted",
    }


def test_removed_objects_argo_cd_never_prunes_are_left_behind() -> None:
    """``Prune=false`` read from each object, whatever its kind and wherever it sits in the option list."""
    base = _tree(
        _core("Namespace", "search-eval", annotations=KEEP, labels={"gpupolicy.dev/team": "search"}),
        _kueue("LocalQueue", "search", {"clusterQueue": "search"}, "search-eval"),
        _core("PersistentVolumeClaim", "chat-model-cache", "search-eval", annotations=KEEP),  # left behind itself
        _core("ConfigMap", "notes", "elsewhere",
              annotations={"argocd.argoproj.io/sync-options": "ServerSideApply=true, Prune=false"}),
    )
    flags = {(f.kind, f.obj): f.message for f in find_flags(base, {})}
    assert set(flags) == {("left-behind", "Namespace search-eval"),
                          ("left-behind", "PersistentVolumeClaim search-eval/chat-model-cache"),
                          ("left-behind", "ConfigMap elsewhere/notes")}
    ns = flags[("left-behind", "Namespace search-eval")]
    assert ns.startswith("is no longer rendered, but Argo CD does not delete it "
                         "(`argocd.argoproj.io/sync-options: Prune=false`): it stays on the cluster, unmanaged, "
                         "with everything in it Argo CD does not prune")
    assert "what gpupolicy rendered in it is pruned (LocalQueue search)" in ns  # not the PVC: it stays
    assert "it keeps its labels (`app.kubernetes.io/managed-by=gpupolicy`, `gpupolicy.dev/team=search`)" in ns
    assert "admission policies and selectors keyed on them still apply to it" in ns
    assert "deletes every object" not in ns
    pvc = flags[("left-behind", "PersistentVolumeClaim search-eval/chat-model-cache")]
    assert "unmanaged, with its volume and data;" in pvc and "pruned (" not in pvc
    assert flags[("left-behind", "ConfigMap elsewhere/notes")].startswith(
        "is no longer rendered, but Argo CD does not delete it (`argocd.argoproj.io/sync-options: Prune=false`): "
        "it stays on the cluster, unmanaged; it keeps its labels")


def test_a_renamed_namespace_leaves_the_old_one_behind() -> None:
    labels = {"gpupolicy.dev/team": "search", "gpupolicy.dev/purpose": "training"}
    base = _tree(_core("Namespace", "search-eval", annotations=KEEP, labels=labels))
    head = _tree(_core("Namespace", "search-evals", annotations=KEEP, labels=labels))
    flags = {(f.kind, f.obj): f.message for f in find_flags(base, head)}
    assert set(flags) == {("left-behind", "Namespace search-eval"), ("rename", "Namespace search-eval")}
    assert flags[("rename", "Namespace search-eval")].startswith(
        "looks renamed to `Namespace search-evals`: that is a create, and the old one is left behind (Prune=false)")


def test_fleet_defaults_change_is_counted(repo: Path) -> None:
    """A one-line change of the fleet's default budget was reported as "0 fleet change(s)"."""
    edit(repo, "fleet.yaml", "      guaranteed: 0\n      lend: unlimited", "      guaranteed: 0\n      lend: 0")
    p = run_cli("diff", "--base", "HEAD", cwd=repo)
    assert p.returncode == 0, p.stderr
    assert "· 1 fleet change(s) ·" in p.stdout
    assert "| defaults.budget.lend | `unlimited` | `0` |" in p.stdout
    report = json.loads(run_cli("diff", "--base", "HEAD", "--format", "json", cwd=repo).stdout)
    assert report["fleet"] == [{"what": "defaults.budget.lend", "before": "unlimited", "after": 0}]


def _big_report(teams: int, modified: int) -> DiffReport:
    """A fleet-wide change at scale: every team loses lendable capacity on six clusters."""
    deltas = [TeamDelta(f"team-{i:04d}", budgets=[(f"cluster-{c:02d}", "a100-80gb-mig-3g.40gb", Row(8, None, 8),
                                                   Row(8, None, 0)) for c in range(6)]) for i in range(teams)]
    diff = "\n".join(["--- a/x", "+++ b/x", "@@ -1,3 +1,3 @@", *(f"-        lendingLimit: {n}" for n in range(20))])
    return DiffReport(base="origin/main", base_note=None, teams=deltas, fleet=[("defaults.budget.lend", "unlimited", 0)],
                      added=[], removed=[], modified=[(f"out/c/kueue/clusterqueue.{i}.yaml", diff) for i in range(modified)],
                      flags=[Flag("immutable", "cluster-00", f"LocalQueue ns/q{i}", "`spec.clusterQueue` changes")
                             for i in range(40)])


@pytest.mark.parametrize("teams", [250, 2_000])
def test_pr_comment_fits_the_budget_summary_and_team_table_first(teams: int) -> None:
    md = render_markdown(_big_report(teams, modified=teams * 4))
    assert len(md.encode()) <= MAX_MARKDOWN
    assert f"**{teams} team(s) affected · 1 fleet change(s) · {teams * 4} manifest(s) changed" in md
    assert f"lendable −{teams * 6 * 8:,}" in md  # the net change over every team
    rows = [line for line in md.splitlines() if line.startswith("| team-")]
    assert rows[0] == "| team-0000 | changed | 6 | 0 | 0 | −48 |  |"
    if teams == 250:
        assert len(rows) == 250  # the compact per-team table is complete
    else:  # even one row per team does not fit: the rows left out are counted, and where to look is said
        assert f"… {teams - len(rows):,} more team row(s) left out" in md and len(rows) > 500
        assert f"{teams - len(rows):,} of {teams:,} team row(s)" in md
    assert "**Left out of this comment**" in md and "`gpupolicy diff --base origin/main --max-bytes 0`" in md
    assert f"{teams * 4:,} of {teams * 4:,} modified file diff(s)" in md or "more modified file diff(s)" in md
    assert md.count("<details>") == md.count("</details>")
    assert md.count("```diff") * 2 == md.count("```") - md.count("```diff")  # every diff fence closed
    # no budget: everything, nothing said to be left out
    whole = render_markdown(_big_report(teams, modified=teams * 4), None)
    assert "left out" not in whole and whole.count("<details><summary>modified") == teams * 4


def test_pr_comment_under_budget_is_unchanged_by_the_budget(repo: Path) -> None:
    p = run_cli("diff", "--base", "HEAD~1", cwd=repo)
    whole = run_cli("diff", "--base", "HEAD~1", "--max-bytes", "0", cwd=repo)
    assert p.stdout == whole.stdout and "left out" not in p.stdout
    small = run_cli("diff", "--base", "HEAD~1", "--max-bytes", "2500", cwd=repo).stdout
    assert len(small.encode()) <= 2500 and "**Left out of this comment**" in small
    assert "| vision | changed | 1 | +4 | 0, 1 → unlimited | 0 |  |" in small  # the team table comes first
    assert run_cli("diff", "--base", "HEAD~1", "--max-bytes", "-1", cwd=repo).returncode == 2


def _comment_body_script() -> str:
    """The shell of gpupolicy-comment.yml that turns the artifact into the comment body."""
    import yaml

    wf = yaml.safe_load((REPO / ".github" / "workflows" / "gpupolicy-comment.yml").read_text())
    run = next(s["run"] for s in wf["jobs"]["comment"]["steps"] if "body=" in s.get("run", ""))
    start, end = run.index("{\n  printf '<!--"), run.index('} > "$body"')
    return 'dir="$1"\nRUN_URL=https://github.com/o/r/actions/runs/1\n' + run[start:end] + "}\n"


def test_comment_workflow_cuts_only_at_a_block_boundary(tmp_path: Path) -> None:
    script = tmp_path / "body.sh"
    script.write_text(_comment_body_script())
    (tmp_path / "d").mkdir()
    whole = render_markdown(_big_report(600, modified=400), None)  # no budget: as an older compiler would send
    assert len(whole.encode()) > 200_000
    (tmp_path / "d" / "gpupolicy-diff.md").write_text(whole)
    body = subprocess.run(["bash", str(script), str(tmp_path / "d")], capture_output=True, text=True, check=True).stdout
    assert len(body.encode()) <= 60_500 and body.startswith(MARKER + "\n") and body.count(MARKER) == 1
    assert "cut at a block boundary" in body and "[the workflow run](https://github.com/o/r/actions/runs/1)" in body
    assert body.count("<details>") == body.count("</details>") and body.count("```") % 2 == 0
    kept = body.split("\n---\n**This comment was cut")[0]
    assert whole.startswith(kept.rstrip("\n"))  # a prefix, ending at a line
    # within the budget: posted as rendered, plus the link
    (tmp_path / "d" / "gpupolicy-diff.md").write_text(small := render_markdown(_big_report(250, modified=1000)))
    body = subprocess.run(["bash", str(script), str(tmp_path / "d")], capture_output=True, text=True, check=True).stdout
    assert body.startswith(small) and "cut at a block boundary" not in body


def _pvc(size: str, storage_class: str = "fast-nvme") -> Manifest:
    o = obj("v1", "PersistentVolumeClaim", "chat-model-cache", namespace="nlp-serving")
    o["spec"] = {"accessModes": ["ReadWriteOnce"], "storageClassName": storage_class,
                 "resources": {"requests": {"storage": size}}}
    return Manifest("onprem", "serving", o)


def test_a_claim_that_shrinks_cannot_sync() -> None:
    """The API server refuses to lower a PersistentVolumeClaim's storage request (a reviewer's
    400Gi -> 300Gi passed the diff silently); growing it is an update (where the class allows
    expansion), and a unit change that keeps the size is no change."""
    flags = find_flags(_tree(_pvc("400Gi")), _tree(_pvc("300Gi")))
    [f] = [f for f in flags if f.kind == "immutable"]
    assert f.obj == "PersistentVolumeClaim nlp-serving/chat-model-cache"
    assert "`spec.resources.requests.storage` shrinks from `400Gi` to `300Gi`" in f.message
    assert not [f for f in find_flags(_tree(_pvc("300Gi")), _tree(_pvc("400Gi"))) if f.kind == "immutable"]
    assert not [f for f in find_flags(_tree(_pvc("1Ti")), _tree(_pvc("1024Gi"))) if f.kind == "immutable"]

"""Tenants cannot raise their own priority: tiers per team, the rules that guard them, the rendered
admission policies evaluated (compiler.verify.vap, the project's CEL engine) on realistic requests
through each path in Deny mode, and the ResourceQuota wall."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
from conftest import REPO
from helpers import copy_demo, find, line_of, mutate, policy_at
from test_admission import load

from compiler.lower import lower
from compiler.lower.admission import lower_admission
from compiler.lower.admission_priority import (
    PRIORITY_POLICY,
    QUOTA_NAME,
    SERVING_PRIORITY_POLICY,
    lower_priority_admission,
    lower_priority_quota,
)
from compiler.lower.namespaces import lower_team_namespaces
from compiler.lower.serving import lower_serving, lower_serving_priority
from compiler.policy.graph import Policy
from compiler.policy.priorities import team_priorities
from compiler.report.policy_report import render_markdown
from compiler.tools.explain import explain_team
from compiler.verify.vap import Decision, admit

TIER = "kueue.x-k8s.io/priority-class"
RECSYS = {"gpupolicy.dev/team": "recsys", "gpupolicy.dev/model": "two-tower", "gpupolicy.dev/data-class": "internal",
          "kueue.x-k8s.io/queue-name": "recsys", TIER: "standard"}


@pytest.fixture(scope="module")
def demo() -> Policy:
    return load(REPO)


@pytest.fixture(scope="module")
def vaps(demo: Policy) -> list[dict[str, Any]]:
    """Every admission policy of the onprem cluster, so each request meets all of them."""
    return [m.obj for m in lower_admission(demo, "onprem") + lower_priority_admission(demo, "onprem")]


@pytest.fixture(scope="module")
def namespaces(demo: Policy) -> dict[str, dict[str, Any]]:
    out = {m.obj["metadata"]["name"]: m.obj for t in demo.teams for m in lower_team_namespaces(demo, t, "onprem")}
    out["scratch"] = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "scratch"}}
    return out


def pod_spec(gpu: bool = True, priority_class: str | None = None) -> dict[str, Any]:
    limits: dict[str, Any] = {"memory": "64Gi", **({"nvidia.com/gpu": 1} if gpu else {})}
    spec: dict[str, Any] = {"restartPolicy": "Never", "containers": [
        {"name": "main", "image": "pytorch/pytorch:2.4.0", "resources": {"requests": {"cpu": "8"}, "limits": limits}}]}
    if priority_class is not None:
        spec["priorityClassName"] = priority_class
    return spec


def _template(labels: dict[str, str], **kw: Any) -> dict[str, Any]:
    return {"metadata": {"labels": {k: v for k, v in labels.items() if k.startswith("gpupolicy.dev/")}},
            "spec": pod_spec(**kw)}


def job(labels: dict[str, str] | None = None, ns: str = "recsys-train", **kw: Any) -> dict[str, Any]:
    labels = dict(RECSYS if labels is None else labels)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "namespace": ns, "labels": labels},
            "spec": {"suspend": True, "template": _template(labels, **kw)}}


def jobset(labels: dict[str, str] | None = None, **kw: Any) -> dict[str, Any]:
    labels = dict(RECSYS if labels is None else labels)
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "train", "namespace": "recsys-train", "labels": labels},
            "spec": {"replicatedJobs": [{"name": "workers", "replicas": 2,
                                         "template": {"spec": {"template": _template(labels, **kw)}}}]}}


def pytorchjob(labels: dict[str, str] | None = None, **kw: Any) -> dict[str, Any]:
    labels = dict(RECSYS if labels is None else labels)
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": "train", "namespace": "recsys-train", "labels": labels},
            "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": _template(labels, **kw)},
                                             "Worker": {"replicas": 3, "template": _template(labels, **kw)}}}}


def pod(ns: str = "recsys-train", labels: dict[str, str] | None = None, owner: dict[str, Any] | None = None,
        **kw: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "namespace": ns, "labels": dict(RECSYS if labels is None else labels)}
    if owner:
        meta["ownerReferences"] = [owner]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec(**kw)}


def deployment(ns: str, priority_class: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": ns},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": pod_spec(gpu=False, priority_class=priority_class)}}}


def run(vaps: list[dict[str, Any]], namespaces: dict[str, dict[str, Any]], obj: dict[str, Any], **kw: Any) -> Decision:
    return admit(vaps, obj, namespace=namespaces[obj["metadata"]["namespace"]], **kw)


def denied_by(d: Decision, policy: str, *fragments: str) -> None:
    assert not d.allowed, "request was admitted"
    mine = [v.message for o in d.outcomes if o.policy == policy and o.denies for v in o.violations]
    assert mine, f"{policy} did not deny: {d.denials}"
    for f in fragments:
        assert any(f in m for m in mine), f"{f!r} not in {mine}"


# ---------- the tiers each team may use ----------

def test_team_tiers_default_to_its_tier_and_below(demo: Policy) -> None:
    got = {t.name: team_priorities(demo, t) for t in demo.teams}
    assert got["nlp"].allowed == ("production", "standard", "preemptible") and got["nlp"].tier == "production"
    assert got["recsys"].allowed == ("standard", "preemptible")
    assert (got["recsys"].tier, got["recsys"].tier_origin) == ("standard", "fleet defaults.priority")
    assert got["interns"].allowed == ("preemptible",)


def test_explicit_list_and_reserved_tiers(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    mutate(root, "teams/recsys.yaml", "  dataClasses: [internal]\n",
           "  dataClasses: [internal]\n  allowedPriorities: [preemptible]\n")
    policy = load(root)
    recsys = team_priorities(policy, policy.team("recsys"))  # type: ignore[arg-type]
    assert recsys.allowed == ("preemptible",) and recsys.allowed_origin == "allowedPriorities"
    assert recsys.tier == "preemptible"  # the fleet default (standard) is not in its list
    ns = next(m.obj for m in lower_team_namespaces(policy, policy.team("recsys"), "onprem"))  # type: ignore[arg-type]
    labels = ns["metadata"]["labels"]
    assert labels["gpupolicy.dev/priority"] == "preemptible"
    assert [k for k in labels if k.startswith("priority.gpupolicy.dev/")] == ["priority.gpupolicy.dev/preemptible"]


def test_a_lower_tier_reserved_for_others_is_left_out(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    mutate(root, "fleet.yaml", "    - name: standard\n      value: 100\n",
           "    - name: standard\n      value: 100\n      reservedFor: [search]\n")
    policy = load(root)
    nlp = team_priorities(policy, policy.team("nlp"))  # type: ignore[arg-type]
    assert nlp.allowed == ("production", "preemptible")
    assert nlp.reserved_skipped(policy) == ["standard"]


# ---------- rules ----------

def test_adm007_a_team_claims_a_tier_reserved_for_another(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    mutate(root, "teams/recsys.yaml", "  dataClasses: [internal]\n", "  dataClasses: [internal]\n  priority: production\n")
    d = find(policy_at(root)[1], "ADM007")
    assert d.location is not None and d.location.file.endswith("teams/recsys.yaml")
    assert d.location.line == line_of(root, "teams/recsys.yaml", "priority: production")
    assert "reserves for nlp" in d.message and "reservedFor" in (d.hint or "")


def test_adm007_through_an_explicit_list(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    mutate(root, "teams/recsys.yaml", "  dataClasses: [internal]\n",
           "  dataClasses: [internal]\n  allowedPriorities:\n    - standard\n    - production\n")
    diags = [d for d in policy_at(root)[1] if d.code == "ADM007"]
    assert len(diags) == 1 and diags[0].location is not None
    assert diags[0].location.line == line_of(root, "teams/recsys.yaml", "- production")


def test_adm007_passes_for_the_team_the_tier_is_reserved_for(demo: Policy) -> None:
    _, diags = policy_at(REPO)
    assert not [d for d in diags if d.code in ("ADM007", "ADM008", "ADM009")], diags


@pytest.mark.parametrize("name", ["gpupolicy-serving", "system-node-critical"])
def test_adm008_a_tier_named_like_a_class_above_serving(tmp_path: Path, name: str) -> None:
    root = copy_demo(tmp_path)
    mutate(root, "fleet.yaml", "    - name: preemptible\n", f"    - name: {name}\n")
    mutate(root, "teams/interns.yaml", "priority: preemptible", f"priority: {name}")
    d = find(policy_at(root)[1], "ADM008")
    assert d.location is not None and d.location.line == line_of(root, "fleet.yaml", f"- name: {name}")


def test_a_tier_at_or_above_serving_is_serve013(tmp_path: Path) -> None:
    """The value side of "outrank the serving class": no tier reaches the serving PriorityClass."""
    root = copy_demo(tmp_path)
    mutate(root, "fleet.yaml", "    - name: production\n      value: 1000\n", "    - name: production\n      value: 1000000\n")
    d = find(policy_at(root)[1], "SERVE013")
    assert "production" in d.message


def test_adm009_own_tier_outside_its_list(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    mutate(root, "teams/interns.yaml", "  priority: preemptible\n",
           "  priority: preemptible\n  allowedPriorities: [standard]\n")
    d = find(policy_at(root)[1], "ADM009")
    assert d.location is not None and d.location.line == line_of(root, "teams/interns.yaml", "priority: preemptible")


def test_adm009_a_team_left_with_no_tier(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    for tier in ("standard", "preemptible"):
        mutate(root, "fleet.yaml", f"    - name: {tier}\n", f"    - name: {tier}\n      reservedFor: [nlp, interns]\n")
    policy, diags = policy_at(root)
    assert policy is not None
    recsys = team_priorities(policy, policy.team("recsys"))  # type: ignore[arg-type]
    assert recsys.allowed == () and recsys.tier is None
    d = [d for d in diags if d.code == "ADM009"]
    assert d and all("may use no priority tier" in x.message for x in d)
    assert {x.location.file.rsplit("/", 1)[-1] for x in d if x.location} == {"recsys.yaml", "vision.yaml"}


def test_fleet_default_reserved_for_others_gives_way(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    mutate(root, "fleet.yaml", "    - name: standard\n", "    - name: standard\n      reservedFor: [nlp]\n")
    policy = load(root)
    vision = team_priorities(policy, policy.team("vision"))  # type: ignore[arg-type]
    assert (vision.tier, vision.allowed) == ("preemptible", ("preemptible",))
    assert vision.tier_origin == "fleet defaults.priority, next tier it may use"


def test_unknown_tier_in_allowed_priorities_is_fleet002(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    mutate(root, "teams/interns.yaml", "  priority: preemptible\n",
           "  priority: preemptible\n  allowedPriorities: [preemptible, urgent]\n")
    d = find(policy_at(root)[1], "FLEET002")
    assert "urgent" in d.message and d.location is not None
    assert d.location.line == line_of(root, "teams/interns.yaml", "allowedPriorities")


# ---------- admission, through each path, in Deny mode ----------

def test_bindings_deny(vaps: list[dict[str, Any]]) -> None:
    actions = {o["metadata"]["name"]: o["spec"]["validationActions"]
               for o in vaps if o["kind"] == "ValidatingAdmissionPolicyBinding"}
    assert actions[PRIORITY_POLICY] == actions[SERVING_PRIORITY_POLICY] == ["Deny", "Audit"]


def test_compliant_jobs_are_admitted(vaps, namespaces) -> None:
    for obj in (job(), jobset(), pytorchjob(), job({**RECSYS, TIER: "preemptible"})):
        d = run(vaps, namespaces, obj)
        assert d.allowed, (obj["kind"], d.denials)
    nlp = {**RECSYS, "gpupolicy.dev/team": "nlp", "gpupolicy.dev/data-class": "pii",
           "kueue.x-k8s.io/queue-name": "nlp", TIER: "production"}
    assert run(vaps, namespaces, job(nlp, ns="nlp-train")).allowed


# path 1: the Kueue label
@pytest.mark.parametrize("build", [job, jobset, pytorchjob])
def test_label_naming_a_tier_the_team_may_not_use_is_denied(vaps, namespaces, build) -> None:
    d = run(vaps, namespaces, build({**RECSYS, TIER: "production"}))
    denied_by(d, PRIORITY_POLICY, "names priority tier production, which team recsys may not use",
              f"set {TIER}: standard")


def test_label_naming_an_undeclared_tier_is_denied(vaps, namespaces) -> None:
    denied_by(run(vaps, namespaces, job({**RECSYS, TIER: "urgent"})), PRIORITY_POLICY, "names priority tier urgent")


def test_relabelling_a_job_up_is_denied_and_old_jobs_stay_updatable(vaps, namespaces) -> None:
    old = job()
    up = copy.deepcopy(old)
    up["metadata"]["labels"][TIER] = "production"
    denied_by(run(vaps, namespaces, up, old=old, operation="UPDATE"), PRIORITY_POLICY, "production")
    # an object that predates the policy: Kueue unsuspending it is not a priority change
    legacy = job({**RECSYS, TIER: "production"})
    resumed = copy.deepcopy(legacy)
    resumed["spec"]["suspend"] = False
    d = run(vaps, namespaces, resumed, old=legacy, operation="UPDATE", user="system:serviceaccount:kueue-system:kueue")
    assert d.allowed, d.denials


def test_gpu_job_without_a_tier_is_denied_with_its_default(vaps, namespaces) -> None:
    labels = {k: v for k, v in RECSYS.items() if k != TIER}
    d = run(vaps, namespaces, job(labels))
    denied_by(d, PRIORITY_POLICY, "GPU Job in namespace recsys-train names no priority tier",
              f"add label {TIER}: standard")
    # CPU-only work needs no tier (Kueue's GPU quota does not rank it)
    assert run(vaps, namespaces, job(labels, gpu=False)).allowed


# path 2: priorityClassName in pod templates
@pytest.mark.parametrize("build", [job, jobset, pytorchjob])
def test_template_naming_the_serving_class_is_denied(vaps, namespaces, build) -> None:
    d = run(vaps, namespaces, build(priority_class="gpupolicy-serving"))
    denied_by(d, SERVING_PRIORITY_POLICY, "names PriorityClass gpupolicy-serving, which is reserved")


@pytest.mark.parametrize("cls", ["system-node-critical", "production", "high-priority"])
def test_template_naming_another_class_is_denied(vaps, namespaces, cls: str) -> None:
    d = run(vaps, namespaces, job(priority_class=cls))
    denied_by(d, PRIORITY_POLICY, f"sets priorityClassName {cls}, which team recsys may not use")


def test_template_naming_an_allowed_tier_is_admitted(vaps, namespaces) -> None:
    assert run(vaps, namespaces, job(priority_class="standard")).allowed


def test_job_without_label_but_serving_template_is_denied(vaps, namespaces) -> None:
    """The issue's exploit: no Kueue label, serving class on the template => Kueue priority 1,000,000."""
    labels = {k: v for k, v in RECSYS.items() if k != TIER}
    d = run(vaps, namespaces, job(labels, priority_class="gpupolicy-serving"))
    denied_by(d, SERVING_PRIORITY_POLICY, "gpupolicy-serving")
    denied_by(d, PRIORITY_POLICY, "names no priority tier")


# path 3: bare Pods (and pods of controllers Kueue does not manage)
def test_bare_pod_naming_the_serving_class_is_denied(vaps, namespaces) -> None:
    cpu = pod(labels={}, gpu=False, priority_class="gpupolicy-serving")
    denied_by(run(vaps, namespaces, cpu), SERVING_PRIORITY_POLICY, "Pod in namespace recsys-train")
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": "u", "controller": True}
    denied_by(run(vaps, namespaces, pod(labels={}, owner=rs, gpu=False, priority_class="system-cluster-critical")),
              PRIORITY_POLICY, "sets priorityClassName system-cluster-critical")


def test_pod_of_a_job_is_checked_at_the_job(vaps, namespaces) -> None:
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "u", "controller": True}
    controller = "system:serviceaccount:kube-system:job-controller"
    assert run(vaps, namespaces, pod(owner=owner, priority_class="standard"), user=controller).allowed
    # ...but the serving class is refused on every pod outside serving namespaces
    denied_by(run(vaps, namespaces, pod(owner=owner, priority_class="gpupolicy-serving")), SERVING_PRIORITY_POLICY)


def test_serving_class_outside_gpupolicy_namespaces_is_denied(vaps, namespaces) -> None:
    denied_by(run(vaps, namespaces, deployment("scratch", "gpupolicy-serving")), SERVING_PRIORITY_POLICY,
              "Deployment in namespace scratch")
    denied_by(run(vaps, namespaces, pod("scratch", labels={}, gpu=False, priority_class="gpupolicy-serving")),
              SERVING_PRIORITY_POLICY)
    assert run(vaps, namespaces, deployment("scratch", "high-priority")).allowed  # not gpupolicy's business
    # a namespace labelled serving by hand, without a team, is not a gpupolicy serving namespace
    fake = {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "fake-serving", "labels": {"gpupolicy.dev/purpose": "serving"}}}
    denied_by(admit(vaps, deployment("fake-serving", "gpupolicy-serving"), namespace=fake), SERVING_PRIORITY_POLICY)


def test_serving_deployments_are_admitted_in_their_namespace(demo: Policy, vaps, namespaces) -> None:
    nlp = demo.team("nlp")
    assert nlp is not None
    deps = [m.obj for m in lower_serving(demo, nlp, "onprem") if m.kind == "Deployment"]
    assert deps
    for dep in deps:
        assert dep["spec"]["template"]["spec"]["priorityClassName"] == "gpupolicy-serving"
        d = run(vaps, namespaces, dep)
        assert d.allowed, d.denials
        p = {"apiVersion": "v1", "kind": "Pod", "metadata": {**dep["spec"]["template"]["metadata"], "name": "p",
             "namespace": dep["metadata"]["namespace"]}, "spec": dep["spec"]["template"]["spec"]}
        assert run(vaps, namespaces, p).allowed


def test_warn_mode_warns(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    mutate(root, "fleet.yaml", "      servingIsolation: Deny\n", "      servingIsolation: Deny\n      priority: Warn\n")
    policy = load(root)
    vaps = [m.obj for m in lower_priority_admission(policy, "onprem")]
    ns = next(m.obj for t in policy.teams if t.name == "recsys" for m in lower_team_namespaces(policy, t, "onprem"))
    d = admit(vaps, job({**RECSYS, TIER: "production"}), namespace=ns)
    assert d.allowed and any("production" in w for w in d.warnings)


def test_team_cannot_relabel_its_namespace_to_a_higher_tier(vaps, namespaces) -> None:
    old = namespaces["recsys-train"]
    new = copy.deepcopy(old)
    new["metadata"]["labels"]["priority.gpupolicy.dev/production"] = "true"
    d = admit(vaps, new, old=old, operation="UPDATE", user="alice")
    assert any("priority.gpupolicy.dev/production" in w for w in d.warnings + d.denials)


# ---------- the ResourceQuota wall ----------

def test_quota_wall_in_every_non_serving_namespace(demo: Policy) -> None:
    pcs = [m.obj for c in demo.clusters for m in lower_serving_priority(demo, c)]
    assert {pc["metadata"]["name"] for pc in pcs} == {"gpupolicy-serving"}
    for cluster in demo.clusters:
        for team in demo.teams:
            nss = {m.obj["metadata"]["name"]: m.obj["metadata"]["labels"]["gpupolicy.dev/purpose"]
                   for m in lower_team_namespaces(demo, team, cluster)}
            quotas = {m.obj["metadata"]["namespace"]: m.obj for m in lower_priority_quota(demo, team, cluster)}
            assert set(quotas) == {n for n, p in nss.items() if p != "serving"}, (team.name, cluster)
            for q in quotas.values():
                assert q["metadata"]["name"] == QUOTA_NAME and q["spec"]["hard"] == {"pods": "0"}
                kubernetes_validate.validate(q, demo.clusters[cluster].kubernetes_version, strict=True)


GOLDEN = REPO / "tests" / "golden"
CASES = ["demo"] + sorted(f"golden/{p.name}" for p in GOLDEN.iterdir() if (p / "policies").is_dir())


@pytest.mark.parametrize("case", CASES)
def test_rendered_walls_cover_every_namespace(case: str) -> None:
    """On the whole rendered output: every gpupolicy Namespace but serving ones holds the quota wall
    at the rendered serving PriorityClass, and both priority policies are bound in Deny mode."""
    policy = load(REPO if case == "demo" else REPO / "tests" / case)
    objs = lower(policy)
    for cluster in policy.clusters:
        mine = [m.obj for m in objs if m.cluster == cluster]
        nss = {o["metadata"]["name"]: o["metadata"]["labels"] for o in mine if o["kind"] == "Namespace"}
        walls = {o["metadata"]["namespace"]: o for o in mine if o["kind"] == "ResourceQuota"
                 and o["metadata"]["name"] == QUOTA_NAME}
        expected = {n for n, labels in nss.items() if "gpupolicy.dev/team" in labels
                    and labels.get("gpupolicy.dev/purpose") != "serving"}
        assert set(walls) == expected, (case, cluster)
        for pc in (o for o in mine if o["kind"] == "PriorityClass"):
            for wall in walls.values():
                assert _quota_counts(wall, pod(priority_class=pc["metadata"]["name"])), (case, cluster)
        bindings = {o["metadata"]["name"]: o["spec"] for o in mine if o["kind"] == "ValidatingAdmissionPolicyBinding"}
        for name in (PRIORITY_POLICY, SERVING_PRIORITY_POLICY):
            assert bindings[name]["validationActions"] == ["Deny", "Audit"], (case, name)
        assert "matchResources" not in bindings[SERVING_PRIORITY_POLICY]  # every namespace; serving ones in CEL


def _quota_counts(quota: dict[str, Any], pod_obj: dict[str, Any]) -> bool:
    """The API server's PriorityClass scope: does this pod count against the quota?"""
    pc = pod_obj["spec"].get("priorityClassName", "")
    for e in quota["spec"]["scopeSelector"]["matchExpressions"]:
        assert e["scopeName"] == "PriorityClass"
        if {"In": pc in e["values"], "NotIn": pc not in e["values"], "Exists": pc != "",
                "DoesNotExist": pc == ""}[e["operator"]] is False:
            return False
    return True


def test_quota_wall_refuses_serving_priority_pods(demo: Policy) -> None:
    recsys = demo.team("recsys")
    assert recsys is not None
    quota = lower_priority_quota(demo, recsys, "onprem")[0].obj
    hard = int(quota["spec"]["hard"]["pods"])
    for cls in ("gpupolicy-serving", "system-node-critical", "system-cluster-critical"):
        assert _quota_counts(quota, pod(priority_class=cls)) and hard == 0
    for cls in (None, "standard"):
        assert not _quota_counts(quota, pod(priority_class=cls))


# ---------- what people read ----------

def test_report_and_explain_show_allowed_tiers(demo: Policy) -> None:
    md = render_markdown(demo).decode()
    assert "## Priority tiers" in md
    assert "| recsys | `standard` (fleet defaults.priority) | `standard`, `preemptible` |" in md
    assert "| `production` | 1000 |  | `nlp` |" in md
    text = explain_team(demo, "recsys")
    assert "allowed tiers (its tier and below): standard, preemptible" in text
    assert "reserved for nlp" in text and f"{TIER}=<standard|preemptible>" in text


def test_diff_shows_who_loses_a_tier(tmp_path: Path, demo: Policy) -> None:
    from compiler.tools.diff import team_deltas

    root = copy_demo(tmp_path)
    mutate(root, "fleet.yaml", "    - name: standard\n      value: 100\n",
           "    - name: standard\n      value: 100\n      reservedFor: [nlp, recsys]\n")
    deltas = {d.team: d.attributes for d in team_deltas(demo, load(root))}
    assert ("allowedPriorities", ["standard", "preemptible"], ["preemptible"]) in deltas["vision"]
    assert "recsys" not in deltas and "nlp" not in deltas

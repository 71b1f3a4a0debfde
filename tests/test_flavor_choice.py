"""How a job picks its GPU class when several classes share one resource name in a ClusterQueue
(full cards of two models on ``nvidia.com/gpu``): by selecting ``gpupolicy.dev/class``, which the
ResourceFlavors carry in ``nodeLabels`` whenever the class's nodes do, because Kueue compares a
job's node selector with a flavor only on the flavor's own keys (``flavorSelector``,
pkg/scheduler/flavorassigner/flavorassigner.go, kubernetes-sigs/kueue v0.19.2)."""

from __future__ import annotations

from pathlib import Path

from helpers import copy_demo, mutate, policy_at

from compiler.lower.kueue import lower_flavors
from compiler.policy.graph import Policy
from compiler.tools.job_admission import admit

L40S_TRAIN = ("        - name: l40s-train\n          model: l40s\n          nodes: 2\n          gpusPerNode: 4\n"
              "          cut:\n            mode: full\n          karpenter:\n            nodeClass: gpu-default\n"
              "            instanceTypes: [g6e.12xlarge]\n")


def _policy(tmp_path: Path, budget: bool = True) -> Policy:
    """The demo with a full-card L40S training pool on cloud beside h100-burst, and recsys
    guaranteed 4 of it without borrowing (a reviewer's case)."""
    root = copy_demo(tmp_path)
    mutate(root, "fleet.yaml", "        - name: l40s-serve\n", L40S_TRAIN + "        - name: l40s-serve\n")
    if budget:
        mutate(root, "teams/recsys.yaml", "  budgets:\n",
               "  budgets:\n    - cluster: cloud\n      class: l40s\n      guaranteed: 4\n      borrow: 0\n")
    policy, diags = policy_at(root)
    assert policy is not None and not [d for d in diags if d.severity.value == "error"], diags
    return policy


def test_flavors_carry_the_class_their_nodes_carry(tmp_path: Path) -> None:
    policy = _policy(tmp_path)
    labels = {m.obj["metadata"]["name"]: m.obj["spec"]["nodeLabels"] for m in lower_flavors(policy, "cloud")}
    assert labels["l40s"] == {"gpupolicy.dev/class": "l40s", "gpupolicy.dev/pool": "l40s-train"}
    assert labels["h100-80gb"] == {"gpupolicy.dev/class": "h100-80gb", "gpupolicy.dev/pool": "h100-burst"}
    # a MIG pool's classes share its nodes, which carry no class label: the pool alone (each has a
    # resource of its own, so no other flavor competes for its jobs)
    mig = {m.obj["metadata"]["name"]: m.obj["spec"]["nodeLabels"] for m in lower_flavors(policy, "onprem")}
    assert mig["a100-80gb-mig-1g.10gb"] == {"gpupolicy.dev/pool": "a100-mig"}


def test_explain_job_evaluates_the_class_asked_for(tmp_path: Path) -> None:
    """``explain --job l40s=4`` is the L40S flavor (it used to answer h100-80gb, the first flavor
    of nvidia.com/gpu), 6 does not fit a guarantee of 4 without borrowing (it used to be
    admissible, on h100), the bare resource may take any flavor in order, and one job cannot
    select two classes of one resource."""
    policy = _policy(tmp_path)
    v = admit(policy, "recsys", "cloud", {"l40s": 4})
    assert v.admissible and v.flavors == (("nvidia.com/gpu", "l40s"),)
    v = admit(policy, "recsys", "cloud", {"l40s": 6})
    assert not v.admissible and "nvidia.com/gpu=6 does not fit flavor l40s: guaranteed 4 + borrowable 0" in v.reasons[0]
    assert admit(policy, "recsys", "cloud", {"nvidia.com/gpu": 4}).flavors == (("nvidia.com/gpu", "h100-80gb"),)
    v = admit(policy, "recsys", "cloud", {"l40s": 1, "h100-80gb": 1})
    assert not v.admissible and "a job requests a resource once" in v.reasons[0]
    v = admit(_policy(tmp_path / "no-budget", budget=False), "recsys", "cloud", {"l40s": 1})
    assert v.reasons == ("l40s is not covered by ClusterQueue recsys on cloud (its nvidia.com/gpu flavors: "
                         "h100-80gb)",)  # not the h100 flavor, which a job selecting l40s never gets

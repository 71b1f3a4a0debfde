"""Relations checked in their second direction (compiler.validate.relations, docs/relations.md):
each rule fails on a one-line change of the demo, located on the line that causes it, and the
demo passes all of them."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from conftest import REPO
from helpers import codes, compile_dir, copy_demo, find, line_of, mutate

from compiler.diagnostics import Severity
from compiler.rules import all_rules
from compiler.validate import acknowledgements, multikueue_relations, relations

RULES = relations.RULES + multikueue_relations.RULES + acknowledgements.RULES

# (rule, file, old, new, file the diagnostic is on, needle on its line)
CASES = [
    ("FLEET401", "teams/vision.yaml", "      clusters: [onprem]", "      clusters: [cloud]",
     "teams/vision.yaml", "- cluster: onprem"),
    ("SERVE403", "teams/nlp.yaml", "architecture: llama-3.1-70b", "architecture: llama-3.1-8b",
     "teams/nlp.yaml", "architecture:"),
    ("FLEET402", "fleet.yaml", "    - name: product\n", "    - name: robotics\n      parent: ai\n    - name: product\n",
     "fleet.yaml", "name: robotics"),
    # research caps H100s on cloud, where none of its teams budgets them
    ("FLEET404", "fleet.yaml", "        - {cluster: onprem, class: h100-80gb, max: 40}",
     "        - {cluster: cloud, class: h100-80gb, max: 40}", "fleet.yaml", "{cluster: cloud, class: h100-80gb, max: 40}"),
    # chat (pii, allowed in eu) served from the us cluster
    ("SERVE401", "teams/nlp.yaml", "      cluster: onprem\n      pool: h200-serve",
     "      cluster: cloud\n      pool: l40s-serve", "teams/nlp.yaml", "cluster: cloud"),
    # query-rewrite, the only deployment on l40s-serve, removed: the reserved pool idles
    ("SERVE402", "teams/search.yaml", "  serving:\n", "  servingRemoved:\n", "fleet.yaml", "serving: true#2"),
    ("SERVE404", "teams/search.yaml", "      architecture: llama-3.1-8b",
     "      architecture: {parametersB: 8, layers: 16, attentionHeads: 32, kvHeads: 8, headDim: 128}",
     "teams/search.yaml", "architecture:"),
    ("ADM401", "teams/interns.yaml", "  namespaces:\n    - name: interns-sandbox\n      clusters: [cloud]\n",
     "  namespaces: []\n", "teams/interns.yaml", "groups:"),
]


@pytest.mark.parametrize(("rule", "rel", "old", "new", "on", "needle"), CASES, ids=[c[0] for c in CASES])
def test_relation_rule_fails(tmp_path: Path, rule: str, rel: str, old: str, new: str, on: str, needle: str) -> None:
    root = copy_demo(tmp_path)
    mutate(root, rel, old, new)
    if rule == "SERVE402":
        path = root / "policies" / rel
        path.write_text(re.sub(r"  servingRemoved:\n((    |      ).*\n)*", "", path.read_text()))
    result = compile_dir(root)
    d = find(result.diagnostics, rule)
    assert d.location is not None and d.location.file.endswith(on)
    text, _, nth = needle.partition("#")
    assert d.location.line == line_of(root, on, text, int(nth or 1)), d
    assert d.hint


def test_demo_passes_every_relation_rule() -> None:
    result = compile_dir(REPO)
    assert not {r.id for r in RULES} & set(codes(result.diagnostics))


def test_relation_rules_are_registered_with_examples() -> None:
    registry = all_rules()
    for r in RULES:
        assert registry[r.id] is r and r.passing and r.failing


def test_relations_doc_names_every_relation_rule() -> None:
    doc = (REPO / "docs/relations.md").read_text()
    for r in RULES:
        assert r.id in doc, r.id
    for rid in set(re.findall(r"\b[A-Z]{3,6}\d{3}\b", doc)):
        assert rid in all_rules(), f"docs/relations.md cites unknown rule {rid}"


def test_two_clusters_with_one_name_are_reported_not_a_crash(tmp_path: Path) -> None:
    """Found by the field-effect test: renaming a cluster to another's name crashed the DRA proof."""
    root = copy_demo(tmp_path)
    mutate(root, "fleet.yaml", "    - name: onprem\n", "    - name: cloud\n")
    assert "FLEET001" in codes(compile_dir(root).diagnostics)


def test_a_team_rendering_nothing_compiles(tmp_path: Path) -> None:
    """Found by the field-effect test: a team without namespaces or serving renders no file, and its
    empty unit was taken for a vanished cache entry."""
    root = copy_demo(tmp_path)
    mutate(root, "teams/interns.yaml", "  namespaces:\n    - name: interns-sandbox\n      clusters: [cloud]\n", "")
    result = compile_dir(root)
    assert not result.failed and "FLEET401" in codes(result.diagnostics)


def test_gitops_path_is_where_the_build_writes(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    assert "GITOPS401" not in codes(compile_dir(root).diagnostics)
    mutate(root, "fleet.yaml", "    path: out\n", "    path: deploy\n")
    d = find(compile_dir(root).diagnostics, "GITOPS401")
    assert d.location is not None and d.location.line == line_of(root, "fleet.yaml", "path: deploy")
    assert "deploy/" in d.message and d.hint == "set gitops.path: out, or build with --out deploy"



# -- across a MultiKueue manager and its workers (compiler.validate.multikueue_relations) --------------
def copy_golden(tmp: Path, case: str) -> Path:
    root = tmp / "repo"
    shutil.copytree(REPO / "tests/golden" / case / "policies", root / "policies")
    return root


WEST = '    - name: west\n      kubernetesVersion: "1.34"\n      apiServer: https://west.k8s.fed.internal:6443\n'
HOPPER = ("      deviceClasses:\n        - name: hopper\n          class: h100-80gb\n          selectors:\n"
          "            - \"device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'\"\n")
# (case, [(file, old, new)], rule, file the diagnostic is on, needle on its line)
MK_CASES = [
    # west moves to the US while the teams queued on hub handle internal data, allowed in the EU only
    ("multikueue", [("fleet.yaml", "    - name: internal\n", "    - name: internal\n      residency: [eu]\n"),
                    ("fleet.yaml", "https://west.k8s.fed.internal:6443\n      region: eu-west\n      residency: eu",
                     "https://west.k8s.fed.internal:6443\n      region: us-west-2\n      residency: us")],
     "FLEET403", "fleet.yaml", "workers: [east, west]"),
    # east declares DeviceClass hopper (hub maps it, holds hopper-N templates); west runs h100 without it
    ("multikueue-dra", [("fleet.yaml", "        kubeconfigSecret: east-kubeconfig\n",
                         "        kubeconfigSecret: east-kubeconfig\n" + HOPPER)],
     "DRA401", "fleet.yaml", "- name: west"),
    # hub admits llm's h100 claims up to 2 GPUs; east's budget allows 8-GPU claims
    ("multikueue-dra", [("teams/llm.yaml", "{cluster: hub, class: h100-80gb, guaranteed: 16}",
                         "{cluster: hub, class: h100-80gb, guaranteed: 2, borrow: 0}")],
     "DRA402", "teams/llm.yaml", "{cluster: east, class: h100-80gb"),
]


@pytest.mark.parametrize(("case", "edits", "rule", "on", "needle"), MK_CASES, ids=[c[2] for c in MK_CASES])
def test_multikueue_relation_fails(tmp_path: Path, case: str, edits: list[tuple[str, str, str]], rule: str, on: str,
                                   needle: str) -> None:
    root = copy_golden(tmp_path, case)
    assert rule not in codes(compile_dir(root).diagnostics)  # the golden case passes it
    for rel, old, new in edits:
        mutate(root, rel, old, new)
    d = find(compile_dir(root).diagnostics, rule)
    assert d.location is not None and d.location.file.endswith(on), d
    assert d.location.line == line_of(root, on, needle), d
    assert d.hint


def test_fleet403_names_the_worker_and_notes_each_team(tmp_path: Path) -> None:
    root = copy_golden(tmp_path, "multikueue")
    _, edits, _, _, _ = MK_CASES[0]
    for rel, old, new in edits:
        mutate(root, rel, old, new)
    found = [d for d in compile_dir(root).diagnostics if d.code == "FLEET403"]
    [error] = [d for d in found if d.severity is Severity.ERROR]
    assert "to worker 'west' (residency 'us')" in error.message and "llm, speech" in error.message
    notes = {d.location.file for d in found if d.severity is Severity.INFO and d.location is not None}
    assert notes == {"policies/teams/llm.yaml", "policies/teams/speech.yaml"}


def test_fleet403_a_worker_in_an_allowed_residency_passes(tmp_path: Path) -> None:
    root = copy_golden(tmp_path, "multikueue")
    mutate(root, "fleet.yaml", "    - name: internal\n", "    - name: internal\n      residency: [eu]\n")
    assert "FLEET403" not in codes(compile_dir(root).diagnostics)


def test_dra401_the_device_class_on_every_worker_passes(tmp_path: Path) -> None:
    root = copy_golden(tmp_path, "multikueue-dra")
    mutate(root, "fleet.yaml", "        kubeconfigSecret: east-kubeconfig\n",
           "        kubeconfigSecret: east-kubeconfig\n" + HOPPER)
    mutate(root, "fleet.yaml", "      dra: true\n      systemNamespaces: [gpu-operator, kueue-system]\n      multikueue:\n"
           "        role: worker\n      pools:", "      dra: true\n      systemNamespaces: [gpu-operator, kueue-system]\n"
           "      multikueue:\n        role: worker\n" + HOPPER + "      pools:")
    assert "DRA401" not in codes(compile_dir(root).diagnostics)


def test_dra401_one_name_for_two_classes(tmp_path: Path) -> None:
    """A DeviceClass of one name counting against h100 on east and l4 on west: same template, other GPUs."""
    root = copy_golden(tmp_path, "multikueue-dra")
    mutate(root, "fleet.yaml", "        kubeconfigSecret: east-kubeconfig\n",
           "        kubeconfigSecret: east-kubeconfig\n" + HOPPER)
    l4 = HOPPER.replace("h100-80gb", "l4").replace("NVIDIA H100 80GB HBM3", "NVIDIA L4")
    mutate(root, "fleet.yaml", "        role: worker\n      pools:", "        role: worker\n" + l4 + "      pools:")
    found = [d for d in compile_dir(root).diagnostics if d.code == "DRA401"]
    assert any("counts against l4" in d.message for d in found), found


def test_dra402_equal_reach_passes(tmp_path: Path) -> None:
    root = copy_golden(tmp_path, "multikueue-dra")
    mutate(root, "teams/llm.yaml", "{cluster: hub, class: h100-80gb, guaranteed: 16}",
           "{cluster: hub, class: h100-80gb, guaranteed: 8, borrow: 0}")
    assert "DRA402" not in codes(compile_dir(root).diagnostics)


# -- acknowledged removals that match none (compiler.validate.acknowledgements) ------------------------
FLEET_ANCHOR = "  defaults:\n    budget:\n"
ACK = "  acknowledgedRemovals:\n    - {{cluster: {cluster}, kind: {kind}, name: {name}, reason: retired}}\n"


@pytest.mark.parametrize(("rel", "cluster", "kind", "name", "why"), [
    ("fleet.yaml", "onprem", "ClusterQueue", "vision", "still has a budget on 'onprem'"),
    ("fleet.yaml", "onprem", "ResourceFlavor", "h100-80gb", "still has training capacity"),
    ("fleet.yaml", "edge", "ClusterQueue", "vision", "declares no cluster 'edge'"),
    ("teams/vision.yaml", "cloud", "ClusterQueue", "nlp", "only the removal of its own ClusterQueue"),
    ("teams/vision.yaml", "onprem", "ResourceFlavor", "h100-80gb", "only the removal of its own ClusterQueue"),
], ids=["queue-rendered", "flavor-rendered", "no-cluster", "other-team", "team-flavor"])
def test_gitops402_stale_acknowledgement(tmp_path: Path, rel: str, cluster: str, kind: str, name: str,
                                         why: str) -> None:
    root = copy_demo(tmp_path)
    anchor = FLEET_ANCHOR if rel == "fleet.yaml" else "  budgets:\n"
    mutate(root, rel, anchor, ACK.format(cluster=cluster, kind=kind, name=name) + anchor)
    d = find(compile_dir(root).diagnostics, "GITOPS402")
    assert d.severity is Severity.WARNING and why in d.message, d
    assert d.location is not None and d.location.file.endswith(rel)
    assert d.location.line == line_of(root, rel, f"- {{cluster: {cluster}, kind: {kind}")


def test_gitops402_an_acknowledgement_of_a_real_removal_passes(tmp_path: Path) -> None:
    """vision no longer budgets on onprem: its acknowledgement matches the removal (GITOPS302's)."""
    root = copy_demo(tmp_path)
    mutate(root, "teams/vision.yaml", "  budgets:\n", ACK.format(cluster="cloud", kind="ClusterQueue",
                                                                   name="vision") + "  budgets:\n")
    mutate(root, "fleet.yaml", FLEET_ANCHOR, ACK.format(cluster="onprem", kind="ResourceFlavor",
                                                       name="h100-80gb-mig-1g.10gb") + FLEET_ANCHOR)
    assert "GITOPS402" not in codes(compile_dir(root).diagnostics)

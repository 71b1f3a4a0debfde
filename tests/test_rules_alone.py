"""Rules tested one at a time: a mutated demo policy in, the rule's own check (from the registry)
run alone, the rule ID and line out. These are the rules no other test named before the rules were
declared with their checks; the end-to-end tests in test_negative.py cover the others."""

from __future__ import annotations

import copy
from pathlib import Path

from helpers import compile_dir, copy_demo, line_of, mutate, policy_at, run_alone

from compiler.diagnostics import Diagnostic, Location, Severity
from compiler.pipeline.options import Options
from compiler.pipeline.run import compile_policies
from compiler.policy.kueue_manager import manager_config
from compiler.rules import get
from compiler.validate.driver import RULES
from compiler.verify import kueue_config


def alone(tmp_path: Path, rel: str, old: str, new: str, rule_id: str) -> tuple[Path, list[Diagnostic]]:
    root = copy_demo(tmp_path)
    mutate(root, rel, old, new)
    policy, _ = policy_at(root)
    assert policy is not None
    found = run_alone(policy, rule_id)
    assert found and {d.code for d in found} == {rule_id}, found
    return root, found


def at(root: Path, d: Diagnostic, rel: str, needle: str, occurrence: int = 1) -> None:
    assert d.location is not None and d.location.file == f"policies/{rel}", d
    assert d.location.line == line_of(root, rel, needle, occurrence), (d.location, d.message)


def test_demo_passes_every_rule_alone() -> None:
    policy, diags = policy_at(Path(__file__).resolve().parent.parent)
    assert policy is not None and not diags
    for rule in RULES:
        if rule.check is not None:
            assert run_alone(policy, rule.id) == [], rule.id


def test_fleet011_namespace_without_budget(tmp_path: Path) -> None:
    root, [d] = alone(tmp_path, "teams/interns.yaml", "clusters: [cloud]", "clusters: [cloud, onprem]", "FLEET011")
    at(root, d, "teams/interns.yaml", "clusters: [cloud, onprem]")
    assert d.severity is Severity.WARNING and "'interns-sandbox' on 'onprem'" in d.message


def test_fleet012_budget_on_a_serving_only_class(tmp_path: Path) -> None:
    root, [d] = alone(tmp_path, "teams/nlp.yaml", "class: h100-80gb", "class: h200", "FLEET012")
    at(root, d, "teams/nlp.yaml", "class: h200")
    assert "h200-serve" in d.message


def test_fleet013_shares_not_renamed(tmp_path: Path) -> None:
    root, [d] = alone(tmp_path, "fleet.yaml", "replicas: 4\n",
                      "replicas: 4\n            renameByDefault: false\n", "FLEET013")
    at(root, d, "fleet.yaml", "renameByDefault: false")
    assert d.severity is Severity.WARNING and "'l4-dev'" in d.message


def test_fleet014_karpenter_pool_without_settings(tmp_path: Path) -> None:
    root, [d] = alone(tmp_path, "fleet.yaml",
                      "          karpenter:\n            nodeClass: gpu-default\n            instanceTypes: [p5.48xlarge]\n",
                      "", "FLEET014")
    at(root, d, "fleet.yaml", "- name: h100-burst")
    assert "lacks karpenter settings" in d.message


def test_fleet014_karpenter_settings_without_karpenter(tmp_path: Path) -> None:
    root, [d] = alone(tmp_path, "fleet.yaml", "          cut:\n            mode: full\n",
                      "          cut:\n            mode: full\n          karpenter:\n            nodeClass: gpu\n",
                      "FLEET014")
    at(root, d, "fleet.yaml", "nodeClass: gpu")  # the karpenter mapping, which starts on its first key
    assert "'h100-train' has karpenter settings" in d.message and "'none'" in d.message


def test_kueue006_child_cap_over_parent(tmp_path: Path) -> None:
    root, [d] = alone(tmp_path, "fleet.yaml", "class: h100-80gb, max: 40}", "class: h100-80gb, max: 80}", "KUEUE006")
    at(root, d, "fleet.yaml", "max: 80")
    assert "'research'" in d.message and "'ai' (64)" in d.message


def test_mig011_single_strategy(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    mutate(root, "fleet.yaml", "strategy: mixed", "strategy: single")
    _, diags = policy_at(root)
    [d] = [d for d in diags if d.code == "MIG011"]
    at(root, d, "fleet.yaml", "strategy: single")
    assert "'a100-mig'" in d.message


def test_kueue010_generated_configuration_checked() -> None:
    policy, _ = policy_at(Path(__file__).resolve().parent.parent)
    assert policy is not None
    check = get("KUEUE010")
    where = Location(policy.fleet_src.path)
    assert kueue_config.check(manager_config(policy, "onprem"), "onprem", where) == []
    cfg = copy.deepcopy(manager_config(policy, "onprem"))
    cfg["fairSharing"]["preemptionStrategies"].reverse()
    [d] = kueue_config.check(cfg, "onprem", where)
    assert d.code == check.id == "KUEUE010" and d.location == where and "preemptionStrategies" in d.message


def test_verify900_no_crd_directory(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    for strict, severity in ((False, Severity.WARNING), (True, Severity.ERROR)):
        res = compile_policies(Options(root=root, policy_dir=root / "policies", out_dir=root / "out", crds=None,
                                       strict=strict, verify=True))
        [d] = [d for d in res.diagnostics if d.code == "VERIFY900"]
        assert d.severity is severity and d.location == Location("policies/fleet.yaml")
        assert "custom resources were not verified" in d.message
    assert compile_dir(root).diagnostics == []  # verify=False: nothing to warn about

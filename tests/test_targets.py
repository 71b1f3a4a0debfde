"""Per-target declarations (compiler/model/targets.py, ``TARGETS`` in each lowering module) agree
with what the passes emit, with the rendered AppProjects and with verify's own tables.

A new pass that emits a kind its target does not declare fails here, on the demo or any golden
case, before ArgoCD meets an object it may create but never prune."""

from __future__ import annotations

import inspect
import pkgutil
from importlib import import_module
from pathlib import Path

import pytest
from conftest import REPO
from helpers import policy_at

import compiler.lower
from compiler.lower import lower_all
from compiler.lower.targets import CLUSTER_PASSES, OWNED_KINDS, TARGETS, TEAM_PASSES
from compiler.model.manifest import Manifest
from compiler.model.targets import COMPONENT_WAVES, COMPONENTS, Target
from compiler.policy.gitops_names import cluster_project
from compiler.policy.graph import Policy
from compiler.verify.meta import BUILTIN_CLUSTER_SCOPED
from compiler.verify.registry import CrdRegistry

GOLDEN = REPO / "tests" / "golden"
CASES = ["demo"] + sorted(f"golden/{p.name}" for p in GOLDEN.iterdir() if (p / "policies").is_dir())


def _policy(case: str) -> Policy:
    policy, diags = policy_at(REPO if case == "demo" else REPO / "tests" / case)
    assert policy is not None, [d for d in diags if d.severity.value == "error"]
    return policy


def problems(policy: Policy, target: Target, manifests: list[Manifest], team_path: str | None) -> list[str]:
    """What the objects one target's passes emitted contradict in its declaration."""
    team_files = {t.path for t in policy.teams}
    out = []
    for m in manifests:
        where = f"{target.name}: {m.relpath} ({m.api_version} {m.kind})"
        if m.component != target.component:
            out.append(f"{where}: component {m.component!r}, declared {target.component!r}")
        if not target.declares(m.api_version, m.kind, m.namespace is None):
            out.append(f"{where}: kind not declared (with this apiVersion and scope) in the target's kinds")
        teams = {s for s in m.sources if s in team_files}
        if target.codeowners == "platform" and teams:
            out.append(f"{where}: platform-owned target, but derives from team files {sorted(teams)}")
        if target.codeowners == "team" and teams != {team_path}:
            out.append(f"{where}: team-owned target, but its team sources are {sorted(teams)}, not {team_path}")
    return out


def test_pass_lists_follow_from_the_targets() -> None:
    assert CLUSTER_PASSES == tuple(p for t in TARGETS if t.scope == "cluster" for p in t.passes)
    assert TEAM_PASSES == tuple(p for t in TARGETS if t.scope == "team" for p in t.passes)
    bound = [p for t in TARGETS for p in t.passes]
    assert len(bound) == len(set(bound)), "a pass is bound to two targets"
    assert len({t.name for t in TARGETS}) == len(TARGETS)
    assert {t.component for t in TARGETS} == set(COMPONENTS) == set(COMPONENT_WAVES)
    for t in TARGETS:
        assert t.kinds and t.passes, t.name
        arity = 2 if t.scope == "cluster" else 3
        for p in t.passes:
            assert len(inspect.signature(p).parameters) == arity, f"{t.name}: {p.__name__} is not a {t.scope} pass"


def test_every_lowering_pass_is_bound_to_a_target() -> None:
    """A ``lower_*(policy, cluster)`` or ``lower_*(policy, team, cluster)`` function in compiler/lower
    that no target binds would never run (or run undeclared)."""
    bound = {p for t in TARGETS for p in t.passes}
    unbound = []
    for info in pkgutil.iter_modules(compiler.lower.__path__):
        module = import_module(f"compiler.lower.{info.name}")
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if fn.__module__ != module.__name__ or not name.startswith("lower_"):
                continue
            params = list(inspect.signature(fn).parameters)
            if params in (["policy", "cluster"], ["policy", "team", "cluster"]) and fn not in bound:
                unbound.append(f"{module.__name__}.{name}")
    assert not unbound, f"lowering passes no target binds: {unbound}"


@pytest.mark.parametrize("case", CASES)
def test_every_emitted_kind_is_declared_by_its_target(case: str) -> None:
    policy = _policy(case)
    found: list[str] = []
    emitted = 0
    for cluster in sorted(policy.clusters):
        for t in TARGETS:
            for p in t.passes:
                if t.scope == "cluster":
                    ms = p(policy, cluster)
                    found += problems(policy, t, ms, None)
                    emitted += len(ms)
                else:
                    for team in policy.teams:
                        ms = p(policy, team, cluster)
                        found += problems(policy, t, ms, team.path)
                        emitted += len(ms)
    assert emitted, case
    assert not found, "\n".join(found[:20])


@pytest.mark.parametrize("case", CASES)
def test_every_declared_kind_is_allowed_in_every_cluster_project(case: str) -> None:
    """ArgoCD can prune an object only with its kind in the project's allow-list, and the last
    object of a kind leaves the render before its deletion syncs: so every declared kind is listed
    in every cluster's AppProject, rendered there or not."""
    policy = _policy(case)
    manifests, inventory = lower_all(policy)
    projects = {m.name: m.obj["spec"] for m in manifests if m.kind == "AppProject"}
    checked = 0
    for cluster in sorted(inventory.clusters()):
        spec = projects[cluster_project(policy, cluster)]
        allowed = {
            True: {(k["group"], k["kind"]) for k in spec["clusterResourceWhitelist"]},
            False: {(k["group"], k["kind"]) for k in spec["namespaceResourceWhitelist"]},
        }
        for t in TARGETS:
            for k in t.kinds:
                assert (k.group, k.kind) in allowed[k.cluster_scoped], f"{cluster}: {t.name} {k} not allowed"
                checked += 1
    assert checked, case


def test_declared_scopes_agree_with_verify(crds_dir: Path) -> None:
    """verify keeps its own tables on purpose (it checks what the compiler claims); they agree."""
    registry = CrdRegistry.load(crds_dir)
    for t in TARGETS:
        for k in t.kinds:
            if k.builtin:
                assert k.cluster_scoped == (k.kind in BUILTIN_CLUSTER_SCOPED), f"{t.name}: {k}"
                continue
            crd = registry.get(k.group, k.kind)
            assert crd is not None, f"{t.name}: no CRD for {k} under {crds_dir}"
            assert crd.scope == ("Cluster" if k.cluster_scoped else "Namespaced"), f"{t.name}: {k}"
            assert k.api_version.rsplit("/", 1)[1] in crd.served_versions(), f"{t.name}: {k}"


def test_owned_kinds_are_exactly_the_declared_kinds() -> None:
    assert OWNED_KINDS == {(k.group, k.kind): k.cluster_scoped for t in TARGETS for k in t.kinds}
    # one (group, kind) is never declared with two scopes
    assert len(OWNED_KINDS) == len({(k.group, k.kind, k.cluster_scoped) for t in TARGETS for k in t.kinds})


def test_an_undeclared_kind_is_reported() -> None:
    """The check above on the shape of a pass that forgot its declaration (the NetworkPolicy case)."""
    policy = _policy("demo")
    target = next(t for t in TARGETS if t.name == "namespaces")
    team = policy.teams[0]
    cluster = sorted(policy.clusters)[0]
    netpol = Manifest(cluster, "namespaces", {
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": "default-deny", "namespace": "x"}}, (policy.fleet_src.path, team.path))
    found = problems(policy, target, [netpol], team.path)
    assert found and "not declared" in found[0]

"""Property-based robustness: mutated policies never crash the compiler, and valid ones render
deterministically. ``make test`` runs a few examples; ``make fuzz`` runs
GPUPOLICY_FUZZ_EXAMPLES (default 10,000) of each property."""

from __future__ import annotations

import os
import random
from typing import Any

import yaml
from conftest import REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.diagnostics import Severity
from compiler.emit.tree import render_tree
from compiler.load.source import load_sources
from compiler.lower import lower
from compiler.validate import build_policy

LARGE = int(os.environ.get("GPUPOLICY_FUZZ_EXAMPLES", "0"))
EXAMPLES = LARGE or 25

DEMO: dict[str, bytes] = {
    "policies/fleet.yaml": (REPO / "policies/fleet.yaml").read_bytes(),
    **{f"policies/teams/{p.name}": p.read_bytes() for p in sorted((REPO / "policies/teams").glob("*.yaml"))},
}


def compile_bytes(files: dict[str, bytes]) -> tuple[bool, list[Any], dict[str, bytes]]:
    blobs = [(path, data, path == "policies/fleet.yaml") for path, data in files.items()]
    sources, diags = load_sources(blobs)
    policy, more = build_policy(sources)
    diags += more
    out: dict[str, bytes] = {}
    ok = policy is not None and not any(d.severity is Severity.ERROR for d in diags)
    if ok:
        assert policy is not None
        out = render_tree(lower(policy))
    return ok, diags, out


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, prefix + (i,))
    return out


WEIRD = [None, -1, 0, 2**40, 1.5, "", "unlimited", "../etc", "UPPER", "x" * 300, [], {}, [1, 2], {"a": 1},
         True, "onprem", "h100-80gb", "research", "nvidia.com/gpu", "1e3", float("nan")]


def mutate_data(data: Any, rnd: random.Random) -> Any:
    paths = [p for p in _paths(data) if p]
    if not paths:
        return rnd.choice(WEIRD)
    path = rnd.choice(paths)
    parent = data
    for p in path[:-1]:
        parent = parent[p]
    key = path[-1]
    op = rnd.randrange(5)
    if op == 0:
        parent[key] = rnd.choice(WEIRD)
    elif op == 1:
        if isinstance(parent, dict):
            del parent[key]
        else:
            parent.pop(key)
    elif op == 2 and isinstance(parent, dict):
        parent[key + "x" if isinstance(key, str) else "extra"] = parent[key]
    elif op == 3 and isinstance(parent, list):
        parent.append(parent[key])  # duplicate an entry (same name twice)
    else:
        value = parent[key]
        if isinstance(value, str):
            parent[key] = value[::-1]  # a reference to something that does not exist
        elif isinstance(value, int) and not isinstance(value, bool):
            parent[key] = -value - 1
        else:
            parent[key] = str(value)
    return data


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=not LARGE)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 4), text_level=st.booleans())
def test_mutations_never_crash(seed: int, n: int, text_level: bool) -> None:
    rnd = random.Random(seed)
    files = dict(DEMO)
    target = rnd.choice(sorted(files))
    if text_level:
        raw = bytearray(files[target])
        for _ in range(n):
            pos = rnd.randrange(len(raw))
            raw[pos:pos + rnd.randrange(1, 4)] = rnd.choice([b"\t", b":", b"- ", b"\n  ", b"&a", b"*a", b"\xff", b"{",
                                                             b"'", b"---\n", b"!!binary ", b""])
        files[target] = bytes(raw)
    else:
        data = yaml.safe_load(files[target])
        for _ in range(n):
            data = mutate_data(data, rnd)
        files[target] = yaml.safe_dump(data, sort_keys=False).encode()
    ok, diags, _ = compile_bytes(files)
    if not ok:
        errors = [d for d in diags if d.severity is Severity.ERROR]
        assert errors, "failure without an error diagnostic"
        for d in errors:
            assert d.location is not None and d.location.file in files, d
            assert d.location.line >= 1 or d.code.startswith("LOAD") or d.code == "FLEET003", d


MODELS_FULL = ["h100-80gb", "a100-80gb", "l4", "l40s", "h200", "b200"]


@st.composite
def fleets(draw: st.DrawFn) -> dict[str, bytes]:
    """A random but valid organisation: clusters, pools, departments, teams within capacity."""
    n_clusters = draw(st.integers(1, 3))
    clusters = []
    for c in range(n_clusters):
        pools = []
        mig_models: set[str] = set()
        for p in range(draw(st.integers(1, 3))):
            model = draw(st.sampled_from(MODELS_FULL))
            cut: dict[str, Any] = {"mode": "full"}
            kind = draw(st.sampled_from(["full", "ts", "mig"]))
            if kind == "ts":
                cut = {"mode": "timeslicing", "replicas": draw(st.integers(2, 8))}
            elif kind == "mig" and model in ("h100-80gb", "a100-80gb", "h200", "b200") and model not in mig_models:
                # one MIG pool per model: a class on several multi-class pools is FLEET010
                mig_models.add(model)
                cut = {"mode": "mig", "layout": draw(st.sampled_from(["all-balanced", "all-1g.10gb" if model in (
                    "h100-80gb", "a100-80gb") else "all-balanced"]))}
            pools.append({"name": f"p{p}", "model": model, "nodes": draw(st.integers(1, 4)),
                          "gpusPerNode": draw(st.sampled_from([1, 2, 4, 8])), "cut": cut})
        clusters.append({"name": f"c{c}", "kubernetesVersion": "1.34", "apiServer": f"https://c{c}.example:6443",
                         "region": "r1", "residency": "eu", "pools": pools})
    depts = [{"name": "root"}] + [{"name": f"d{i}", "parent": "root"} for i in range(draw(st.integers(1, 3)))]
    fleet = {"apiVersion": "gpupolicy.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "fuzz"},
             "spec": {"platform": {"owners": ["@org/platform"]}, "gitops": {"repoUrl": "https://example.com/r.git"},
                      "clusters": clusters, "departments": depts, "dataClasses": [{"name": "public"}],
                      "priorities": [{"name": "high", "value": 100}, {"name": "low", "value": 1, "default": True}]}}
    files = {"policies/fleet.yaml": yaml.safe_dump(fleet, sort_keys=False).encode()}
    return files


@settings(max_examples=LARGE or 5, deadline=None, suppress_health_check=list(HealthCheck),
          derandomize=not LARGE)
@given(files=fleets(), data=st.data())
def test_valid_policies_render_deterministically(files: dict[str, bytes], data: st.DataObject) -> None:
    ok, diags, _ = compile_bytes(files)
    assert ok, [(d.code, d.message) for d in diags if d.severity is Severity.ERROR]
    sources, _ = load_sources([(p, b, p.endswith("fleet.yaml")) for p, b in files.items()])
    policy, _ = build_policy(sources)
    assert policy is not None
    # add teams that budget within capacity, then compile in two file orders
    teams: dict[str, bytes] = {}
    for i, (cname, classes) in enumerate(sorted(policy.classes.items())):
        for j, (cid, cls) in enumerate(sorted(classes.items())):
            if cls.capacity < 2 or cls.cut == "mps":
                continue
            name = f"t{i}x{j}"
            share = data.draw(st.integers(0, cls.capacity // 2))
            team = {"apiVersion": "gpupolicy.dev/v1alpha1", "kind": "Team", "metadata": {"name": name},
                    "spec": {"owners": ["@org/t"], "department": f"d{j % 1}", "isolation": "shared",
                             "dataClasses": ["public"], "namespaces": [{"name": f"{name}-train", "clusters": [cname]}],
                             "budgets": [{"cluster": cname, "class": cid, "guaranteed": share,
                                          "lend": data.draw(st.sampled_from([0, "unlimited", share]))}]}}
            teams[f"policies/teams/{name}.yaml"] = yaml.safe_dump(team).encode()
    full = {**files, **teams}
    ok1, d1, out1 = compile_bytes(full)
    assert ok1, [(d.code, d.message) for d in d1 if d.severity is Severity.ERROR]
    reordered = dict(reversed(list(full.items())))
    ok2, _, out2 = compile_bytes(reordered)
    assert ok2 and out1 == out2
    assert render_tree(lower(policy), fast=True) == render_tree(lower(policy), fast=False)

"""Write a synthetic organisation as ordinary policy files, for the benchmark.

    .venv/bin/python bench/generate.py --teams 1000 --clusters 20 --out /tmp/org [--seed 1]

Writes ``OUT/policies/fleet.yaml`` and ``OUT/policies/teams/<team>.yaml``. The mix follows the
demo: DRA clusters (Kubernetes 1.34) and device-plugin clusters (1.33, half of them provisioned
by Karpenter); pools of full cards, MIG layouts (named and per-device) and time-sliced shares;
one reserved serving pool per cluster; a department tree three levels deep with caps and
defaults; priority tiers; data classes with residency. Every team is valid: it lives on 4-10
clusters with a training namespace on each (evaluation and development namespaces on some), budgets only classes its isolation
allows, about one in eight serves a model on a reserved pool. Pools are sized after the teams
so guarantees fit capacity. Same seed, same bytes.
"""

from __future__ import annotations

import argparse
import copy
import math
import random
import shutil
from pathlib import Path
from typing import Any

import yaml

# (pool suffix, model, gpus per node, cut) — the training pools clusters are built from.
TRAINING_POOLS: dict[str, list[tuple[str, str, int, dict[str, Any]]]] = {
    "dra": [
        ("a100-mig", "a100-80gb", 8, {"mode": "mig", "layout": "all-balanced", "strategy": "mixed"}),
        ("h100-train", "h100-80gb", 8, {"mode": "full"}),
        ("b200-train", "b200", 8, {"mode": "full"}),
        ("a100s-mig", "a100-40gb", 8, {"mode": "mig", "devices": [
            {"gpus": 4, "profiles": {"3g.20gb": 2}}, {"gpus": 4, "profiles": {"1g.5gb": 7}}]}),
    ],
    "plugin": [
        ("l4-dev", "l4", 4, {"mode": "timeslicing", "replicas": 4}),
        ("h100-train", "h100-80gb", 8, {"mode": "full"}),
        ("a100-mig", "a100-80gb", 8, {"mode": "mig", "layout": "all-1g.10gb", "strategy": "mixed"}),
        ("a30-mig", "a30", 4, {"mode": "mig", "layout": "all-2g.12gb", "strategy": "mixed"}),
    ],
}
# The instance type Karpenter launches per model. No AWS instance carries an A30 (FLEET302), so A30
# pools live only on clusters without Karpenter.
INSTANCE_TYPES = {"l4": "g6.12xlarge", "a100-40gb": "p4d.24xlarge", "h100-80gb": "p5.48xlarge", "a100-80gb": "p4de.24xlarge",
                  "l40s": "g6e.12xlarge", "h200": "p5e.48xlarge"}
# Classes each pool provides: (class id, cut, units per node).
POOL_CLASSES: dict[str, list[tuple[str, str, int]]] = {
    "a100-mig/dra": [("a100-80gb-mig-1g.10gb", "mig", 16), ("a100-80gb-mig-2g.20gb", "mig", 8),
                     ("a100-80gb-mig-3g.40gb", "mig", 8)],
    "h100-train/dra": [("h100-80gb", "full", 8)],
    "b200-train/dra": [("b200", "full", 8)],
    "a100s-mig/dra": [("a100-40gb-mig-1g.5gb", "mig", 28), ("a100-40gb-mig-3g.20gb", "mig", 8)],
    "l4-dev/plugin": [("l4-ts4", "timeslicing", 16)],
    "h100-train/plugin": [("h100-80gb", "full", 8)],
    "a100-mig/plugin": [("a100-80gb-mig-1g.10gb", "mig", 56)],
    "a30-mig/plugin": [("a30-mig-2g.12gb", "mig", 8)],
}
ALLOWED = {"shared": {"full", "mig", "timeslicing"}, "isolated": {"full", "mig"}, "exclusive": {"full"}}
# Serving pools (full cards) and the models they host: (model id, architecture, TP, tpot ms).
SERVING = {
    "h200": ("h200-serve", 8, [("meta-llama/Llama-3.1-70B-Instruct", "llama-3.1-70b", 4, 50)]),
    "l40s": ("l40s-serve", 4, [("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b", 1, 40)]),
}
WORDS = ("atlas", "boreal", "cobalt", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "juniper",
         "krypton", "lumen", "meridian", "nimbus", "onyx", "pulsar", "quartz", "raven", "sierra", "tundra")


def dump(data: dict[str, Any], schema: str) -> str:
    body = yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=120)
    return f"# yaml-language-server: $schema={schema}\n{body}"


def make_clusters(rng: random.Random, n: int) -> list[dict[str, Any]]:
    clusters = []
    for i in range(n):
        kind = ("dra", "plugin", "plugin-karpenter")[i % 3]
        eu = i % 2 == 0
        name = f"{'eu' if eu else 'us'}-{WORDS[i % len(WORDS)]}-{i:02d}"
        plugin = "dra" if kind == "dra" else "plugin"
        karpenter = kind == "plugin-karpenter"
        templates = [t for t in TRAINING_POOLS[plugin] if not karpenter or t[1] in INSTANCE_TYPES]
        chosen = sorted(rng.sample(range(len(templates)), rng.randint(2, len(templates))))
        serve_model = "h200" if kind == "dra" else "l40s"
        c: dict[str, Any] = {
            "name": name,
            "kubernetesVersion": "1.34" if kind == "dra" else "1.33",
            "apiServer": f"https://{name}.k8s.example.internal:6443",
            "region": f"{'eu-central' if eu else 'us-east'}-{i % 3 + 1}",
            "residency": "eu" if eu else "us",
            "provisioner": "karpenter" if karpenter else "none",
            "dra": kind == "dra",
            "systemNamespaces": ["gpu-operator", "kueue-system", "argocd", "monitoring"],
            "pools": [],
        }
        for k in chosen:
            suffix, model, gpn, cut = templates[k]
            c["pools"].append(_pool(suffix, model, gpn, cut, karpenter, plugin))
        suffix, gpn, _ = SERVING[serve_model]
        serve = _pool(suffix, serve_model, gpn, {"mode": "full"}, karpenter, plugin)
        serve["serving"] = True
        c["pools"].append(serve)
        clusters.append(c)
    return clusters


def _pool(suffix: str, model: str, gpn: int, cut: dict[str, Any], karpenter: bool, plugin: str) -> dict[str, Any]:
    p: dict[str, Any] = {"name": suffix, "model": model, "nodes": 1, "gpusPerNode": gpn,
                         "cut": copy.deepcopy(cut), "_classes": POOL_CLASSES.get(f"{suffix}/{plugin}", [])}
    if karpenter:
        p["karpenter"] = {"nodeClass": "gpu-default", "instanceTypes": [INSTANCE_TYPES[model]]}
    return p


ORG = "org"


def make_departments(rng: random.Random, n_teams: int) -> tuple[list[dict[str, Any]], list[str]]:
    """A tree: the organisation > divisions > groups > (sometimes) sub-groups; teams join the
    leaves. One root, so its Cohort can lend the GPUs no team is guaranteed (KUEUE007)."""
    n_div = max(2, min(12, n_teams // 80 + 2))
    depts: list[dict[str, Any]] = [{"name": ORG, "weight": 1}]
    leaves: list[str] = []
    for d in range(n_div):
        div = f"div-{WORDS[d % len(WORDS)]}{d // len(WORDS) or ''}"
        depts.append({"name": div, "parent": ORG, "weight": rng.choice([1, 1, 2, 3])})
        for g in range(max(2, n_teams // (n_div * 12))):
            grp = f"{div}-g{g:02d}"
            entry: dict[str, Any] = {"name": grp, "parent": div, "weight": rng.choice([1, 1, 1.5, 2])}
            if rng.random() < 0.3:
                entry["defaults"] = rng.choice([{"borrow": "unlimited"}, {"borrow": 8, "lend": 0}, {"lend": "unlimited"}])
            depts.append(entry)
            if rng.random() < 0.3:
                for s in range(2):
                    sub = f"{grp}-s{s}"
                    depts.append({"name": sub, "parent": grp, "weight": 1})
                    leaves.append(sub)
            else:
                leaves.append(grp)
    return depts, leaves


def make_team(rng: random.Random, i: int, clusters: list[dict[str, Any]], leaves: list[str],
              serving_load: dict[tuple[str, str], int]) -> dict[str, Any]:
    name = f"team-{WORDS[i % len(WORDS)]}-{i:04d}"
    isolation = rng.choices(["shared", "isolated", "exclusive"], [4, 4, 2])[0]
    mine = rng.sample(clusters, rng.randint(min(4, len(clusters)), min(10, len(clusters))))
    mine.sort(key=lambda c: c["name"])
    eu_only = all(c["residency"] == "eu" for c in mine)
    data = ["internal"] + (["pii"] if eu_only and rng.random() < 0.5 else []) + (["public"] if rng.random() < 0.5 else [])
    budgets = []
    for c in mine:
        options = [cls for p in c["pools"] if not p.get("serving") for cls in p["_classes"]
                   if cls[1] in ALLOWED[isolation] and not ("pii" in data and cls[1] == "timeslicing")]  # FLEET305
        if not options:  # e.g. exclusive on a cluster of shared cuts: fall back to any full-card pool
            options = [cls for p in c["pools"] if not p.get("serving") for cls in p["_classes"] if cls[1] == "full"]
        if not options:
            continue
        for cid, _, _ in rng.sample(options, min(len(options), rng.choice([1, 1, 2, 3]))):
            b: dict[str, Any] = {"cluster": c["name"], "class": cid, "guaranteed": rng.choice([1, 2, 4, 4, 8, 8, 16])}
            r = rng.random()
            if r < 0.3:
                b["borrow"] = rng.choice([0, 2, 4])
            elif r < 0.4:
                b["borrow"] = "unlimited"
            if rng.random() < 0.4:
                b["lend"] = rng.choice([0, b["guaranteed"] // 2, b["guaranteed"]])
            budgets.append(b)
    used = sorted({b["cluster"] for b in budgets})
    namespaces = [{"name": f"{name}-train", "clusters": used}]
    for extra, p in (("eval", 0.7), ("dev", 0.6)):
        if rng.random() < p:
            namespaces.append({"name": f"{name}-{extra}", "clusters": sorted(rng.sample(used, rng.randint(1, len(used))))})
    spec: dict[str, Any] = {
        "owners": [f"@org/{name}"],
        "groups": [f"org:{name}"],
        "department": rng.choice(leaves),
        "isolation": isolation,
        "dataClasses": data,
    }
    if rng.random() < 0.3:
        spec["priority"] = rng.choice(["production", "preemptible", "batch"])
    if rng.random() < 0.2:
        spec["fairShareWeight"] = rng.choice([2, 0.5, 3])
    spec["namespaces"] = namespaces
    spec["budgets"] = budgets
    if rng.random() < 0.125:
        c = next(c for c in mine if c["name"] in used)
        pool = next(p for p in c["pools"] if p.get("serving"))
        model, arch, tp, tpot = SERVING[pool["model"]][2][0]
        reps = {"min": 2, "max": rng.choice([2, 4])}
        dep: dict[str, Any] = {
            "name": f"{name}-llm", "cluster": c["name"], "pool": pool["name"], "model": model,
            "architecture": arch, "dataClass": "internal", "tensorParallel": tp, "replicas": reps,
            "maxModelLen": 8192, "sla": {"tpotP95Ms": tpot, "concurrentSequences": 16},
            # shared by the replicas: an RWX class (OPS008)
            "cache": {"size": "400Gi" if tp > 1 else "100Gi", "storageClass": "shared-rwx"},
            "secrets": {"hubToken": {"name": "hf-token", "key": "token"}},  # gated repositories (SERVE019)
        }
        if reps["max"] > reps["min"]:
            dep["autoscaling"] = {"kind": "keda", "waitingRequestsTarget": 5,
                                  "prometheusAddress": "http://prometheus-operated.monitoring.svc:9090"}
        if rng.random() < 0.5:
            dep["expose"] = {"gateway": "inference-gateway", "gatewayNamespace": "gateway-system"}
        spec["servingNamespace"] = f"{name}-serving"
        spec["serving"] = [dep]
        serving_load[(c["name"], pool["name"])] += reps["max"] * tp
    return {"apiVersion": "gpupolicy.dev/v1alpha1", "kind": "Team", "metadata": {"name": name}, "spec": spec}


def size_pools(clusters: list[dict[str, Any]], teams: list[dict[str, Any]],
               serving_load: dict[tuple[str, str], int], rng: random.Random) -> None:
    """Nodes per pool: enough for every class it carries (20-50% headroom)."""
    need: dict[tuple[str, str], int] = {}
    for t in teams:
        for b in t["spec"]["budgets"]:
            need[(b["cluster"], b["class"])] = need.get((b["cluster"], b["class"]), 0) + b["guaranteed"]
    for c in clusters:
        # a reserved pool no deployment uses holds GPUs back for nothing (SERVE402): not generated
        c["pools"] = [p for p in c["pools"] if not p.get("serving") or serving_load.get((c["name"], p["name"]))]
        for p in c["pools"]:
            if p.get("serving"):
                gpus = serving_load.get((c["name"], p["name"]), 0)
                nodes = math.ceil(gpus / p["gpusPerNode"]) + 1
            else:
                nodes = max([math.ceil(need.get((c["name"], cid), 0) / per) for cid, _, per in p["_classes"]] + [1])
                nodes = math.ceil(nodes * rng.uniform(1.2, 1.5))
            p["nodes"] = min(nodes, 10_000)
            del p["_classes"]


def reachable_borrowing(depts: list[dict[str, Any]], teams: list[dict[str, Any]]) -> None:
    """Lower borrowing limits (set or inherited) to what the other queues of the class can lend."""
    by_name = {d["name"]: d for d in depts}

    def resolved(field: str, b: dict[str, Any], dept: str, fleet: Any) -> Any:
        if field in b:
            return b[field]
        seen: set[str] = set()
        cur: str | None = dept
        while cur is not None and cur in by_name and cur not in seen:
            seen.add(cur)
            if field in by_name[cur].get("defaults", {}):
                return by_name[cur]["defaults"][field]
            cur = by_name[cur].get("parent")
        return fleet

    lendable: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for t in teams:
        for b in t["spec"]["budgets"]:
            lend = resolved("lend", b, t["spec"]["department"], "unlimited")
            g = b["guaranteed"]
            lendable.setdefault((b["cluster"], b["class"]), []).append(
                (t["metadata"]["name"], g if lend == "unlimited" else min(lend, g)))
    for t in teams:
        for b in t["spec"]["budgets"]:
            borrow = resolved("borrow", b, t["spec"]["department"], "unlimited")
            others = sum(n for team, n in lendable[(b["cluster"], b["class"])] if team != t["metadata"]["name"])
            if borrow != "unlimited" and borrow > others:
                b["borrow"] = others


def department_caps(depts: list[dict[str, Any]], teams: list[dict[str, Any]]) -> None:
    """Caps on the divisions (the top level) for their busiest class: guarantees + 25%."""
    parent = {d["name"]: d.get("parent") for d in depts}

    def root(name: str) -> str:  # the division: the level under the organisation
        while parent.get(name) not in (None, ORG):
            name = parent[name]  # type: ignore[assignment]
        return name

    totals: dict[str, dict[tuple[str, str], int]] = {}
    for t in teams:
        r = root(t["spec"]["department"])
        for b in t["spec"]["budgets"]:
            key = (b["cluster"], b["class"])
            totals.setdefault(r, {})[key] = totals.get(r, {}).get(key, 0) + b["guaranteed"]
    for d in depts:
        if d.get("parent") == ORG and d["name"] in totals:
            (cluster, cid), total = max(totals[d["name"]].items(), key=lambda kv: (kv[1], kv[0]))
            d["caps"] = [{"cluster": cluster, "class": cid, "max": math.ceil(total * 1.25)}]


def generate(n_teams: int, n_clusters: int, out: Path, seed: int = 1) -> Path:
    rng = random.Random(seed)
    clusters = make_clusters(rng, n_clusters)
    depts, leaves = make_departments(rng, n_teams)
    serving_load: dict[tuple[str, str], int] = {}
    for c in clusters:
        for p in c["pools"]:
            if p.get("serving"):
                serving_load[(c["name"], p["name"])] = 0
    teams = [make_team(rng, i, clusters, leaves, serving_load) for i in range(n_teams)]
    size_pools(clusters, teams, serving_load, rng)
    reachable_borrowing(depts, teams)
    department_caps(depts, teams)
    fleet = {
        "apiVersion": "gpupolicy.dev/v1alpha1",
        "kind": "Fleet",
        "metadata": {"name": "synthetic", "description": f"{n_teams} teams on {n_clusters} clusters (seed {seed})"},
        "spec": {
            "platform": {"owners": ["@org/ml-platform"], "groups": ["org:ml-platform"]},
            "versions": {"kueue": "v0.19.2", "gpuOperator": "v26.7.0", "draDriver": "0.4.1",
                         "vllmImage": "vllm/vllm-openai:v0.11.0"},
            "gitops": {"repoUrl": "https://github.com/example/gpu-platform.git", "revision": "main", "path": "out",
                       "argocdNamespace": "argocd", "project": "gpupolicy"},
            "clusters": clusters,
            "departments": depts,
            "priorities": [
                {"name": "production", "value": 1000, "description": "Launch-critical jobs."},
                {"name": "standard", "value": 100, "default": True},
                {"name": "batch", "value": 50},
                {"name": "preemptible", "value": 10, "description": "Scavenger work; first to go."},
            ],
            "dataClasses": [{"name": "public"}, {"name": "internal"},
                            {"name": "pii", "description": "Personal data; stays in the EU.", "residency": ["eu"]}],
            "admission": {"requiredLabels": ["gpupolicy.dev/team", "gpupolicy.dev/model", "gpupolicy.dev/data-class"],
                          "modes": {"requiredLabels": "Deny", "queueName": "Deny", "servingIsolation": "Deny",
                                    "backstop": "Deny"}},  # OPS006
            "defaults": {"budget": {"guaranteed": 0, "lend": "unlimited"}, "priority": "standard"},
        },
    }
    policies = out / "policies"
    if policies.exists():
        shutil.rmtree(policies)
    (policies / "teams").mkdir(parents=True)
    (policies / "fleet.yaml").write_text(dump(fleet, "../schemas/fleet.schema.json"))
    for t in teams:
        (policies / "teams" / f"{t['metadata']['name']}.yaml").write_text(dump(t, "../../schemas/team.schema.json"))
    return policies


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--teams", type=int, required=True)
    ap.add_argument("--clusters", type=int, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=1)
    ns = ap.parse_args()
    policies = generate(ns.teams, ns.clusters, ns.out, ns.seed)
    print(f"wrote {policies} ({ns.teams} teams, {ns.clusters} clusters)")


if __name__ == "__main__":
    main()

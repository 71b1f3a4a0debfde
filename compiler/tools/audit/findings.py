"""Findings: the evidence checked against the policy of the same revision."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from compiler.policy.labels import LABEL_POOL, LABEL_PURPOSE, LABEL_QUEUE, SERVING_TAINT_KEY
from compiler.tools.audit.context import PolicyView
from compiler.tools.audit.ledger import Row
from compiler.tools.cluster_import.quantities import shown


@dataclass(frozen=True, slots=True)
class Finding:
    kind: str
    subject: str  # namespace/name
    message: str


def workload_findings(r: Row, view: PolicyView) -> Iterable[Finding]:
    w = r.facts
    assert w is not None
    missing = [k for k in view.required_labels if k not in w.labels]
    if missing:
        yield Finding("missing-labels", r.key, f"no {', '.join(missing)}: the ledger cannot say who or what it was")
    if not view.loaded:
        return
    owner = view.ns_team.get(r.namespace)
    if r.namespace in view.serving_ns:
        yield Finding("serving-through-kueue", r.key, f"a Workload in serving namespace {r.namespace}: serving "
                      "belongs on reserved serving pools, outside Kueue")
    elif owner is None:
        yield Finding("unknown-namespace", r.key, f"namespace {r.namespace} is no team's training namespace on "
                      f"{view.cluster}")
    if w.team and owner and w.team != owner:
        yield Finding("team-mismatch", r.key, f"labelled team {w.team} in team {owner}'s namespace")
    if r.gpu_class and r.admitted is not None and r.team and (r.team, r.gpu_class) not in view.budgets:
        yield Finding("no-budget", r.key, f"admitted on {r.gpu_class} ({shown(r.gpus)}), for which team {r.team} has no "
                      f"budget on {view.cluster}")
    dc = w.data_class
    if dc:
        if dc not in view.data_residency:
            yield Finding("unknown-data-class", r.key, f"data class {dc} is not declared in the fleet")
        else:
            allowed = view.data_residency[dc]
            if allowed is not None and r.residency not in allowed:
                yield Finding("residency", r.key, f"data class {dc} may be handled in {', '.join(allowed)} only; "
                              f"cluster {r.cluster} is in {r.residency}")
        if r.team in view.team_data_classes and dc not in view.team_data_classes[r.team]:
            yield Finding("data-class-not-declared", r.key, f"team {r.team} does not declare data class {dc}")


def _pod_pool(spec: dict[str, Any]) -> str | None:
    pool = (spec.get("nodeSelector") or {}).get(LABEL_POOL)
    return str(pool) if pool else None


def is_gpu_pod(pod: dict[str, Any]) -> bool:
    return _gpu(pod.get("spec") or {})


def _gpu(spec: dict[str, Any]) -> bool:
    for c in spec.get("containers") or []:
        res = c.get("resources") or {}
        for k in {**(res.get("limits") or {}), **(res.get("requests") or {})}:
            if str(k).startswith(("nvidia.com/", "gpupolicy.dev/")):
                return True
    return bool(spec.get("resourceClaims"))


def pod_findings(pods: Iterable[dict[str, Any]], view: PolicyView, workload_owners: set[str]) -> Iterable[Finding]:
    """GPU pods not controlled by a queued Workload; serving pods on training pools and the reverse."""
    for pod in pods:
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        if not _gpu(spec):
            continue
        ns, name = str(meta.get("namespace") or ""), str(meta.get("name"))
        key = f"{ns}/{name}"
        labels = meta.get("labels") or {}
        serving = ns in view.serving_ns or labels.get(LABEL_PURPOSE) == "serving"
        pool = _pod_pool(spec)
        owners = {str(o.get("uid")) for o in meta.get("ownerReferences") or [] if isinstance(o, dict)}
        if not serving and not (owners & workload_owners) and LABEL_QUEUE not in labels:
            yield Finding("unqueued-gpu-pod", key, "requests GPUs but no queued Workload controls it")
        if serving and pool in view.training_pools:
            yield Finding("serving-on-training-pool", key, f"serving pod selects training pool {pool}")
        tolerates = any(t.get("key") == SERVING_TAINT_KEY for t in spec.get("tolerations") or [] if isinstance(t, dict))
        if not serving and (pool in view.serving_pools or tolerates):
            yield Finding("training-on-serving-pool", key, f"non-serving pod {'selects serving pool ' + str(pool) if pool else 'tolerates the serving taint'}")

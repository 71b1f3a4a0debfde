"""Relations across a MultiKueue manager and its workers, checked from the side the older rules left
open (issue 22, docs/relations.md).

A job is submitted to the manager, admitted there against its queue, and dispatched to one of the
workers its MultiKueueConfig lists; the worker admits the copy again, in the same namespace and
LocalQueue, and runs it (Kueue v0.19.2 ``site/content/en/docs/concepts/multikueue.md``). So:

- FLEET403: the data a team's jobs carry is processed on whichever worker takes them. Every worker
  of a manager the team queues on must be in a residency each of the team's data classes allows
  (FLEET006 checks the team's own budgets; this checks the fleet's dispatch list, where a worker
  is added, before any team file follows GITOPS004's hint to mirror its namespaces there).
- DRA401: the manager admits a job against the ResourceClaimTemplate its pods name and holds a
  template per DeviceClass of its workers (``compiler.policy.dra_classes``). A template named after
  a DeviceClass that one worker declares must mean the same GPUs on every worker that runs the
  class: a worker with the class but without that DeviceClass cannot run the job (Kueue syncs
  neither templates nor DeviceClasses to workers, ``site/.../tasks/manage/setup_dra.md``), and one
  whose DeviceClass of that name counts against another class runs it on other GPUs. DRA014
  checks that each template exists on *some* worker; this checks *each* worker that could run it.
- DRA402: the way back: a template a worker holds for a team queued on its manager, of a class
  the team budgets on the manager too, that the manager lacks (a larger claim than the manager's
  budget reaches): jobs naming it are refused at the manager, so the worker's larger budget
  serves no claim of that size.
"""

from __future__ import annotations

from typing import Iterator

from compiler.diagnostics import Diagnostic, Rule, Scope, Severity, checks, define
from compiler.dra.accounting import dra_active, dra_counts
from compiler.model.fleet import Cluster
from compiler.policy.dra_classes import DraClass, claim_template_name, team_shapes
from compiler.policy.graph import Policy, Team
from compiler.policy.multikueue_topology import workers_of
from compiler.validate.related import related

WORKER_RESIDENCY = define(
    "FLEET403", "A MultiKueue manager dispatches a team's jobs only to workers whose residency every data class of "
    "the team allows (the worker that takes a job processes its data).",
    "# pii allows [eu]; team llm (pii) queues on hub\n- name: hub\n  multikueue: {role: manager, workers: [east]}"
    "   # east: residency eu",
    "# pii allows [eu]; team llm (pii) queues on hub\n- name: hub\n  multikueue: {role: manager, workers: [east, "
    "us-west]}   # us-west: residency us", scope=Scope.POLICY)
TEMPLATE_ON_WORKERS = define(
    "DRA401", "A ResourceClaimTemplate a MultiKueue manager holds names a DeviceClass that every worker running its "
    "GPU class declares, counting against the same class (else the job cannot run there, or runs on other GPUs).",
    "east: deviceClasses [{name: hopper, class: h100-80gb}]; west: deviceClasses [{name: hopper, class: h100-80gb}]",
    "east: deviceClasses [{name: hopper, class: h100-80gb}]; west: h100-80gb pools, no DeviceClass hopper",
    Severity.WARNING, scope=Scope.POLICY)
TEMPLATE_ON_MANAGER = define(
    "DRA402", "A ResourceClaimTemplate a MultiKueue worker holds for a team queued on its manager also exists on the "
    "manager (jobs are submitted there; a claim the manager has no template for is never admitted).",
    "budgets:\n- {cluster: hub, class: h100-80gb, guaranteed: 8}\n- {cluster: east, class: h100-80gb, guaranteed: 8}",
    "budgets:\n- {cluster: hub, class: h100-80gb, guaranteed: 2, borrow: 0}\n- {cluster: east, class: h100-80gb, "
    "guaranteed: 8}   # east allows 8-GPU claims, hub only 2", Severity.WARNING, scope=Scope.POLICY)

RULES: tuple[Rule, ...] = (WORKER_RESIDENCY, TEMPLATE_ON_WORKERS, TEMPLATE_ON_MANAGER)

MAX_NAMED = 5  # teams named in one message; the rest are counted


def _managers(policy: Policy) -> Iterator[tuple[int, Cluster, list[tuple[int, Cluster]]]]:
    """(index, manager, [(index in its workers list, worker)]) for each manager with declared workers."""
    for ci, c in enumerate(policy.fleet.spec.clusters):
        if not workers_of(c) or c.multikueue is None:
            continue
        seen: set[str] = set()
        workers = []
        for wi, w in enumerate(c.multikueue.workers):
            if w != c.name and w not in seen and w in policy.clusters:  # others: GITOPS001, FLEET002
                seen.add(w)
                workers.append((wi, policy.clusters[w]))
        yield ci, c, workers


def queues_on(team: Team, cluster: str) -> bool:
    """The team has a LocalQueue on ``cluster``: a training namespace and a budget there."""
    spec = team.model.spec
    return any(cluster in ns.clusters for ns in spec.namespaces) and any(b.cluster == cluster for b in spec.budgets)


def _manager_budget(team: Team, cluster: str) -> tuple[str | int, ...]:
    i = next(i for i, b in enumerate(team.model.spec.budgets) if b.cluster == cluster)
    return ("spec", "budgets", i, "cluster")


def _names(teams: list[str]) -> str:
    more = len(teams) - MAX_NAMED
    return ", ".join(teams[:MAX_NAMED]) + (f" and {more} more" if more > 0 else "")


@checks(WORKER_RESIDENCY)
def check_worker_residency(policy: Policy) -> Iterator[Diagnostic]:
    allowed = {d.name: d.residency for d in policy.fleet.spec.data_classes}
    for ci, manager, workers in _managers(policy):
        queued = [t for t in policy.teams if queues_on(t, manager.name)]
        for wi, worker in workers:
            by_class: dict[str, list[Team]] = {}
            for t in queued:
                for dc in t.model.spec.data_classes:
                    zones = allowed.get(dc)
                    if zones is not None and worker.residency not in zones:
                        by_class.setdefault(dc, []).append(t)
            for dc, teams in sorted(by_class.items()):
                zones = allowed[dc] or []
                where = policy.fleet_src.locate(("spec", "clusters", ci, "multikueue", "workers", wi))
                yield WORKER_RESIDENCY.diag(
                    f"manager {manager.name!r} dispatches the jobs of {_names([t.name for t in teams])} (data class "
                    f"{dc!r}, allowed in {', '.join(zones)}) to worker {worker.name!r} (residency "
                    f"{worker.residency!r})", where,
                    hint=f"dispatch to workers in {', '.join(zones)} only (a separate manager for the others), or "
                    f"queue teams handling {dc!r} elsewhere")
                for t in teams:
                    yield related(WORKER_RESIDENCY, f"team {t.name!r} handles data class {dc!r} and queues on manager "
                                  f"{manager.name!r}, which dispatches to {worker.name!r} (residency "
                                  f"{worker.residency!r})", t.src.locate(_manager_budget(t, manager.name)),
                                  policy.fleet_src.path)


def _dra_managers(policy: Policy) -> Iterator[tuple[Cluster, list[tuple[int, Cluster]]]]:
    """Managers that count DRA claims for their workers (GITOPS003 keeps ``dra`` equal across them)."""
    for _, c, workers in _managers(policy):
        if dra_counts(c) and not dra_active(c):
            yield c, [(wi, w) for wi, w in workers if dra_active(w)]


def _device_class_at(policy: Policy, cluster: Cluster, name: str) -> tuple[str | int, ...]:
    ci = policy.fleet.spec.clusters.index(cluster)
    k = next((k for k, d in enumerate(cluster.device_classes) if d.name == name), None)
    if k is None:
        return ("spec", "clusters", ci, "deviceClasses" if cluster.device_classes else "name")
    return ("spec", "clusters", ci, "deviceClasses", k, "class")


@checks(TEMPLATE_ON_WORKERS)
def check_templates_on_workers(policy: Policy) -> Iterator[Diagnostic]:
    for manager, workers in _dra_managers(policy):
        # (worker, DeviceClass, the class it counts against there) -> (the manager's DeviceClass, the worker's, teams)
        found: dict[tuple[str, str, str], tuple[DraClass, DraClass | None, list[str]]] = {}
        for team in policy.teams:
            held = {claim_template_name(dc.name, n): (dc, n) for dc, n in team_shapes(policy, team, manager.name)}
            for _, wc in workers:
                shapes = team_shapes(policy, team, wc.name)
                there = {claim_template_name(dc.name, n): dc for dc, n in shapes}
                runs = {(dc.budget_class, n) for dc, n in shapes}
                for name, (dc, n) in sorted(held.items()):
                    own = there.get(name)
                    if (own is None and (dc.budget_class, n) in runs) or (
                            own is not None and own.budget_class != dc.budget_class):
                        entry = found.setdefault((wc.name, dc.name, own.budget_class if own else ""), (dc, own, []))
                        if team.name not in entry[2]:
                            entry[2].append(team.name)
        for (w, name, _), (dc, own, teams) in sorted(found.items()):
            worker = policy.clusters[w]
            if own is None:
                what = (f"worker {w!r} runs {dc.budget_class} claims of that size but declares no DeviceClass "
                        f"{name!r}: jobs naming its templates never run there, though {manager.name!r} counts "
                        f"{w!r}'s GPUs")
                hint = f"declare DeviceClass {name!r} (class {dc.budget_class}) on {w!r} too, or on no worker"
            else:
                what = (f"on worker {w!r} DeviceClass {name!r} counts against {own.budget_class}: the same template "
                        "asks for other GPUs there")
                hint = f"give the two DeviceClasses different names, or make {w!r}'s count against {dc.budget_class}"
            yield TEMPLATE_ON_WORKERS.diag(
                f"manager {manager.name!r} admits claims of DeviceClass {name!r} ({dc.budget_class}) for "
                f"{_names(teams)}; {what}", policy.fleet_src.locate(_device_class_at(policy, worker, name)),
                hint=hint)


@checks(TEMPLATE_ON_MANAGER)
def check_templates_on_manager(policy: Policy) -> Iterator[Diagnostic]:
    for manager, workers in _dra_managers(policy):
        for team in policy.teams:
            if not queues_on(team, manager.name):
                continue
            held = {claim_template_name(dc.name, n) for dc, n in team_shapes(policy, team, manager.name)}
            on_manager = {b.class_ for b in team.model.spec.budgets if b.cluster == manager.name}
            for _, w in workers:
                missing: dict[str, list[str]] = {}
                for dc, n in team_shapes(policy, team, w.name):
                    name = claim_template_name(dc.name, n)
                    if dc.budget_class in on_manager and name not in held:
                        missing.setdefault(dc.budget_class, []).append(name)
                for cls, names in sorted(missing.items()):
                    budget = next(e for e in policy.allocation.for_team(team.name)
                                  if e.cluster == w.name and e.gpu_class == cls)  # its shapes come from this entry
                    yield TEMPLATE_ON_MANAGER.diag(
                        f"team {team.name!r}: worker {w.name!r} holds ResourceClaimTemplates {', '.join(names)} "
                        f"that manager {manager.name!r} lacks (its {cls} budget reaches smaller claims): jobs "
                        f"submitted to {manager.name!r} cannot name them", team.src.locate(budget.path),
                        hint=f"raise the guarantee or borrowing limit of the {cls} budget on {manager.name!r}, or "
                        f"lower this one")

"""The fleet's Cohorts kept a cluster at a time.

The cluster passes run on every run (the Cohorts read which departments have queues, and the
spare quota's holder the allocation), and at 5,000 teams x 20 clusters they render ~13,400
objects, 12,800 of them Cohorts: lowering, counting, rendering and verifying them was ~0.4 s of
this process after a one-team edit, for a Cohort or two that changed. A Cohort reads the fleet
alone, but for the spare quota of the department that holds it (``compiler.lower.kueue.cohort``),
so a cluster's Cohorts other than the holder's are a function of the fleet and of the names of
the departments that get one (``cohort_plan``): kept under those (kind ``cohorts``) with what the
run needs of them, their files, their part of the inventory and their verify findings and
statistics. The holder's Cohort, whose quota follows every team's guarantee, is lowered each run
with the other cluster passes' objects. A run that hands back objects (``diff``, ``explain``, the
tests' ``compile_policies``) lowers every Cohort, as without a store.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from compiler.cache.records import DiagRecord, StatsRecord, diag_in, diag_out
from compiler.cache.store import content_digest, digest
from compiler.diagnostics import Diagnostic
from compiler.emit.tree import render_manifest
from compiler.lower import CLUSTER_PASSES, lower_cluster
from compiler.lower.kueue import cohort, cohort_plan, lower_cohorts, spare_groups
from compiler.model.inventory import Inventory
from compiler.model.manifest import Manifest
from compiler.pipeline.run import Run
from compiler.pipeline.tables import verify_objects
from compiler.policy.graph import Policy


class KeptCohorts(NamedTuple):
    """The kept Cohorts of every cluster: their files' digests and the blob holding each file's
    bytes, their findings and statistics (their part of the inventory is merged into the run's
    when read)."""

    digests: dict[str, str]
    homes: dict[str, str]
    diags: list[Diagnostic]
    stats: list[StatsRecord]


def fleet_lowered(run: Run, policy: Policy, clusters: list[str]) -> tuple[list[Manifest], dict[str, list[str]]]:
    """Every cluster pass's objects, in the clusters' order, but the Cohorts left to
    ``kept_cohorts`` (returned: cluster -> the departments whose Cohorts it keeps; none without a
    store, or when the run hands back objects)."""
    if run.store.off or run.objects or run.shared is not None:
        return [m for c in clusters for m in lower_cluster(policy, c)], {}
    fresh: list[Manifest] = []
    left: dict[str, list[str]] = {}
    for c in clusters:
        used, holder = cohort_plan(policy, c)
        left[c] = [name for name in used if name != holder]
        for p in CLUSTER_PASSES:
            if p is not lower_cohorts:
                fresh += p(policy, c)
            elif holder in used:
                fresh.append(cohort(policy, c, holder, spare_groups(policy, c)))
    return fresh, left


def kept_cohorts(run: Run, policy: Policy, left: dict[str, list[str]], inventory: Inventory) -> KeptCohorts:
    """The Cohorts ``fleet_lowered`` left, a cluster at a time from the store when it holds the
    same departments' (keyed by the run's options and compiler, the fleet file and the names),
    else lowered, rendered and verified (through a table per cluster, as ``verify_objects``) and
    kept; their part of the inventory merged into ``inventory``. The entry holds the files'
    digests; their bytes are a blob under the same key, which the run's record names as their
    home (``RunRecord.homes``), so a run neither hashes nor stores them again (12,700 files at
    5,000 teams: ~0.05 s of this process after the rules' process had finished)."""
    digests: dict[str, str] = {}
    homes: dict[str, str] = {}
    diags: list[Diagnostic] = []
    stats: list[StatsRecord] = []
    for c, names in left.items():
        if not names:
            continue
        key = digest(run.fp, run.fleet_key or "", "cohorts", c, *names)
        hit = run.store.get("cohorts", key)
        if not (isinstance(hit, tuple) and len(hit) == 5):
            hit = _lowered(run, policy, c, names, key)
            run.store.put("cohorts", key, hit)
        rendered, record, rows, found, counted = hit
        inventory.merge(Inventory.from_record(record, functools.partial(list, rows)))
        digests.update(rendered)
        homes.update(dict.fromkeys(rendered, key))
        run.store.used.add(("blob", key))
        diags += [diag_in(d) for d in found]
        stats += counted
    return KeptCohorts(digests, homes, diags, stats)


def _lowered(run: Run, policy: Policy, cluster: str, names: list[str], key: str
             ) -> tuple[dict[str, str], object, list[object], list[DiagRecord], list[StatsRecord]]:
    """A cluster's kept Cohorts lowered, rendered (the bytes stored and held under ``key``) and
    verified: the entry ``kept_cohorts`` keeps."""
    objects = [cohort(policy, cluster, name) for name in names]
    rendered = {m.relpath: render_manifest(m) for m in objects}
    run.store.put("blob", key, rendered, compress=True)
    run.keep(key, rendered)
    counted: list[StatsRecord] = []
    found = (verify_objects(run, objects, rendered, counted, digest(run.fp, "cohorts", cluster))
             if run.verifier is not None else [])
    inventory = Inventory.of(objects)
    digests = {rel: content_digest(data) for rel, data in rendered.items()}
    return digests, inventory.to_record(), list(inventory.files), [diag_out(d) for d in found], counted

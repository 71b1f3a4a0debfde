"""DRA rules DRA002-DRA013: every DeviceClass on a DRA cluster is proven against the devices the
cluster's pools will publish (``compiler.dra.inventory``) with the project's CEL engine, plus the
version, gate and Kueue limits the DRA path depends on. DRA001 (Kubernetes < 1.34) lives in
``compiler.validate.semantic``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterator

from compiler.diagnostics import Diagnostic, Location, Rule, Scope, Severity, checks, define
from compiler.dra.accounting import dra_active, dra_counts, k8s_gate
from compiler.dra.inventory import Inventory, policy_inventory
from compiler.dra.selectors import DRIVER_CLASSES, class_selector
from compiler.load.source import YamlPath
from compiler.model.fleet import Cluster
from compiler.policy.cuts import cut_mode, mig_cut
from compiler.policy.dra_classes import claim_template_name, device_class_mappings, team_shapes
from compiler.policy.graph import Policy
from compiler.policy.multikueue_topology import workers_of
from compiler.policy.versions import kueue_version, version_tuple
from compiler.validate.cel_types import has_type_errors

if TYPE_CHECKING:
    from compiler.dra.proof import ClassMatch

NO_MATCH = define(
    "DRA002", "A DeviceClass selector matches at least one device the cluster's pools publish.",
    "selectors: [\"device.attributes['gpu.nvidia.com'].profile == '3g.40gb'\"]   # a100-mig cut all-balanced",
    "selectors: [\"device.attributes['gpu.nvidia.com'].profile == '3g.20gb'\"]   # a 40GB profile; none exist",
    scope=Scope.FLEET)
OVERLAP = define(
    "DRA003", "A DeviceClass matches only devices of its own GPU class (never another class's devices).",
    "{name: h100-sxm, class: h100-80gb, selectors: [\"...productName == 'NVIDIA H100 80GB HBM3'\"]}",
    "{name: big-gpus, class: h100-80gb, selectors: [\"...memory.compareTo(quantity('40Gi')) > 0\"]}  # H200 too",
    scope=Scope.FLEET)
MIG_PARENT = define(
    "DRA004", "A full-GPU DeviceClass does not reach GPUs cut into MIG, which some driver releases list "
    "whole beside their slices (dra-driver-nvidia-gpu#719).",
    "# h100-80gb full pool, a100-80gb MIG pool: different products",
    "# a100-80gb full pool and a100-80gb MIG pool on one DRA cluster", Severity.WARNING, scope=Scope.FLEET)
BAD_CEL = define(
    "DRA005", "Every DeviceClass selector is a CEL expression that compiles and returns a bool.",
    "- \"device.attributes['gpu.nvidia.com'].type == 'gpu'\"",
    "- \"device.attributes['gpu.nvidia.com'].type = 'gpu'\"", scope=Scope.FLEET)
RUNTIME = define(
    "DRA006", "A selector evaluates without error on every published device (an error aborts the "
    "allocation): guard reads of attributes some devices lack.",
    "- \"device.attributes['gpu.nvidia.com'].type == 'mig' && device.attributes['gpu.nvidia.com'].profile == '1g.10gb'\"",
    "- \"device.attributes['gpu.nvidia.com'].profile == '1g.10gb'\"   # full GPUs have no profile", scope=Scope.FLEET)
UNPROVEN = define(
    "DRA007", "A selector depends only on what the fleet file fixes (model, cut, driver), not on serials, "
    "PCI addresses or the board variant.",
    "- \"device.attributes['gpu.nvidia.com'].productName in ['NVIDIA H100 80GB HBM3', 'NVIDIA H100 PCIe']\"",
    "- \"device.attributes['gpu.nvidia.com'].uuid == 'GPU-2fa8...'\"", Severity.WARNING, scope=Scope.FLEET)
CUSTOM = define(
    "DRA008", "A fleet DeviceClass has its own name and counts against a GPU class of its DRA cluster that "
    "Kueue can queue.",
    "deviceClasses:\n- {name: h100-sxm, class: h100-80gb, selectors: [...]}",
    "deviceClasses:\n- {name: gpu.nvidia.com, class: h100-81gb, selectors: [...]}", scope=Scope.FLEET)
KUEUE_LIMITS = define(
    "DRA010", "Kueue accepts at most 16 deviceClassMappings with at most 8 DeviceClasses each.",
    "# 5 queued GPU classes on the cluster", "# 17 queued GPU classes on one DRA cluster", scope=Scope.POLICY)
SHARED_CUT = define(
    "DRA011", "Time-slicing and MPS cuts are not lowered to DRA (claims share a whole device; Kueue would "
    "count the claim, not the replicas).",
    "cut: {mode: mig, layout: all-1g.10gb}   # dra: true",
    "cut: {mode: timeslicing, replicas: 4}   # dra: true", Severity.WARNING, scope=Scope.FLEET)
DYNAMIC_MIG = define(
    "DRA012", "The DRA driver's DynamicMIG gate is not combined with static MIG layouts (it destroys "
    "partitions it did not create) and has DRAPartitionableDevices below Kubernetes 1.36.",
    "featureGates: {draDriver: {DynamicMIG: false}}   # pools cut with mode: mig",
    "featureGates: {draDriver: {DynamicMIG: true}}    # pools cut with mode: mig", scope=Scope.FLEET)
KUEUE_VERSION = define(
    "DRA013", "A DRA cluster runs Kueue v0.18 or newer (DRA quota on by default, resource.k8s.io/v1).",
    "versions: {kueue: v0.19.2}", "versions: {kueue: v0.14.0}   # dra: true", scope=Scope.FLEET)

UNDISPATCHABLE = define(
    "DRA014", "Every ResourceClaimTemplate a MultiKueue manager holds for a team also exists on one of its "
    "workers: a job naming it is admitted on the manager, and a worker without it refuses the job.",
    "hub: llm guaranteed 8 h100 (templates -1..-8); east: llm guaranteed 8 (templates -1..-8)",
    "hub: llm guaranteed 8 h100 (templates -1..-8); east: llm guaranteed 2 (templates -1, -2)",
    Severity.WARNING, scope=Scope.POLICY)


RULES: tuple[Rule, ...] = (
    NO_MATCH, OVERLAP, MIG_PARENT, BAD_CEL, RUNTIME, UNPROVEN, CUSTOM, KUEUE_LIMITS, SHARED_CUT, DYNAMIC_MIG,
    KUEUE_VERSION, UNDISPATCHABLE,
)

KUEUE_MAX_MAPPINGS, KUEUE_MAX_CLASSES = 16, 8


@checks(NO_MATCH, OVERLAP, MIG_PARENT, BAD_CEL, RUNTIME, UNPROVEN, CUSTOM, SHARED_CUT, DYNAMIC_MIG, KUEUE_VERSION)
def check_dra_fleet(policy: Policy) -> Iterator[Diagnostic]:
    """What the fleet file alone decides: versions and gates, the fleet's DeviceClasses, and every
    DeviceClass proven against the devices the cluster's pools publish (one pass per cluster,
    whose proofs several rules share). Fleet scope: a store keeps the verdict by the fleet's bytes,
    so a team's edit does not prove the classes again (``compiler.validate.driver.run_checks``)."""
    for ci, c in enumerate(policy.fleet.spec.clusters):
        base: YamlPath = ("spec", "clusters", ci)
        if not dra_active(c) and dra_counts(c):  # a MultiKueue manager of DRA workers: it only counts
            yield from _versions(policy, c, base)
            continue
        if not dra_active(c):
            if c.device_classes:
                yield CUSTOM.diag(f"cluster {c.name!r} declares deviceClasses but generates no DRA objects "
                                  f"(dra: {str(c.dra).lower()}, Kubernetes {c.kubernetes_version})",
                                  policy.fleet_src.locate(base + ("deviceClasses",)),
                                  hint="set dra: true on a cluster with Kubernetes >= 1.34, or drop them")
            continue
        yield from _versions(policy, c, base)
        bad = set()
        for d in _custom_refs(policy, c, base):
            bad.add(d.path)
            yield d
        yield from _prove(policy, c, base, bad)


@checks(KUEUE_LIMITS, UNDISPATCHABLE)
def check_dra_policy(policy: Policy) -> Iterator[Diagnostic]:
    """What the teams' budgets shape: Kueue's limits on the mappings, and templates a MultiKueue
    manager holds that no worker has."""
    for ci, c in enumerate(policy.fleet.spec.clusters):
        base: YamlPath = ("spec", "clusters", ci)
        if not dra_active(c) and dra_counts(c):
            yield from _lowered(policy, c, base)
            yield from _dispatchable(policy, c)
        elif dra_active(c):
            yield from _lowered(policy, c, base)


def _loc(policy: Policy, path: YamlPath) -> Location:
    return policy.fleet_src.locate(path)


def _versions(policy: Policy, c: Cluster, base: YamlPath) -> Iterator[Diagnostic]:
    kueue = kueue_version(policy, c)
    if (version_tuple(kueue) or (0, 0, 0)) < (0, 18, 0):
        where = base + ("versions", "kueue") if c.versions.kueue else ("spec", "versions", "kueue")
        yield KUEUE_VERSION.diag(f"cluster {c.name!r} uses DRA but Kueue {kueue} does not count DRA claims by "
                                 "default (KueueDRAIntegration is beta from v0.18; resource.k8s.io/v1 from v0.15)",
                                 _loc(policy, where), hint="pin Kueue v0.18 or newer (v0.19.2 is the default)")
    static = [p.name for p in c.pools if mig_cut(p.cut) is not None]
    if c.feature_gates.dra_driver.get("DynamicMIG"):
        where = base + ("featureGates", "draDriver", "DynamicMIG")
        if static:
            yield DYNAMIC_MIG.diag(f"cluster {c.name!r} enables the DRA driver's DynamicMIG, which destroys the MIG "
                                   f"partitions of pools {', '.join(static)} that MIG Manager creates",
                                   _loc(policy, where), hint="keep DynamicMIG off while pools use static MIG layouts")
        if not k8s_gate(c, "DRAPartitionableDevices"):
            yield DYNAMIC_MIG.diag(f"DynamicMIG on Kubernetes {c.kubernetes_version} needs the DRAPartitionableDevices "
                                   "gate on kube-apiserver and kube-scheduler", _loc(policy, where),
                                   hint="declare featureGates.kubernetes.DRAPartitionableDevices: true once enabled")
    for pi, p in enumerate(c.pools):
        if cut_mode(p.cut).dra_device_type is None:
            yield SHARED_CUT.diag(f"pool {p.name!r}: a {p.cut.mode} cut gets no DeviceClass on DRA cluster {c.name!r}; "
                                  "its budget cannot be used there", _loc(policy, base + ("pools", pi, "cut", "mode")),
                                  hint="cut the pool full or MIG on a DRA cluster, or use the device-plugin path")


def _custom_refs(policy: Policy, c: Cluster, base: YamlPath) -> Iterator[Diagnostic]:
    classes = policy.classes.get(c.name, {})
    taken = set(classes) | set(DRIVER_CLASSES)
    seen: set[str] = set()
    for k, d in enumerate(c.device_classes):
        path = ".".join(map(str, base + ("deviceClasses", k)))
        if d.name in taken or d.name in seen:
            what = "a generated class" if d.name in classes else "a driver chart class" if d.name in DRIVER_CLASSES \
                else "another fleet DeviceClass"
            yield CUSTOM.diag(f"DeviceClass name {d.name!r} on {c.name!r} is already {what}",
                              _loc(policy, base + ("deviceClasses", k, "name")), path=path,
                              hint="give the fleet DeviceClass a name of its own")
        seen.add(d.name)
        if len(d.name) > 63:  # Kueue validates deviceClassNames as label keys: 63 characters without a prefix
            yield CUSTOM.diag(f"DeviceClass name {d.name!r} is {len(d.name)} characters; Kueue's deviceClassMappings "
                              "accept at most 63", _loc(policy, base + ("deviceClasses", k, "name")), path=path,
                              hint="shorten the name")
        cls = classes.get(d.class_)
        if cls is None or not cls.training_pools or class_selector(cls, c, policy.catalog) is None:
            why = ("is not a GPU class of the cluster" if cls is None else "has only serving pools"
                   if not cls.training_pools else f"is a {cls.cut} cut, which DRA does not lower")
            yield CUSTOM.diag(f"DeviceClass {d.name!r} counts against {d.class_!r}, which {why}",
                              _loc(policy, base + ("deviceClasses", k, "class")), path=path,
                              hint="known: " + ", ".join(sorted(classes)) if classes else None)


def _prove(policy: Policy, c: Cluster, base: YamlPath, bad: set[str | None]) -> Iterator[Diagnostic]:
    from compiler.dra.proof import evaluate_class  # the CEL engine: only when the verdict is not stored

    inventory = policy_inventory(policy, c.name)
    classes = policy.classes.get(c.name, {})
    pool_index = {p.name: i for i, p in enumerate(c.pools)}
    for cls in classes.values():
        if not cls.slices or cls.slices[0].pool not in pool_index:
            continue  # a second cluster of the same name (reported as declared twice) merged its pools here
        where = base + ("pools", pool_index[cls.slices[0].pool])
        expr = class_selector(cls, c, policy.catalog)
        if expr is None:
            model = policy.catalog.get(cls.model)
            if cls.mode.dra_device_type is not None and model is not None:
                yield NO_MATCH.diag(f"class {cls.id!r}: the catalog has no NVML product name for {cls.model!r}, so no "
                                    "DeviceClass can select its devices", _loc(policy, where + ("model",)),
                                    hint="add productName to the model's catalog entry in fleet.yaml")
            continue
        m = evaluate_class(cls.id, [expr], inventory)
        yield from _verdict(m, {cls.id}, _loc(policy, where), None, inventory)
    for k, d in enumerate(c.device_classes):
        path = ".".join(map(str, base + ("deviceClasses", k)))
        m = evaluate_class(d.name, d.selectors, inventory)
        for j, msg in m.compile_errors:
            yield BAD_CEL.diag(f"DeviceClass {d.name!r} selector {j}: {msg}",
                               _loc(policy, base + ("deviceClasses", k, "selectors", j)), path=path,
                               hint="device.attributes['gpu.nvidia.com'].<name>, device.capacity['gpu.nvidia.com']"
                               ".<name> (a Quantity), device.driver")
        if m.compile_errors or path in bad or has_type_errors(d.selectors):
            continue  # DRA301 reports ill-typed selectors once, in the API server's terms
        selectors_at = base + ("deviceClasses", k, "selectors")

        def selector_loc(j: int, at: YamlPath = selectors_at) -> Location:
            return _loc(policy, at + (j,))

        yield from _verdict(m, {d.class_}, _loc(policy, base + ("deviceClasses", k, "name")), path, inventory,
                            selector_loc=selector_loc)


def _verdict(m: ClassMatch, own: set[str], loc: Location, path: str | None, inventory: Inventory,
             selector_loc: Callable[[int], Location] | None = None) -> Iterator[Diagnostic]:
    def at(i: int) -> Location:
        return selector_loc(i) if selector_loc is not None else loc

    if m.errors:
        dev, i, msg = m.errors[0]
        yield RUNTIME.diag(f"DeviceClass {m.name!r} selector {i} fails on device {dev.name} of pool {dev.pool} "
                           f"({msg}); Kubernetes aborts any allocation that meets it ({len(m.errors)} device kinds)",
                           at(i), path=path, hint="test the attribute's existence first: a && b stops at a false a")
    if m.unproven:
        dev, i, why = m.unproven[0]
        yield UNPROVEN.diag(f"DeviceClass {m.name!r} selector {i} {why} (device {dev.name} of pool {dev.pool})",
                            at(i), path=path, hint="select on productName, architecture, profile or memory")
    if not m.total and not m.errors and not m.unproven:
        kinds = sorted({f"{g.device.kind} {g.device.attributes['productName']['string']}"
                        + (f" {g.device.attributes['profile']['string']}" if g.device.kind == "mig" else "")
                        for g in inventory.groups if not g.device.mig_parent})
        yield NO_MATCH.diag(f"DeviceClass {m.name!r} matches none of the {inventory.total()} devices the pools of "
                            f"{inventory.cluster!r} publish", loc, path=path,
                            hint="devices there: " + "; ".join(kinds) if kinds else "the cluster has no GPU pools")
    others = m.others(own)
    if others:
        parts = ", ".join(f"{n} of {cid}" for cid, n in others.items())
        yield OVERLAP.diag(f"DeviceClass {m.name!r} (class {', '.join(sorted(own))}) also matches devices of other "
                           f"classes: {parts}", loc, path=path,
                           hint="narrow it by productName / profile / type so claims count against the right budget")
    if m.parents:
        yield MIG_PARENT.diag(
            f"DeviceClass {m.name!r} would match the {m.parents} MIG-enabled GPUs of pool(s) "
            f"{', '.join(sorted(m.parent_pools))} if their nodes list them whole (dra-driver-nvidia-gpu#719): a claim "
            "could take a GPU whose slices are in use", loc, path=path,
            hint="use another GPU model for full cards on this cluster, or cut those pools full")


def _dispatchable(policy: Policy, c: Cluster) -> Iterator[Diagnostic]:
    """DRA014 on a MultiKueue manager of DRA workers."""
    workers = [w for w in workers_of(c) if w in policy.clusters]
    for team in policy.teams:
        held = {claim_template_name(dc.name, n): (dc, n) for dc, n in team_shapes(policy, team, c.name)}
        on_workers = {claim_template_name(dc.name, n) for w in workers for dc, n in team_shapes(policy, team, w)}
        missing = sorted(set(held) - on_workers)
        if not missing:
            continue
        budget = next((e for e in policy.allocation.for_team(team.name)
                       if e.cluster == c.name and e.gpu_class == held[missing[0]][0].budget_class), None)
        where = team.src.locate(budget.path + ("guaranteed",)) if budget else team.src.locate(("spec", "budgets"))
        yield UNDISPATCHABLE.diag(
            f"team {team.name!r}: manager {c.name!r} admits claims of ResourceClaimTemplates "
            f"{', '.join(missing)} that none of its workers ({', '.join(workers)}) has, so those jobs never run",
            where, hint="budget as much of the class on a worker (its templates follow the budget), or lower the "
            "manager's guarantee + borrowing limit")


def _lowered(policy: Policy, c: Cluster, base: YamlPath) -> Iterator[Diagnostic]:
    mappings = device_class_mappings(policy, c.name)
    wide = [m["name"] for m in mappings if len(m["deviceClassNames"]) > KUEUE_MAX_CLASSES]
    if len(mappings) > KUEUE_MAX_MAPPINGS or wide:
        what = (f"{len(mappings)} deviceClassMappings (at most {KUEUE_MAX_MAPPINGS})" if len(mappings) > KUEUE_MAX_MAPPINGS
                else f"more than {KUEUE_MAX_CLASSES} DeviceClasses in {', '.join(wide)}")
        yield KUEUE_LIMITS.diag(f"cluster {c.name!r} needs {what}; Kueue refuses to start",
                                _loc(policy, base + ("dra",)), hint="fewer queued GPU classes or fleet DeviceClasses")

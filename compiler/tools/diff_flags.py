"""Changes between two renders that Argo CD cannot apply in place, or only in the right order.

- ``immutable``: a field the API server refuses to update (LocalQueue ``spec.clusterQueue``,
  AdmissionCheck ``spec.controllerName``, PriorityClass ``value``, workload selectors, ...): the
  object must be deleted and recreated.
- ``in-use``: a ResourceFlavor, ClusterQueue, AdmissionCheck or Topology removed while objects of
  the base referenced it. Kueue holds it with the ``kueue.x-k8s.io/resource-in-use`` finalizer
  until no workload uses it, so it stays ``Terminating``; referrers must change first
  (``PruneLast=true`` on the Applications does that within one app).
- ``dangling``: an object of the new render references one the new render does not contain.
- ``rename``: an object removed and a near-identical one added: a delete and a create, not a
  rename (workloads, quota usage and status do not move along).
- ``moved``: the same object now rendered by another component, i.e. owned by another Application.
- ``destructive``: removing a Namespace or a PersistentVolumeClaim deletes data.
- ``left-behind``: a removed object that carries ``argocd.argoproj.io/sync-options: Prune=false``
  (as gpupolicy's Namespaces and model-cache PVCs do, ``compiler.lower.namespaces.KEEP_ON_PRUNE``)
  is not deleted: Argo CD skips its prune and shows the Application OutOfSync ("The app will be
  out of sync if Argo CD expects a resource to be pruned", argo-cd docs/user-guide/sync-options.md,
  "No Prune Resources"). It stays on the cluster, unmanaged, with its labels, so whatever selects
  on them (admission policy bindings, quotas) still applies to it. Read from the object's own
  annotation, so any kind is covered; such objects are never flagged ``destructive``.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from compiler.cel.quantity import QuantityError, parse_quantity
from compiler.emit.tree import dump_yaml
from compiler.model.manifest import Manifest

RENAME_SIMILARITY = 0.85
# Replace=true alone makes Argo CD `kubectl replace`, which the API server refuses on an immutable
# field as it refuses an update; with Force=true it deletes and recreates (argo-cd docs
# user-guide/sync-options.md, "Replace Resource Instead Of Applying Changes", "Force").
REPLACE_HINT = ("delete it before the sync, or annotate it `argocd.argoproj.io/sync-options: Force=true,Replace=true` "
                "for one sync (Argo CD then deletes and recreates it; a claim's deletion waits until no pod mounts it)")
# kind -> field paths the API server will not update.
IMMUTABLE: dict[str, tuple[tuple[str, ...], ...]] = {
    "LocalQueue": (("spec", "clusterQueue"),),
    "AdmissionCheck": (("spec", "controllerName"),),
    "Topology": (("spec", "levels"),),
    "PriorityClass": (("value",),),
    "Deployment": (("spec", "selector"),),
    "StatefulSet": (("spec", "selector"), ("spec", "serviceName"), ("spec", "volumeClaimTemplates")),
    "DaemonSet": (("spec", "selector"),),
    "Job": (("spec", "template"), ("spec", "selector")),
    "PersistentVolumeClaim": (("spec", "storageClassName"), ("spec", "accessModes"), ("spec", "volumeName")),
    "Service": (("spec", "clusterIP"),),
    "ResourceClaimTemplate": (("spec",),),
}
# TAS flavors: nodeLabels/tolerations are immutable once topologyName is set (RF CRD v1beta2 CEL).
TAS_FLAVOR = (("spec", "topologyName"), ("spec", "nodeLabels"), ("spec", "tolerations"))
IN_USE_KINDS = ("ResourceFlavor", "ClusterQueue", "AdmissionCheck", "Topology")
SYNC_OPTIONS = "argocd.argoproj.io/sync-options"  # a comma list, each item trimmed (sync-options.md)
NO_PRUNE = "Prune=false"
# What stays with a left-behind object of these kinds (any other kind: the object alone).
KEPT_WITH = {
    "Namespace": "with everything in it Argo CD does not prune (jobs, workloads, Secrets, volumes)",
    "PersistentVolumeClaim": "with its volume and data",
}
LABELS_SHOWN = 4

Key = tuple[str, str, str, str]  # cluster, kind, namespace, name


def _get(o: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    cur: Any = o
    for p in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(p)
    return cur


def never_pruned(o: Mapping[str, Any]) -> bool:
    """Argo CD never prunes the object: its own ``argocd.argoproj.io/sync-options`` lists ``Prune=false``."""
    value = _get(o, ("metadata", "annotations", SYNC_OPTIONS))
    return isinstance(value, str) and NO_PRUNE in (item.strip() for item in value.split(","))


def _few(items: list[str], limit: int) -> str:
    return ", ".join(items[:limit]) + (f" and {len(items) - limit} more" if len(items) > limit else "")


def left_behind(k: Key, m: Manifest, pruned_inside: list[Key]) -> str:
    """What happens to a removed object Argo CD does not prune (``pruned_inside``: the removed
    objects in it, for a Namespace, that Argo CD does prune)."""
    text = (f"is no longer rendered, but Argo CD does not delete it (`{SYNC_OPTIONS}: {NO_PRUNE}`): it stays on "
            "the cluster, unmanaged")
    if k[1] in KEPT_WITH:
        text += f", {KEPT_WITH[k[1]]}"
    if pruned_inside:
        text += f"; what gpupolicy rendered in it is pruned ({_few([f'{u[1]} {u[3]}' for u in pruned_inside], 4)})"
    labels = _get(m.obj, ("metadata", "labels"))
    if isinstance(labels, Mapping) and labels:
        text += (f"; it keeps its labels ({_few([f'`{n}={v}`' for n, v in labels.items()], LABELS_SHOWN)}), so "
                 "admission policies and selectors keyed on them still apply to it")
    return text + "; its Application shows it OutOfSync until someone deletes it"


def key(m: Manifest) -> Key:
    return (m.cluster, m.kind, m.namespace or "", m.name)


def shown(k: Key) -> str:
    return f"{k[1]} {k[2] + '/' if k[2] else ''}{k[3]}"


def references(m: Manifest) -> Iterator[tuple[str, str]]:
    """(kind, name) of the cluster-scoped Kueue objects ``m`` names."""
    return _named(m.kind, m.obj.get("spec") or {})


def _named(kind: str, spec: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    if kind == "ClusterQueue":
        for group in spec.get("resourceGroups") or []:
            for f in group.get("flavors") or []:
                yield "ResourceFlavor", str(f.get("name"))
        strategy = spec.get("admissionChecksStrategy") or {}
        for ac in strategy.get("admissionChecks") or []:
            yield "AdmissionCheck", str(ac.get("name"))
        for name in spec.get("admissionChecks") or []:
            yield "AdmissionCheck", str(name)
    elif kind == "LocalQueue" and spec.get("clusterQueue"):
        yield "ClusterQueue", str(spec["clusterQueue"])
    elif kind == "ResourceFlavor" and spec.get("topologyName"):
        yield "Topology", str(spec["topologyName"])


Referrers = dict[tuple[str, str, str], list[tuple[str, Key]]]  # (cluster, kind, name) -> (out/ path, key) of each


@dataclass(frozen=True)
class Index:
    """Objects by key, and who names what (``index``)."""

    keys: dict[Key, Manifest]
    refs: Referrers


def index(manifests: Mapping[str, Manifest]) -> Index:
    """Reads ``obj`` directly, as ``key`` and ``references`` do through the cached properties,
    whose first reads cost more: the shared outlines are ~22,000 objects at 1,000 teams."""
    keys: dict[Key, Manifest] = {}
    refs: Referrers = {}
    for path, m in manifests.items():
        o = m.obj
        meta = o.get("metadata") or {}
        kind = str(o.get("kind", ""))
        ns = meta.get("namespace")
        k = (m.cluster, kind, str(ns) if ns else "", str(meta.get("name", "")))
        keys[k] = m
        for ref_kind, name in _named(kind, o.get("spec") or {}):
            refs.setdefault((m.cluster, ref_kind, name), []).append((path, k))
    return Index(keys, refs)


def _merged(a: Referrers, b: Referrers) -> Referrers:
    out = dict(a)
    for k, users in b.items():
        out[k] = out.get(k, []) + users
    return out


def _users(found: list[tuple[str, Key]]) -> list[Key]:
    """Referrers in the order of their files: the same whichever mapping they came from."""
    return [k for _, k in sorted(found)]


@dataclass(frozen=True)
class Flag:
    kind: str  # immutable | in-use | dangling | rename | moved | destructive | left-behind
    cluster: str
    obj: str  # "Kind namespace/name"
    message: str


def body(m: Manifest) -> str:
    """A manifest without its name: what stays equal when an object is only renamed."""
    o = dict(m.obj)
    o["metadata"] = {k: v for k, v in m.obj.get("metadata", {}).items() if k != "name"}
    return dump_yaml(o).replace(m.name, "<name>")


def find_flags(base: Mapping[str, Manifest], head: Mapping[str, Manifest],
               common: Mapping[str, Manifest] | Index | None = None) -> list[Flag]:
    """The flags between two renders. ``common``: objects both hold unchanged (``gpupolicy diff``:
    the outlines of the team units both sides share), or their ``index``; the same flags as with
    ``common`` in both ``base`` and ``head``, for one pass over it instead of two, and none of its
    objects compared."""
    shared = common if isinstance(common, Index) else index(common or {})
    was, now = index(base), index(head)
    only_old, only_new = was.keys, now.keys
    old = {**shared.keys, **only_old}
    new = {**shared.keys, **only_new}
    flags: list[Flag] = []
    for k in sorted((only_old.keys() | only_new.keys()) & old.keys() & new.keys()):
        o, n = old[k], new[k]
        if o.component != n.component:
            flags.append(Flag("moved", k[0], shown(k),
                              f"moves from Application component `{o.component}` to `{n.component}`: depending on "
                              "which syncs first it is deleted and recreated"))
        paths = IMMUTABLE.get(k[1], ())
        if k[1] == "ResourceFlavor" and (_get(o.obj, ("spec", "topologyName")) or _get(n.obj, ("spec", "topologyName"))):
            paths = TAS_FLAVOR
        flags += _shrunk(k, o.obj, n.obj)
        for path in paths:
            a, b = _get(o.obj, path), _get(n.obj, path)
            if a != b:
                what = ".".join(path)
                extra = (" (its pending workloads wait as inadmissible until it exists again)"
                         if k[1] == "LocalQueue" else "")
                flags.append(Flag("immutable", k[0], shown(k),
                                  f"`{what}` changes from `{a}` to `{b}` but is immutable: the object must be deleted "
                                  f"and recreated{extra}; {REPLACE_HINT}"))
    old_refs = _merged(shared.refs, was.refs)
    new_refs = _merged(shared.refs, now.refs)
    removed = sorted(only_old.keys() - new.keys())
    for k in removed:
        if k[1] in IN_USE_KINDS:
            users = [u for u in _users(old_refs.get((k[0], k[1], k[3]), [])) if u != k]
            if users:
                flags.append(Flag("in-use", k[0], shown(k),
                                  f"is removed while {', '.join(shown(u) for u in users)} used it: Kueue keeps it "
                                  "Terminating (finalizer kueue.x-k8s.io/resource-in-use) until no workload uses it; "
                                  "update the referrers first and let running workloads drain"))
        if never_pruned(old[k].obj):
            inside = [u for u in removed if k[1] == "Namespace" and u[0] == k[0] and u[2] == k[3]
                      and not never_pruned(old[u].obj)]
            flags.append(Flag("left-behind", k[0], shown(k), left_behind(k, old[k], inside)))
        elif k[1] == "Namespace":
            flags.append(Flag("destructive", k[0], shown(k),
                              "is removed: deleting a Namespace deletes every object in it (jobs, workloads, "
                              "model-cache volumes)"))
        elif k[1] == "PersistentVolumeClaim":
            flags.append(Flag("destructive", k[0], shown(k), "is removed: its volume and data may be deleted"))
    present = {(k[0], k[1], k[3]) for k in new}
    for (cluster, kind, name), found in sorted(new_refs.items()):
        if (cluster, kind, name) not in present:
            flags.append(Flag("dangling", cluster, f"{kind} {name}",
                              f"is referenced by {', '.join(shown(u) for u in _users(found))} but not rendered"))
    flags.extend(_renames(only_old, only_new, old, new))
    return sorted(flags, key=lambda f: (f.kind, f.cluster, f.obj, f.message))


def _renames(only_old: Mapping[Key, Manifest], only_new: Mapping[Key, Manifest], old: Mapping[Key, Manifest],
             new: Mapping[Key, Manifest]) -> list[Flag]:
    gone = [k for k in only_old if k not in new]
    came = [k for k in only_new if k not in old]
    scored = []
    for g in gone:
        for c in came:
            if g[:2] == c[:2]:
                ratio = difflib.SequenceMatcher(None, body(old[g]), body(new[c])).ratio()
                if ratio >= RENAME_SIMILARITY:
                    scored.append((-ratio, g, c))
    used: set[Key] = set()
    out = []
    for _, g, c in sorted(scored):
        if g in used or c in used:
            continue
        used |= {g, c}
        how = ("a create, and the old one is left behind (Prune=false)" if never_pruned(old[g].obj)
               else "a delete and a create")
        out.append(Flag("rename", g[0], shown(g),
                        f"looks renamed to `{shown(c)}`: that is {how}; workloads, quota usage and "
                        "status do not move to the new object"))
    return out


def _shrunk(k: Key, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Flag]:
    """A claim whose storage request goes down: the API server refuses to lower it (it may only
    grow, where the StorageClass allows expansion), so the sync fails."""
    path = ("spec", "resources", "requests", "storage")
    a, b = _get(old, path), _get(new, path)
    if k[1] != "PersistentVolumeClaim" or a is None or b is None:
        return []
    try:
        if parse_quantity(str(b)).value >= parse_quantity(str(a)).value:
            return []
    except QuantityError:
        return []
    return [Flag("immutable", k[0], shown(k),
                 f"`spec.resources.requests.storage` shrinks from `{a}` to `{b}`: the API server refuses to lower a "
                 f"claim's request (it may only grow, where the StorageClass allows expansion), so the sync fails; "
                 f"{REPLACE_HINT}, or keep the size")]

"""What the whole-output passes read of the rendered objects, as a mergeable summary.

ArgoCD's Applications and AppProjects, the bootstrap document, GITOPS006 and CODEOWNERS depend
on every object of every team, but only on a few facts about each: which (cluster, component)
folders exist, the kinds and namespaces in them, which Deployments a scaler owns, the MultiKueue
checks on ClusterQueues, and which policy files each ``out/`` file derives from. An
``Inventory`` holds exactly those facts. The full pipeline builds one from all manifests; the
incremental build stores one per team unit and merges them, so a one-team edit never rebuilds
the other teams' 70,000 objects to answer these questions (bench/README.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from compiler.model.manifest import Manifest
from compiler.model.targets import group_of

# Controllers that own a Deployment's replicas: (apiVersion group, kind) of the scaler.
SCALERS = frozenset({("autoscaling", "HorizontalPodAutoscaler"), ("keda.sh", "ScaledObject")})
FileRow = tuple[str, str, str | None, tuple[str, ...]]  # (out/-relative path, cluster, namespace, sources)


@dataclass
class Folder:
    """One ``out/<cluster>/<component>/`` folder."""

    kinds: set[tuple[str, str, bool]] = field(default_factory=set)  # (group, kind, cluster-scoped)
    namespaces: set[str] = field(default_factory=set)  # namespaces objects sit in, and Namespaces rendered
    deployments: set[tuple[str, str]] = field(default_factory=set)  # (namespace, name)
    scaled: set[tuple[str, str]] = field(default_factory=set)  # Deployments an HPA/ScaledObject targets

    def merge(self, other: Folder) -> None:
        self.kinds |= other.kinds
        self.namespaces |= other.namespaces
        self.deployments |= other.deployments
        self.scaled |= other.scaled


@dataclass
class Inventory:
    count: int = 0  # objects, ArgoCD's included
    folders: dict[tuple[str, str], Folder] = field(default_factory=dict)  # (cluster, component); not argocd
    admission_checks: dict[tuple[str, str], str] = field(default_factory=dict)  # (cluster, name) -> controller
    queue_checks: list[tuple[str, str, tuple[str, ...], str]] = field(default_factory=list)
    """(cluster, ClusterQueue, its admission checks, the policy file it comes from last), when it has any."""
    rows: list[FileRow] = field(default_factory=list)
    """(out/-relative path, cluster, namespace, sources) of every object but ArgoCD's (``files``)."""
    later: list[list[FileRow] | Callable[[], list[FileRow]]] = field(default_factory=list, repr=False)
    """More rows after ``rows``, in order: lists, or a stored unit's rows still to be read (its
    entry of kind ``rows``). Only CODEOWNERS, the OPS model and team-scoped waivers of verify
    findings read the rows, and with a store the first two read each unit's stored part instead,
    so the 400,000 rows of 5,000 stored units are read only when a waiver (or an OPS004 finding)
    needs them."""

    @property
    def files(self) -> list[FileRow]:
        """Every row, in order (reading what ``later`` holds)."""
        if self.later:
            for chunk in self.later:
                self.rows.extend(chunk if isinstance(chunk, list) else chunk())
            self.later.clear()
        return self.rows

    @classmethod
    def of(cls, manifests: Iterable[Manifest]) -> Inventory:
        inv = cls()
        for m in manifests:
            inv.add(m)
        return inv

    def add(self, m: Manifest) -> None:
        self.count += 1
        if m.cluster == "argocd":
            return
        ns = m.namespace
        self.files.append((m.relpath, m.cluster, ns, m.sources))
        folder = self.folders.get((m.cluster, m.component))
        if folder is None:
            folder = self.folders[(m.cluster, m.component)] = Folder()
        group, kind = group_of(m.api_version), m.kind
        folder.kinds.add((group, kind, ns is None))
        if ns:
            folder.namespaces.add(ns)
        if kind == "Namespace":
            folder.namespaces.add(m.name)
        elif kind == "Deployment" and ns:
            folder.deployments.add((ns, m.name))
        elif (group, kind) in SCALERS and ns:
            ref = m.obj.get("spec", {}).get("scaleTargetRef", {})
            if ref.get("kind", "Deployment") == "Deployment" and ref.get("name"):
                folder.scaled.add((ns, str(ref["name"])))
        elif kind == "AdmissionCheck":
            self.admission_checks[(m.cluster, m.name)] = str(m.obj.get("spec", {}).get("controllerName", ""))
        elif kind == "ClusterQueue":
            strategy = m.obj.get("spec", {}).get("admissionChecksStrategy") or {}
            names = tuple(str(a.get("name")) for a in strategy.get("admissionChecks") or [])
            if names:
                self.queue_checks.append((m.cluster, m.name, names, m.sources[-1] if m.sources else ""))

    def merge(self, other: Inventory) -> None:
        self.count += other.count
        for key, folder in other.folders.items():
            mine = self.folders.get(key)
            if mine is None:
                self.folders[key] = Folder(set(folder.kinds), set(folder.namespaces), set(folder.deployments),
                                           set(folder.scaled))
            else:
                mine.merge(folder)
        self.admission_checks.update(other.admission_checks)
        self.queue_checks += other.queue_checks
        if self.later or other.later:
            self.later += [other.rows, *other.later]
        else:
            self.rows += other.rows

    # -- views --------------------------------------------------------------------------------

    def clusters(self) -> set[str]:
        return {c for c, _ in self.folders}

    def components(self, cluster: str) -> dict[str, Folder]:
        return {comp: f for (c, comp), f in self.folders.items() if c == cluster}

    def cluster_folder(self, cluster: str) -> Folder:
        """Every folder of one cluster, merged."""
        out = Folder()
        for f in self.components(cluster).values():
            out.merge(f)
        return out

    # -- a marshal-able record (the incremental cache; marshal keeps tuples and sets) ----------

    def to_record(self) -> tuple[Any, ...]:
        """The record, without the rows (a unit keeps them apart: ``from_record``)."""
        folders = {key: (f.kinds, f.namespaces, f.deployments, f.scaled) for key, f in self.folders.items()}
        return (self.count, folders, self.admission_checks, self.queue_checks)

    @classmethod
    def from_record(cls, rec: Any, rows: Callable[[], list[FileRow]]) -> Inventory:
        """The inventory of a record, its rows read by ``rows`` when first needed (``files``)."""
        count, folders, checks, queue_checks = rec
        return cls(count, {key: Folder(*parts) for key, parts in folders.items()}, checks, queue_checks, [], [rows])

"""The unit every lowering pass produces and every later stage consumes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Components of SPEC §9, in the order ArgoCD syncs them (lowest wave first).
COMPONENTS: tuple[str, ...] = (
    "namespaces",
    "gpu-operator",
    "nodes",
    "dra",
    "kueue",
    "admission",
    "multikueue",
    "serving",
)

CLUSTER_SCOPED_KINDS = frozenset(
    {
        "Namespace",
        "ResourceFlavor",
        "ClusterQueue",
        "Cohort",
        "WorkloadPriorityClass",
        "AdmissionCheck",
        "MultiKueueConfig",
        "MultiKueueCluster",
        "Topology",
        "DeviceClass",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "PriorityClass",
        "ClusterRole",
        "ClusterRoleBinding",
        "NodePool",
    }
)


@dataclass(frozen=True)
class Manifest:
    """One Kubernetes object destined for ``out/<cluster>/<component>/``.

    ``cluster`` is the target cluster name, or ``"argocd"`` for objects of the GitOps control
    plane. ``sources`` names the policy files (repo-relative) the object derives from; it feeds
    the header comment and CODEOWNERS.
    """

    cluster: str
    component: str
    obj: dict[str, Any]
    sources: tuple[str, ...] = field(default=())

    @property
    def api_version(self) -> str:
        return str(self.obj.get("apiVersion", ""))

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind", ""))

    @property
    def name(self) -> str:
        return str(self.obj.get("metadata", {}).get("name", ""))

    @property
    def namespace(self) -> str | None:
        ns = self.obj.get("metadata", {}).get("namespace")
        return str(ns) if ns else None

    @property
    def relpath(self) -> str:
        """Path under ``out/``: ``<cluster>/<component>/<kind>.<namespace-or-_>.<name>.yaml``."""
        ns = self.namespace or "_"
        filename = f"{self.kind.lower()}.{ns}.{self.name}.yaml"
        if self.cluster == "argocd":
            # component = the folder under out/argocd/: a cluster's Applications, or "bootstrap"
            return f"argocd/{self.component}/{filename}" if self.component else f"argocd/{filename}"
        return f"{self.cluster}/{self.component}/{filename}"

    def sort_key(self) -> tuple[str, str]:
        return (self.relpath, self.api_version)

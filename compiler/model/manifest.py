"""The unit every lowering pass produces and every later stage consumes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from compiler.model.once import once

# Components (SPEC §9) and their waves are declared in compiler.model.targets; the kinds each
# lowering pass renders, with their scope, by the pass's module (compiler/lower/targets.py).


@dataclass(frozen=True)
class Manifest:
    """One Kubernetes object destined for ``out/<cluster>/<component>/``.

    ``cluster`` is the target cluster name, or ``"argocd"`` for objects of the GitOps control
    plane. ``sources`` names the policy files (repo-relative) the object derives from; it feeds
    the header comment and CODEOWNERS.

    The identity properties are computed once: global passes (ArgoCD, CODEOWNERS, sorting) read
    them ~10 times per object, 700,000 times on the 1,000-team benchmark. Build ``obj`` fully
    before reading them.
    """

    cluster: str
    component: str
    obj: dict[str, Any]
    sources: tuple[str, ...] = field(default=())

    @once
    def api_version(self) -> str:
        return str(self.obj.get("apiVersion", ""))

    @once
    def kind(self) -> str:
        return str(self.obj.get("kind", ""))

    @once
    def name(self) -> str:
        return str(self.obj.get("metadata", {}).get("name", ""))

    @once
    def namespace(self) -> str | None:
        ns = self.obj.get("metadata", {}).get("namespace")
        return str(ns) if ns else None

    @once
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

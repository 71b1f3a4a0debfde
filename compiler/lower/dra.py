"""DRA objects (component ``dra``, resource.k8s.io/v1) for clusters with ``dra: true`` and
Kubernetes >= 1.34: a DeviceClass per GPU class (name = class ID, SPEC §9) selecting devices by
capability (``compiler.dra.selectors``), the fleet's own DeviceClasses, ResourceClaimTemplates
for the shapes each team's budget allows (Kueue counts their claims under ``gpupolicy.dev/<class>``
through the manager's ``deviceClassMappings``). Which classes, mappings and shapes:
``compiler.policy.dra_classes``. A MultiKueue manager of DRA workers gets the templates and
mappings but no DeviceClass (``compiler.dra.accounting.dra_counts``). Clusters below 1.34 keep the
device-plugin path and get none of this.
"""

from __future__ import annotations

from typing import Any

from compiler.dra.accounting import decide, dra_active
from compiler.lower.common import obj
from compiler.model.manifest import Manifest
from compiler.model.targets import Kind, Target
from compiler.policy.classes import dra_resource
from compiler.policy.dra_classes import claim_template_name, device_classes, team_shapes
from compiler.policy.graph import Policy, Team
from compiler.policy.labels import LABEL_CLASS, LABEL_TEAM
from compiler.policy.queues import training_namespaces
from compiler.policy.versions import DRA_API

REQUEST = "gpu"  # the request name pods reference: resources.claims[{name: <claim>, request: gpu}]


def lower_device_classes(policy: Policy, cluster: str) -> list[Manifest]:
    if not dra_active(policy.clusters[cluster]):
        return []  # a manager references its workers' DeviceClasses, it does not create them
    ext = decide(policy, policy.clusters[cluster]).extended_resource
    out = []
    for dc in device_classes(policy, cluster):
        o = obj(DRA_API, "DeviceClass", dc.name, labels={LABEL_CLASS: dc.budget_class})
        spec: dict[str, Any] = {"selectors": [{"cel": {"expression": e}} for e in dc.selectors]}
        if ext and not dc.custom:
            # KEP-5004: pods may request `gpupolicy.dev/<class>: N`; names must be unique per class.
            spec["extendedResourceName"] = dra_resource(dc.name)
        o["spec"] = spec
        out.append(Manifest(cluster, "dra", o, (policy.fleet_src.path,)))
    return out


def claim_template(name: str, namespace: str, device_class: str, count: int,
                   labels: dict[str, str]) -> dict[str, Any]:
    """A ResourceClaimTemplate Kueue can count: one ``exactly`` request, ExactCount."""
    o = obj(DRA_API, "ResourceClaimTemplate", name, namespace=namespace, labels=labels)
    o["spec"] = {
        "metadata": {"labels": dict(labels)},
        "spec": {"devices": {"requests": [{"name": REQUEST, "exactly": {
            "deviceClassName": device_class, "allocationMode": "ExactCount", "count": count}}]}},
    }
    return o


def lower_claim_templates(policy: Policy, team: Team, cluster: str) -> list[Manifest]:
    out = []
    sources = (policy.fleet_src.path, team.path)
    for ns in training_namespaces(team, cluster):
        for dc, n in team_shapes(policy, team, cluster):
            labels = {LABEL_TEAM: team.name, LABEL_CLASS: dc.budget_class}
            o = claim_template(claim_template_name(dc.name, n), ns, dc.name, n, labels)
            out.append(Manifest(cluster, "dra", o, sources))
    return out


TARGETS = (
    Target("dra-classes", "dra", "cluster", passes=(lower_device_classes,), kinds=(
        Kind(DRA_API, "DeviceClass", "cluster"),
    )),
    Target("dra-claims", "dra", "team", passes=(lower_claim_templates,), kinds=(
        Kind(DRA_API, "ResourceClaimTemplate"),
    )),
)

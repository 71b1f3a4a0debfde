"""MultiKueue objects on a manager cluster (component ``multikueue``; topology and rules in
``compiler.policy.multikueue_topology``): one AdmissionCheck handled by ``kueue.x-k8s.io/multikueue`` whose
parameters name one MultiKueueConfig listing the workers in preference order, and one
MultiKueueCluster per worker pointing at the Secret with its kubeconfig (a reference only).

The manager's ClusterQueues name the AdmissionCheck (``compiler.lower.kueue``); workers run a
plain Kueue whose namespaces and LocalQueues mirror the manager's (checked by GITOPS004).
"""

from __future__ import annotations

from compiler.lower.common import obj
from compiler.model.manifest import Manifest
from compiler.model.targets import Kind, Target
from compiler.policy.graph import Policy
from compiler.policy.multikueue_topology import ADMISSION_CHECK, CONTROLLER, MAX_WORKERS, kubeconfig_secret, workers_of
from compiler.policy.versions import KUEUE_API


def lower_multikueue(policy: Policy, cluster: str) -> list[Manifest]:
    c = policy.clusters[cluster]
    clusters = policy.clusters
    workers = [w for w in workers_of(c) if w in clusters][:MAX_WORKERS]  # >20 is GITOPS001
    if not workers:
        return []
    src = (policy.fleet_src.path,)
    ac = obj(KUEUE_API, "AdmissionCheck", ADMISSION_CHECK)
    ac["spec"] = {
        "controllerName": CONTROLLER,
        "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": ADMISSION_CHECK},
    }
    config = obj(KUEUE_API, "MultiKueueConfig", ADMISSION_CHECK)
    # Order is the incremental dispatcher's preference; quota stays Manual (Automated is alpha).
    config["spec"] = {"clusters": workers}
    out = [Manifest(cluster, "multikueue", ac, src), Manifest(cluster, "multikueue", config, src)]
    for w in workers:
        mkc = obj(KUEUE_API, "MultiKueueCluster", w)
        mkc["spec"] = {"clusterSource": {"kubeConfig": {"locationType": "Secret",
                                                        "location": kubeconfig_secret(clusters, w)}}}
        out.append(Manifest(cluster, "multikueue", mkc, src))
    return out


TARGETS = (
    Target("multikueue", "multikueue", "cluster", passes=(lower_multikueue,), kinds=(
        Kind(KUEUE_API, "AdmissionCheck", "cluster"),
        Kind(KUEUE_API, "MultiKueueConfig", "cluster"),
        Kind(KUEUE_API, "MultiKueueCluster", "cluster"),
    )),
)

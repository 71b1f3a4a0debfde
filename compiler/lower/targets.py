"""The one list of lowering targets, and what follows from it.

Each lowering module declares its targets (``TARGETS``: component, kinds with their scope, pass
scope and CODEOWNERS owner, passes) next to the passes; this module lists the modules, in the
order their passes run, and derives the per-cluster and per-team pass lists and the kinds the
ArgoCD AppProjects allow-list. Components and their sync waves are in ``compiler.model.targets``
(stages before and after lowering read them). A new target: declare ``TARGETS`` in its module
and add the module here; ``tests/test_targets.py`` checks the rest.
"""

from __future__ import annotations

from typing import Callable

import compiler.lower.admission as admission
import compiler.lower.admission_priority as admission_priority
import compiler.lower.dra as dra
import compiler.lower.gpu_operator as gpu_operator
import compiler.lower.kueue as kueue
import compiler.lower.multikueue as multikueue
import compiler.lower.namespaces as namespaces
import compiler.lower.nodes as nodes
import compiler.lower.rbac as rbac
import compiler.lower.serving as serving
from compiler.model.manifest import Manifest
from compiler.model.targets import COMPONENTS, Target, owned_kinds
from compiler.policy.graph import Policy, Team

ClusterPass = Callable[[Policy, str], list[Manifest]]
TeamPass = Callable[[Policy, Team, str], list[Manifest]]

# Run order (objects are sorted afterwards; the order only fixes the order of unsorted lists).
TARGETS: tuple[Target, ...] = (
    *namespaces.TARGETS,
    *kueue.TARGETS,
    *multikueue.TARGETS,
    *gpu_operator.TARGETS,
    *dra.TARGETS,
    *nodes.TARGETS,
    *serving.TARGETS,
    *admission.TARGETS,
    *admission_priority.TARGETS,
    *rbac.TARGETS,
)

CLUSTER_PASSES: tuple[ClusterPass, ...] = tuple(p for t in TARGETS if t.scope == "cluster" for p in t.passes)
TEAM_PASSES: tuple[TeamPass, ...] = tuple(p for t in TARGETS if t.scope == "team" for p in t.passes)

# (group, kind) -> cluster-scoped?: allow-listed in every cluster's AppProject, rendered or not, so
# the last object of a kind can still be pruned after it left the render.
OWNED_KINDS: dict[tuple[str, str], bool] = owned_kinds(TARGETS)

_undeclared = {t.component for t in TARGETS} - set(COMPONENTS)
assert not _undeclared, f"components without a wave in compiler.model.targets: {sorted(_undeclared)}"

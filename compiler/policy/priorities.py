"""Priority tiers per team: the tier a team's jobs default to and the tiers they may use.

The fleet declares tiers (Kueue WorkloadPriorityClasses, ``compiler.lower.kueue``); a team's
**tier** is its ``priority``, else the fleet's ``defaults.priority``, else the tier marked
``default: true``, else the lowest tier (a fleet default reserved for other teams gives way to the
next tier down the team may use). The tiers it **may use** are its ``allowedPriorities``, else its
tier and every lower tier that is not reserved for other teams (``reservedFor``).
Admission (``compiler.lower.admission_priority``) enforces them in training namespaces through
namespace labels (``priority.gpupolicy.dev/<tier>``), and requires every GPU workload to name a
tier: Kueue v0.19.2 has no working default for us (see ``DEFAULTING``).

Why requiring the label is the default mechanism (kubernetes-sigs/kueue @ v0.19.2):

- ``pkg/controller/jobframework/reconciler.go`` ``ExtractPriority``: the Workload's priority comes
  from the job's ``kueue.x-k8s.io/priority-class`` label (a WorkloadPriorityClass), else from the
  pod templates' ``priorityClassName`` (a *pod* PriorityClass, e.g. ``gpupolicy-serving``), else
  ``pkg/util/priority/priority.go`` ``getDefaultPriority``: the cluster's ``globalDefault``
  PriorityClass, else 0 (below every tier we declare with a positive value).
- ``pkg/controller/jobframework/defaults.go`` ``ApplyDefaultWorkloadPriorityClass`` labels a job
  with a WorkloadPriorityClass named literally ``default`` (``pkg/controller/constants/constants.go``
  ``DefaultWorkloadPriorityClassName``), only behind ``WorkloadPriorityClassDefaulting``, alpha
  and off (``pkg/features/kube_features.go``).
- ``apis/kueue/v1beta2/localqueue_types.go``: a LocalQueue has no default priority field.
- A MutatingAdmissionPolicy could add the label, but it is off by default before Kubernetes 1.36
  (KEP-3962: alpha 1.32, beta 1.34 behind the ``MutatingAdmissionPolicy`` gate and
  ``admissionregistration.k8s.io/v1beta1``, GA 1.36); a ValidatingAdmissionPolicy (v1, GA 1.30)
  that *requires* the label, with the team's tier in the message, works on every supported cluster.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.model.fleet import PriorityTier
from compiler.policy.graph import Policy, Team
from compiler.policy.memo import per_policy

# The pod PriorityClass of serving (compiler.lower.serving) and the built-in ones above it: a
# tier must not share their names, since a tier name is also accepted as priorityClassName.
SERVING_PRIORITY_CLASS = "gpupolicy-serving"
SYSTEM_PRIORITY_CLASSES = ("system-cluster-critical", "system-node-critical")
DEFAULTING = ("kubernetes-sigs/kueue@v0.19.2 pkg/controller/jobframework/reconciler.go (ExtractPriority), "
              "pkg/util/priority/priority.go, pkg/controller/jobframework/defaults.go")


@dataclass(frozen=True)
class TeamPriorities:
    """What one team may do with priorities. ``allowed`` is highest value first."""

    team: str
    tier: str | None  # the default its jobs are told to use; None when the fleet declares no tiers
    tier_origin: str
    allowed: tuple[str, ...]
    allowed_origin: str

    def reserved_skipped(self, policy: Policy) -> list[str]:
        """Lower tiers left out of the default expansion because other teams reserve them."""
        if self.tier is None or self.allowed_origin != "its tier and below":
            return []
        tiers = tiers_by_name(policy)
        top = tiers[self.tier].value
        return [t.name for t in ordered_tiers(policy) if t.value <= top and t.name not in self.allowed]


@per_policy  # asked several times per team (1,000 teams: sorted ~5,000 times)
def ordered_tiers(policy: Policy) -> list[PriorityTier]:
    """Tiers, highest value first (name breaks ties, which FLEET007 forbids anyway)."""
    return sorted(policy.fleet.spec.priorities, key=lambda p: (-p.value, p.name))


@per_policy
def tiers_by_name(policy: Policy) -> dict[str, PriorityTier]:
    """Callers only read it (one dict per policy)."""
    return {p.name: p for p in policy.fleet.spec.priorities}


@per_policy
def fleet_default_tier(policy: Policy) -> tuple[str | None, str]:
    """The tier of teams that set none, and where it comes from."""
    spec = policy.fleet.spec
    names = tiers_by_name(policy)
    if spec.defaults.priority in names:
        return spec.defaults.priority, "fleet defaults.priority"
    marked = next((p.name for p in spec.priorities if p.default), None)
    if marked is not None:
        return marked, "fleet tier marked default"
    tiers = ordered_tiers(policy)
    if tiers:
        return tiers[-1].name, "lowest tier (the fleet marks no default)"
    return None, "no tiers declared"


def may_use(tier: PriorityTier, team: str) -> bool:
    return tier.reserved_for is None or team in tier.reserved_for


def team_priorities(policy: Policy, team: Team) -> TeamPriorities:
    return _team_priorities(policy, team.name)


@per_policy
def _team_priorities(policy: Policy, name: str) -> TeamPriorities:
    team = policy.team(name)
    assert team is not None, name
    spec = team.model.spec
    names = tiers_by_name(policy)
    explicit = [p for p in spec.allowed_priorities or [] if p in names]
    if spec.priority in names:
        tier: str | None = spec.priority
        origin = "team file"
    else:
        tier, origin = fleet_default_tier(policy)
        if tier is not None and spec.allowed_priorities is None and not may_use(names[tier], team.name):
            top = names[tier].value  # the fleet's default is reserved for other teams: the next one down
            tier = next((t.name for t in ordered_tiers(policy) if t.value <= top and may_use(t, team.name)), None)
            origin = f"{origin}, next tier it may use"
        if spec.allowed_priorities is not None and tier not in explicit:
            tier = max(explicit, key=lambda p: names[p].value) if explicit else None
            origin = "highest of allowedPriorities"
    if spec.allowed_priorities is not None:
        allowed = [t.name for t in ordered_tiers(policy) if t.name in explicit]
        return TeamPriorities(team.name, tier, origin, tuple(allowed), "allowedPriorities")
    if tier is None:
        return TeamPriorities(team.name, None, origin, (), "no tier it may use" if names else "no tiers declared")
    top = names[tier].value
    allowed = [t.name for t in ordered_tiers(policy)
               if t.name == tier or (t.value <= top and may_use(t, team.name))]
    return TeamPriorities(team.name, tier, origin, tuple(allowed), "its tier and below")

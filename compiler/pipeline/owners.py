"""CODEOWNERS from the team units' parts, in a child started before the parent reads the units.

CODEOWNERS reads the sources of every ``out/`` file (``compiler.report.codeowners``): at 1,000
teams its parts were a third of the bytes of the units' stored records, and merging and rendering
them takes ~0.15 s, which the parent waited for when the child started after every unit was read.
With a store each unit's part is an entry of its own (kind ``owners``, by the unit's key): the
child starts once the units this run computes are computed and reads the other parts itself,
while the parent reads the rest of the units' records and lowers ArgoCD. A part missing from the
store (an entry pruned meanwhile) is computed in the child from the team's objects, exactly as
the parent computes it (``unit_owners``).
"""

from __future__ import annotations

from typing import Mapping, Sequence

from compiler.cache.store import Store
from compiler.lower import lower_team
from compiler.model.inventory import Inventory
from compiler.policy.graph import Policy, Team
from compiler.report.codeowners import OwnedPart, owned_part, render_codeowners


def unit_owners(inventory: Inventory, team: Team) -> OwnedPart:
    """A team unit's part: its objects derive from the fleet and that team's file alone."""
    return owned_part(inventory.files, {team.path: team.name})


def stored_part(store: Store, key: str) -> OwnedPart | None:
    value = store.get("owners", key)
    return value if isinstance(value, tuple) and len(value) == 3 else None


def codeowners_of(store: Store, policy: Policy, fleet_part: OwnedPart, known: Mapping[str, OwnedPart],
                  keys: Sequence[tuple[Team, str]], policy_dir: str, out_dir: str) -> bytes:
    """The file from the fleet-scope files' part and each team unit's, in the teams' order:
    ``known`` (computed by this run), else the store's, else computed here."""
    clusters = sorted(policy.clusters)
    parts = [fleet_part]
    for team, key in keys:
        part = known.get(key) or stored_part(store, key)
        if part is None:
            part = unit_owners(Inventory.of(m for c in clusters for m in lower_team(policy, team, c)), team)
        parts.append(part)
    return render_codeowners(policy, parts, policy_dir, out_dir)

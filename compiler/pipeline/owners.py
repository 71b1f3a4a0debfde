"""CODEOWNERS from the team units' parts, rendered while the run would wait for the rules.

CODEOWNERS reads the sources of every ``out/`` file (``compiler.report.codeowners``): at 1,000
teams merging the units' parts and rendering them took ~0.3 s of CPU, which the parent waited for.
With a store each unit's part is an entry of its own (kind ``owners``, by the unit's key), and
so is its *section*, the team's lines of the file (kind ``ownsec``). A team's section reads only
its unit's part and the fleet-scope files' part where it concerns the team (``fleet_share``):
the namespaces the unit's files sit in, the namespaces the fleet's files give the team, and the
fleet's files the team owns alone. So the run, once it has lowered and verified everything else
and would wait for the rules' process (``Run.meanwhile``), reads each team's section and uses it as long as the fleet's share for the team is
the one it was rendered with (a digest kept with it) and no other unit has files in the team's
namespaces (a namespace claimed twice is FLEET004's error, but the file is right either way:
such a run merges every part, as without a store). A part or section missing from the store (an
entry pruned meanwhile) is computed from the team's objects, exactly as the parent computes it
(``unit_owners``).
"""

from __future__ import annotations

import marshal
from collections import Counter, defaultdict
from typing import Any, Mapping, Sequence

from compiler.cache.store import Store, digest
from compiler.lower import lower_team_unit
from compiler.model.inventory import Inventory
from compiler.policy.graph import Policy, Team
from compiler.report.codeowners import (
    OwnedPart,
    codeowners_file,
    merged_outputs,
    owned_part,
    render_codeowners,
    team_section,
)

Key = tuple[str, str]  # (cluster, namespace)


def unit_owners(inventory: Inventory, team: Team) -> OwnedPart:
    """A team unit's part: its objects derive from the fleet and that team's file alone."""
    return owned_part(inventory.files, {team.path: team.name})


def stored_part(store: Store, key: str) -> OwnedPart | None:
    value = store.get("owners", key)
    return value if isinstance(value, tuple) and len(value) == 3 else None


class FleetShares:
    """The fleet-scope files' part, indexed by team (``share``)."""

    def __init__(self, fleet: OwnedPart) -> None:
        self.by_ns, self.kinds, single = fleet
        self.keys_of: dict[str, set[Key]] = defaultdict(set)  # team -> namespaces the fleet's files give it
        for key, owners in self.by_ns.items():
            for owner in owners:
                if owner is not None:
                    self.keys_of[owner].add(key)
        self.rows_of: dict[str, dict[tuple[str, str | None], list[tuple[str, str, str]]]] = defaultdict(dict)
        for where, rows in single.items():
            for row in rows:
                self.rows_of[row[1]].setdefault(where, []).append(row)

    def share(self, team: str, unit_keys: list[Key]) -> OwnedPart:
        """What of the fleet's part the team's section reads: its entries on the unit's namespaces
        and on the namespaces the fleet gives the team, and the files the team owns alone."""
        keys = self.keys_of.get(team, set()).union(unit_keys)
        return ({k: self.by_ns[k] for k in keys if k in self.by_ns}, {k: self.kinds[k] for k in keys if k in self.kinds},
                self.rows_of.get(team, {}))


def _signature(share: OwnedPart, policy_dir: str, out_dir: str) -> str:
    """A digest of a share, the same for equal shares in any process (sets sorted: their order
    follows the per-process string hash)."""
    by_ns, kinds, single = share
    canonical = (sorted(((k, sorted(v, key=repr)) for k, v in by_ns.items()), key=repr),
                 sorted(((k, sorted(v)) for k, v in kinds.items()), key=repr),
                 sorted(((k, sorted(v)) for k, v in single.items()), key=repr))
    return digest(policy_dir, out_dir, marshal.dumps(canonical))


def codeowners_of(store: Store, policy: Policy, fleet_part: OwnedPart, known: Mapping[str, OwnedPart],
                  keys: Sequence[tuple[Team, str]], policy_dir: str, out_dir: str) -> bytes:
    """The file from the fleet-scope files' part and each team unit's, in the teams' order:
    each team's section from the store when it still holds (see the module's docstring), else
    rendered from the unit's part (``known``: computed by this run; else the store's; else
    computed here) and kept."""
    parts: dict[str, OwnedPart] = dict(known)

    def part_of(team: Team, key: str) -> OwnedPart:
        part = parts.get(key) or stored_part(store, key)
        if part is None:
            part = unit_owners(Inventory.of(lower_team_unit(policy, team)), team)
        parts[key] = part
        return part

    sections: list[Any] = []
    count: Counter[Key] = Counter()
    for team, key in keys:
        entry = None if key in parts else store.get("ownsec", key)
        if not (isinstance(entry, tuple) and len(entry) == 3):
            entry = (sorted(part_of(team, key)[0]), None, None)
        sections.append(entry)
        count.update(entry[0])
    shares = FleetShares(fleet_part)
    texts: list[str] = []
    for (team, key), (unit_keys, sig, text) in zip(keys, sections):
        share = shares.share(team.name, unit_keys)
        mine = set(unit_keys)
        if any(count[k] > (k in mine) for k in mine.union(share[0])):  # another unit's files share a namespace
            return render_codeowners(policy, [fleet_part, *(part_of(t, k) for t, k in keys)], policy_dir, out_dir)
        now = _signature(share, policy_dir, out_dir)
        if sig != now or not isinstance(text, str):
            text = team_section(policy, team, merged_outputs([share, part_of(team, key)], out_dir).get(team.name, []))
            store.put("ownsec", key, (unit_keys, now, text))
        texts.append(text)
    return codeowners_file(policy, policy_dir, out_dir, texts)

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

The sections are also kept a block of teams at a time (``_Sections``), and the file by its header and
blocks (``codeowners_kept``): at 5,000 teams reading 5,000 sections, joining, encoding and hashing the
41 MB file were ~0.55 s of this process's critical path after a one-team edit; `validate` there
3.42 -> 2.93 s (medians of 6 interleaved rounds, bench/README.md).
"""

from __future__ import annotations

import functools
import marshal
from collections import Counter, defaultdict
from typing import Any, Callable, Mapping, Sequence

from compiler.cache.store import Store, digest
from compiler.lower import lower_team_unit
from compiler.model.inventory import Inventory
from compiler.pipeline.blocks import unit_blocks
from compiler.pipeline.units import RepoFile, repo_file
from compiler.policy.graph import Policy, Team
from compiler.report.codeowners import (
    OwnedPart,
    codeowners_header,
    merged_outputs,
    owned_part,
    render_codeowners,
    sections_text,
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


Chunk = tuple[str, Callable[[], str | None]]  # a block's sections' text: its digest, and the text when asked


def codeowners_of(store: Store, policy: Policy, fleet_part: OwnedPart, known: Mapping[str, OwnedPart],
                  keys: Sequence[tuple[Team, str]], policy_dir: str, out_dir: str) -> bytes:
    """The file from the fleet-scope files' part and each team unit's, in the teams' order:
    each team's section from the store when it still holds (see the module's docstring), else
    rendered from the unit's part (``known``: computed by this run; else the store's; else
    computed here) and kept."""
    sections = _Sections(store, policy, fleet_part, known, keys, policy_dir, out_dir)
    chunks = sections.chunks()
    return sections.whole() if chunks is None else sections.joined(codeowners_header(policy, policy_dir, out_dir), chunks)


def codeowners_kept(store: Store, policy: Policy, fleet_part: OwnedPart, known: Mapping[str, OwnedPart],
                    keys: Sequence[tuple[Team, str]], policy_dir: str, out_dir: str) -> RepoFile:
    """``codeowners_of`` kept as a repository file (``repo_file``), without the file when it is
    the one an earlier run kept: the header and every block's text the same (kind ``ownfile``,
    keyed by the header and the blocks' digests). A one-team edit that changes no owner (most
    do) then neither joins, encodes nor hashes the file (41 MB at 5,000 teams: ~0.2 s)."""
    sections = _Sections(store, policy, fleet_part, known, keys, policy_dir, out_dir)
    chunks = sections.chunks()
    if chunks is None:
        return repo_file(store, sections.whole())
    header = codeowners_header(policy, policy_dir, out_dir)
    key = digest("ownfile", header, *(d for d, _ in chunks))
    hit = store.get("ownfile", key)
    if isinstance(hit, tuple) and len(hit) == 3 and store.has("repo", hit[0]):
        store.used.add(("repo", hit[0]))
        return hit[0], hit[1], hit[2], None
    file = repo_file(store, sections.joined(header, chunks))
    store.put("ownfile", key, file[:3])
    return file


def _shared(count: Counter[Key], own: Sequence[Key], read: Sequence[Key]) -> bool:
    """Whether another unit's files sit in a namespace a section read (``count``: every unit's)."""
    mine = set(own)
    return any(count[k] > (k in mine) for k in read)


class _Sections:
    """The teams' sections a block of teams at a time (``blocks_of``, as the units'). A block's
    entry (kind ``ownblock``, keyed by the fleet's part and its units' keys) holds each team's
    namespaces and the namespaces its section read (its own and its share of the fleet's), and
    the digest of the block's text, kept apart (kind ``ownchunk``) and read only when the file
    is joined: a one-team edit reads ~N/64 small entries instead of a section per team. A block
    missing from the store, or holding a unit computed by this run, is made of each team's
    section (kind ``ownsec``, checked against the team's share as the module's docstring says)."""

    def __init__(self, store: Store, policy: Policy, fleet_part: OwnedPart, known: Mapping[str, OwnedPart],
                 keys: Sequence[tuple[Team, str]], policy_dir: str, out_dir: str) -> None:
        self.store, self.policy, self.fleet_part, self.keys = store, policy, fleet_part, keys
        self.dirs = policy_dir, out_dir
        self.parts: dict[str, OwnedPart] = dict(known)
        self._shares: FleetShares | None = None

    @property
    def shares(self) -> FleetShares:
        if self._shares is None:
            self._shares = FleetShares(self.fleet_part)
        return self._shares

    def part_of(self, team: Team, key: str) -> OwnedPart:
        part = self.parts.get(key) or stored_part(self.store, key)
        if part is None:
            part = unit_owners(Inventory.of(lower_team_unit(self.policy, team)), team)
        self.parts[key] = part
        return part

    def whole(self) -> bytes:
        """The file merged from every part, as without a store."""
        return render_codeowners(self.policy, [self.fleet_part, *(self.part_of(t, k) for t, k in self.keys)],
                                 *self.dirs)

    def section(self, team: Team, key: str) -> Any:
        """A team's stored section (its namespaces, its share's signature, its text), or its
        namespaces alone when the store lacks it or the run computed its unit."""
        entry = None if key in self.parts else self.store.get("ownsec", key)
        if isinstance(entry, tuple) and len(entry) == 3:
            return entry
        return sorted(self.part_of(team, key)[0]), None, None

    def joined(self, header: str, chunks: list[Chunk]) -> bytes:
        """The file: the header, then the blocks' texts (every part merged if one is gone)."""
        texts = [text() for _, text in chunks]
        if any(t is None for t in texts):
            return self.whole()
        return (header + "".join(t or "" for t in texts)).encode()

    def chunks(self) -> list[Chunk] | None:
        """Each block's text, in the teams' order; None when another unit's files sit in a
        namespace a section read (then only merging every part gives the file)."""
        store = self.store
        fleet = _signature(self.fleet_part, *self.dirs)
        count: Counter[Key] = Counter()
        # per block: its key, its units, and its entry ((namespaces, read) per team, its text's
        # digest) or else each team's section
        blocks: list[tuple[str, list[tuple[Team, str]], Any, list[Any]]] = []
        for block in unit_blocks(self.keys):
            bkey = digest("ownblock", fleet, *(key for _, key in block))
            meta = None if any(key in self.parts for _, key in block) else store.get("ownblock", bkey)
            if not (isinstance(meta, tuple) and len(meta) == 2 and len(meta[0]) == len(block)):
                meta = None
            found = meta[0] if meta is not None else [self.section(team, key) for team, key in block]
            for entry in found:
                count.update(entry[0])
            blocks.append((bkey, block, meta, found))
        chunks: list[Chunk] = []
        for bkey, block, meta, found in blocks:
            if meta is not None:
                if any(_shared(count, own, read) for own, read in found):
                    return None
                store.used.add(("ownchunk", meta[1]))
                chunks.append((meta[1], functools.partial(self._text, block, meta[1])))
                continue
            texts, metas = [], []
            for (team, key), entry in zip(block, found):
                text, read = self._checked(team, key, entry, count)
                if text is None:
                    return None
                texts.append(text)
                metas.append((entry[0], read))
            chunk = sections_text(texts)
            cdigest = digest("ownchunk", chunk)
            store.put("ownchunk", cdigest, chunk)
            store.put("ownblock", bkey, (metas, cdigest))
            chunks.append((cdigest, functools.partial(str, chunk)))
        return chunks

    def _checked(self, team: Team, key: str, entry: Any, count: Counter[Key]) -> tuple[str | None, list[Key]]:
        """A team's section, rendered again unless its stored text was rendered with the share it
        has now, and the namespaces it read; no text when another unit's files share one."""
        unit_keys, sig, text = entry
        share = self.shares.share(team.name, unit_keys)
        read = list(set(unit_keys).union(share[0]))  # only tested: any order
        if _shared(count, unit_keys, read):
            return None, read
        now = _signature(share, *self.dirs)
        if sig != now or not isinstance(text, str):
            part = self.part_of(team, key)
            text = team_section(self.policy, team, merged_outputs([share, part], self.dirs[1]).get(team.name, []))
            self.store.put("ownsec", key, (unit_keys, now, text))
        return text, read

    def _text(self, block: list[tuple[Team, str]], cdigest: str) -> str | None:
        """A kept block's text; from its teams' sections when the entry went meanwhile (None if
        that no longer gives the same text)."""
        chunk = self.store.get("ownchunk", cdigest)
        if isinstance(chunk, str):
            return chunk
        count: Counter[Key] = Counter()  # the namespaces were checked against every unit's already
        texts = [self._checked(team, key, self.section(team, key), count)[0] for team, key in block]
        chunk = sections_text(t or "" for t in texts)
        return chunk if digest("ownchunk", chunk) == cdigest else None

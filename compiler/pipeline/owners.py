"""CODEOWNERS from the team units' parts, rendered while the run would wait for the rules.

CODEOWNERS reads the sources of every ``out/`` file (``compiler.report.codeowners``): at 1,000
teams merging the units' parts and rendering them took ~0.3 s of CPU, which the parent waited for.
With a store each unit's part is an entry of its own (kind ``owners``, by the unit's key), and
so is its *section*, the team's lines of the file (kind ``ownsec``). A team's section reads only
its unit's part and the fleet-scope files' part where it concerns the team (``FleetShares``):
whatever of it bears the *names* the team's lines depend on (``names``: the namespaces its files
sit in, on any cluster, since one line may stand for every cluster; the paths below a cluster's
folder of its cluster-scoped files), those of the fleet's files the team owns alone included. So
the run, once it has lowered and verified everything else and would wait for the rules' process
(``Run.meanwhile``), reads each team's section and uses it as long as the fleet's share for the
team is the one it was rendered with (a digest kept with it) and no other unit's files bear one of
those names (``bears``: a file bears its namespace, its path below the cluster's folder and the
dot-separated parts of its file name, which a namespace's line for every kind may match): a team
using another's namespace name on another cluster, which FLEET004 allows, an object named with
another team's namespace name, or a namespace claimed twice, its error. The file is right either
way: such a run merges every part, as without a store. A part or section missing from the store (an entry pruned meanwhile) is computed
from the team's objects, exactly as the parent computes it (``unit_owners``).

The sections are also kept a block of teams at a time (``_Sections``), and the file by its header and
blocks (``codeowners_kept``): at 5,000 teams reading 5,000 sections, joining, encoding and hashing the
41 MB file (as it then was: 8.6 MB since a line stands for every cluster, 2.2 MB since one stands for
every kind) were ~0.55 s of this
process's critical path after a one-team edit; `validate` there 3.42 -> 2.93 s (medians of 6
interleaved rounds, bench/README.md).
"""

from __future__ import annotations

import functools
import marshal
from collections import Counter, defaultdict
from typing import Any, Callable, Mapping, Sequence

from compiler.cache.store import Store, digest
from compiler.lower import lower_team_unit
from compiler.model.inventory import Inventory
from compiler.pipeline.units import RepoFile, repo_file, unit_blocks
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
from compiler.report.owner_names import name_of, starting_with

Key = str  # a name a team's lines depend on (``names``)


def unit_owners(inventory: Inventory, team: Team) -> OwnedPart:
    """A team unit's part: its objects derive from the fleet and that team's file alone."""
    return owned_part(inventory.files, {team.path: team.name})


def stored_part(store: Store, key: str) -> OwnedPart | None:
    value = store.get("owners", key)
    return value if isinstance(value, tuple) and len(value) == 5 else None


def names(part: OwnedPart) -> set[Key]:
    """The names a part's team lines depend on (``compiler.report.owner_names.name_of``): they
    depend on the other files bearing them alone (``bears``)."""
    by_ns, _, single, others, _ = part
    found = {ns for _, ns in by_ns}
    for (_, namespace), rows in single.items():
        if namespace is None:
            found.update(n for relpath, _, _ in rows if (n := name_of(None, relpath)) is not None)
    found.update(others.values())
    return found


def bears(part: OwnedPart, read: set[Key]) -> set[Key]:
    """The names a part's files bear: those its lines depend on (``read``: ``names(part)``) and
    the dotted names of its files (a namespace's line for every cluster matches a file bearing its
    name as one). Names of objects many teams share (a class's, ``a100-80gb-mig-1g``) are borne by
    many units but read by a section only when a team's namespace is so named."""
    return read.union(part[4])


Rows = dict[tuple[str, str | None], list[tuple[str, str, str]]]


class FleetShares:
    """The fleet-scope files' part, indexed by name and by team (``share``)."""

    def __init__(self, fleet: OwnedPart) -> None:
        self.by_ns, self.kinds, single, others, self.dotted = fleet
        self.keys_by_name: dict[Key, list[tuple[str, str]]] = defaultdict(list)
        self.names_of: dict[str, set[Key]] = defaultdict(set)  # team -> names the fleet's files give it
        for key, owners in self.by_ns.items():
            self.keys_by_name[key[1]].append(key)
            for owner in owners:
                if owner is not None:
                    self.names_of[owner].add(key[1])
        self.rows_by_name: dict[Key, list[tuple[tuple[str, str | None], tuple[str, str, str]]]] = defaultdict(list)
        self.rows_of: dict[str, Rows] = defaultdict(dict)
        for where, rows in single.items():
            for row in rows:
                self.rows_of[row[1]].setdefault(where, []).append(row)
                name = name_of(where[1], row[0])
                if name is not None:
                    self.rows_by_name[name].append((where, row))
                    self.names_of[row[1]].add(name)
        self.others_by_name: dict[Key, list[str]] = defaultdict(list)  # name -> the paths bearing it
        for rest, name in others.items():
            self.others_by_name[name].append(rest)
        self.ordered = sorted(set(self.dotted).union(self.keys_by_name))  # for a team's prefix line

    def share(self, team: str, unit_names: list[Key]) -> tuple[OwnedPart, set[Key]]:
        """What of the fleet's part the team's section reads, and the names it bears: the fleet's
        entries bearing the unit's names or those the fleet's files give the team, the files the
        team owns alone, and its namespaces and dotted names starting with the team's name (which
        decide its prefix line, ``compiler.report.owner_names.prefixed_teams``)."""
        read = self.names_of.get(team, set()).union(unit_names)
        prefixed = list(starting_with(self.ordered, team))
        keys = [key for name in read.union(prefixed) for key in self.keys_by_name.get(name, ())]
        single: Rows = {where: list(rows) for where, rows in self.rows_of.get(team, {}).items()}
        for name in read:
            for where, row in self.rows_by_name.get(name, ()):
                if row[1] != team:
                    single.setdefault(where, []).append(row)
        for rows in single.values():
            rows.sort()
        others = {rest: name for name in read for rest in self.others_by_name.get(name, ())}
        dotted = {name: self.dotted[name] for name in read.union(prefixed) if name in self.dotted}
        return ({k: self.by_ns[k] for k in keys}, {k: self.kinds[k] for k in keys if k in self.kinds}, single,
                others, dotted), read


def _signature(share: OwnedPart, policy_dir: str, out_dir: str) -> str:
    """A digest of a share, the same for equal shares in any process (sets sorted: their order
    follows the per-process string hash)."""
    by_ns, kinds, single, others, dotted = share
    canonical = (sorted(((k, sorted(v, key=repr)) for k, v in by_ns.items()), key=repr),
                 sorted(((k, sorted(v)) for k, v in kinds.items()), key=repr),
                 sorted(((k, sorted(v)) for k, v in single.items()), key=repr), sorted(others.items()),
                 sorted(dotted.items(), key=repr))
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
    do) then neither joins, encodes nor hashes the file (2.2 MB at 5,000 teams)."""
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
    """Whether another unit's files bear a name a section read (``count``: every unit's)."""
    mine = set(own)
    return any(count[k] > (k in mine) for k in read)


class _Borne:
    """The names every unit's files bear (``bears``), counted, and which teams' names start one
    that another unit's files bear: then the team has no line for every name starting with its
    own (``compiler.report.owner_names.prefixed_teams``; another unit's files are never this team's)."""

    def __init__(self) -> None:
        self.count: Counter[Key] = Counter()
        self._ordered: list[Key] | None = None

    def taken(self, team: str, own: Sequence[Key]) -> bool:
        if self._ordered is None:  # a path below a cluster's folder (with '/') is no such name
            self._ordered = sorted(k for k in self.count if "/" not in k)
        return any(self.count[k] > (k in own) for k in starting_with(self._ordered, team))


class _Sections:
    """The teams' sections a block of teams at a time (``blocks_of``, as the units'). A block's
    entry (kind ``ownblock``, keyed by the fleet's part and its units' keys) holds each team's
    names, the names its section read (its own and its share of the fleet's), whether other
    units' files bore a name starting with the team's (``_Borne.taken``), and
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
        self.borne = _Borne()  # every unit's, counted by ``chunks``

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
        """A team's stored section (the names its unit's files bear, those its lines depend on,
        its share's signature, its text), or its names alone when the store lacks it or the run
        computed its unit."""
        entry = None if key in self.parts else self.store.get("ownsec", key)
        if isinstance(entry, tuple) and len(entry) == 4:
            return entry
        part = self.part_of(team, key)
        read = names(part)
        return sorted(bears(part, read)), sorted(read), None, None

    def joined(self, header: str, chunks: list[Chunk]) -> bytes:
        """The file: the header, then the blocks' texts (every part merged if one is gone)."""
        texts = [text() for _, text in chunks]
        if any(t is None for t in texts):
            return self.whole()
        return (header + "".join(t or "" for t in texts)).encode()

    def chunks(self) -> list[Chunk] | None:
        """Each block's text, in the teams' order; None when another unit's files sit in a
        name a section read (then only merging every part gives the file)."""
        store = self.store
        fleet = _signature(self.fleet_part, *self.dirs)
        borne = self.borne
        # per block: its key, its units, and its entry ((names, read, taken) per team, its
        # text's digest) or else each team's section
        blocks: list[tuple[str, list[tuple[Team, str]], Any, list[Any]]] = []
        for block in unit_blocks(self.keys):
            bkey = digest("ownblock", fleet, *(key for _, key in block))
            meta = None if any(key in self.parts for _, key in block) else store.get("ownblock", bkey)
            if not (isinstance(meta, tuple) and len(meta) == 2 and len(meta[0]) == len(block)):
                meta = None
            found = meta[0] if meta is not None else [self.section(team, key) for team, key in block]
            for entry in found:
                borne.count.update(entry[0])
            blocks.append((bkey, block, meta, found))
        chunks: list[Chunk] = []
        for bkey, block, meta, found in blocks:
            if meta is not None:
                if any(_shared(borne.count, own, read) for own, read, _ in found):
                    return None
                if all(borne.taken(team.name, own) == taken for (team, _), (own, _, taken) in zip(block, found)):
                    store.used.add(("ownchunk", meta[1]))
                    chunks.append((meta[1], functools.partial(self._text, block, meta[1])))
                    continue
                found = [self.section(team, key) for team, key in block]  # a prefix line came or went
            texts, metas = [], []
            for (team, key), entry in zip(block, found):
                text, read, taken = self._checked(team, key, entry)
                if text is None:
                    return None
                texts.append(text)
                metas.append((entry[0], read, taken))
            chunk = sections_text(texts)
            cdigest = digest("ownchunk", chunk)
            store.put("ownchunk", cdigest, chunk)
            store.put("ownblock", bkey, (metas, cdigest))
            chunks.append((cdigest, functools.partial(str, chunk)))
        return chunks

    def _checked(self, team: Team, key: str, entry: Any) -> tuple[str | None, list[Key], bool]:
        """A team's section, rendered again unless its stored text was rendered with the share it
        has now and the same answer to whether other units' files bear a name starting with the
        team's (``_Borne.taken``), with the names it read (``names``) and that answer; no text
        when another unit's files bear a name it read."""
        borne, unit_names, sig, text = entry
        share, given = self.shares.share(team.name, unit_names)
        read = sorted(given)
        if _shared(self.borne.count, borne, read):
            return None, read, False
        taken = self.borne.taken(team.name, borne)
        now = digest(_signature(share, *self.dirs), str(taken))
        if sig != now or not isinstance(text, str):
            part = self.part_of(team, key)
            owned = merged_outputs([share, part], self.dirs[1], [team.name] if taken else [])
            text = team_section(self.policy, team, owned.get(team.name, []))
            self.store.put("ownsec", key, (borne, unit_names, now, text))
        return text, read, taken

    def _text(self, block: list[tuple[Team, str]], cdigest: str) -> str | None:
        """A kept block's text; from its teams' sections when the entry went meanwhile (None if
        that no longer gives the same text)."""
        chunk = self.store.get("ownchunk", cdigest)
        if isinstance(chunk, str):
            return chunk
        texts = [self._checked(team, key, self.section(team, key))[0] for team, key in block]
        chunk = sections_text(t or "" for t in texts)
        return chunk if digest("ownchunk", chunk) == cdigest else None

"""What a run knows of its units besides their records: their keys, the blocks consecutive units
(and files) are kept in, where each ``out/`` file's bytes are, the files themselves read lazily,
the repository files kept by digest, and the team-scope rules' verdicts kept per unit.

Apart from ``compiler.pipeline.run`` (the run and its result) so that each stays short.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence, TypeVar

from compiler.cache.records import DiagRecord, RunRecord, diag_in, diag_out
from compiler.cache.store import Store, content_digest, digest
from compiler.diagnostics import Diagnostic
from compiler.report.fragments import Recipe, kept_piece

if TYPE_CHECKING:
    from compiler.pipeline.run import PolicyInput
    from compiler.policy.graph import Team


# A repository file rendered (CODEOWNERS, a schema): its digest, size and lines, and its bytes
# unless the store keeps them (kind ``repo``, by the digest).
RepoFile = tuple[str, int, int, bytes | None]


def repo_file(store: Store, data: bytes) -> RepoFile:
    """``data`` kept in the store by its digest, unless it holds it already (1.7 MB of
    CODEOWNERS at 1,000 teams, the same after most edits: the run's record keeps the digest)."""
    key = content_digest(data)
    if not store.has("repo", key):
        store.put("repo", key, data)
    return key, len(data), data.count(b"\n"), None if store.has("repo", key) else data


def kept(store: Store, render: Callable[..., bytes], *args: Any) -> RepoFile:
    """``render(*args)`` kept as a repository file (``repo_file``): run in a child, the parent
    receives the file's digest and size, not the file (CODEOWNERS was 41 MB at 5,000 teams before
    its lines stood for every cluster and kind, 2.2 MB now: taking it back, unmarshalling and
    hashing it was ~0.1 s of the parent's critical path then)."""
    return repo_file(store, render(*args))


BLOCK = 64  # units per block, on average (``ends_block``; ``compiler.pipeline.blocks``)
T = TypeVar("T")


def ends_block(path: str) -> bool:
    """Whether a block of consecutive team files (or their units) ends after the file at ``path``:
    decided by the path alone (content-defined, as in chunking), so adding or removing a team
    changes its own block only. Asked four times per file and run (parses, units, verdicts, the
    verdicts' liveness), hence remembered."""
    return _ends(path, BLOCK)


@functools.lru_cache(maxsize=1 << 16)
def _ends(path: str, block: int) -> bool:
    return int(digest("block", path)[:8], 16) % block == 0


def blocks_of(items: Sequence[T], path: Callable[[T], str]) -> list[list[T]]:
    """``items`` (in the teams' order) cut into consecutive blocks (``ends_block``)."""
    out: list[list[T]] = []
    current: list[T] = []
    for item in items:
        current.append(item)
        if ends_block(path(item)):
            out.append(current)
            current = []
    if current:
        out.append(current)
    return out


Unit = tuple["Team", str]  # a team and its unit's key


def unit_blocks(units: Sequence[Unit]) -> list[list[Unit]]:
    """``units`` cut into consecutive blocks (``compiler.pipeline.units.ends_block``)."""
    return blocks_of(units, lambda unit: unit[0].path)


def block_key(block: Sequence[Unit]) -> str:
    """A block's entry key: its units' keys in order (each already keyed by the compiler, the
    fleet and its team file)."""
    return digest("block", *(key for _, key in block))


def fleet_key(fp: str, path: str, content: str) -> str:
    """The fleet file's key: the compiler's and the file's path and content digest."""
    return digest(fp, path, content)


def unit_key(fleet: str, path: str, content: str) -> str:
    """A team unit's key: the fleet's (``fleet_key``) and the team file's path and content digest."""
    return digest(fleet, path, content)


def team_unit_keys(fp: str, inputs: list[PolicyInput]) -> dict[str, str]:
    """Each team file's display path -> its unit's key ({} without exactly one fleet file)."""
    fk = fleet_input_key(fp, inputs)
    if fk is None:
        return {}
    return {i.shown: unit_key(fk, i.shown, i.digest) for i in inputs if not i.is_fleet and i.data is not None}


def fleet_input_key(fp: str, inputs: list[PolicyInput]) -> str | None:
    """``fleet_key`` of the one fleet file (None without exactly one)."""
    fleet = [i for i in inputs if i.is_fleet and i.data is not None]
    return fleet_key(fp, fleet[0].shown, fleet[0].digest) if len(fleet) == 1 else None


def team_table_key(fp: str, team_path: str) -> str:
    """The key of a team's table of verified objects (``compiler.pipeline.tables.verify_objects``)."""
    return digest(fp, "team", team_path)


# The kinds of a team unit's entries, all under its key (but its table of verified objects).
UNIT_KINDS = ("unit", "files", "blob", "outline", "rules", "owners", "ownsec", "rows")


def unit_entries(fp: str, team_path: str, key: str) -> Iterator[tuple[str, str]]:
    """The store's entries of a team unit taken whole from the store (``Store.prune`` keeps them)."""
    for kind in UNIT_KINDS:
        yield kind, key
    yield "verified", team_table_key(fp, team_path)


class CacheEntryMissing(Exception):
    """A cached file's bytes are gone (pruned or deleted meanwhile): compile with an empty store."""


def add_files(digests: dict[str, str], files: Mapping[str, str]) -> None:
    """``digests`` += ``files``: two units (or a unit and the files rendered outside units) never
    render the same path."""
    if not digests.keys().isdisjoint(files):
        raise AssertionError(f"two objects render to out/{sorted(digests.keys() & files.keys())[0]}")
    digests.update(files)  # C loops: 82,000 files on the 1,000-team benchmark


def verdict_blocks(keys: Mapping[str, str]) -> list[tuple[str, list[tuple[str, str]]]]:
    """The team-scope verdicts' blocks (kind ``verdicts``): (the block's key, its (team file, unit
    key) pairs), blocks cut as the units' (``ends_block``) over the team files in path order, so
    that the run which forked the rules' process can name them without the policy."""
    return [(digest("verdicts", *(key for _, key in block)), block)
            for block in blocks_of(sorted(keys.items()), lambda item: item[0])]


class StoredVerdicts:
    """A team's team-scope findings (``compiler.validate.driver.Verdicts``), kept under its unit's
    key (kind ``rules``): they read the fleet and that team only, like its lowering, so a one-team
    edit runs the team-scope checks of one team. They are also kept a block of teams at a time
    (kind ``verdicts``, ``verdict_blocks``), so a one-team edit reads ~N/64 entries and one block's
    teams' instead of one per team (5,000 entries at 5,000 teams). The fleet-scope findings are
    kept under the fleet file's key (``fleet_key``; a team edit proves no DeviceClass again).
    Written by the process that runs the rules; the run that forked it marks them live
    (``Run.run``)."""

    def __init__(self, store: Store, keys: dict[str, str], fleet: str | None = None) -> None:
        self.store = store
        self.keys = keys
        self.fleet_key = fleet
        self._blocks = verdict_blocks(keys)
        self._known: dict[str, list[DiagRecord]] | None = None  # team file -> findings, read or found
        self._whole: set[str] = set()  # the blocks read whole

    def fleet(self) -> list[Diagnostic] | None:
        stored = self._records(self.fleet_key)
        return None if stored is None else [diag_in(d) for d in stored]

    def put_fleet(self, found: list[Diagnostic]) -> None:
        self._keep(self.fleet_key, [diag_out(d) for d in found])

    def get(self, team: Team) -> list[Diagnostic] | None:
        known = self._read_blocks()
        stored = known.get(team.path)
        if stored is None:
            stored = self._records(self.keys.get(team.path))
            if stored is None:
                return None
            known[team.path] = stored
        return [diag_in(d) for d in stored]

    def put(self, team: Team, found: list[Diagnostic]) -> None:
        records = [diag_out(d) for d in found]
        self._read_blocks()[team.path] = records
        self._keep(self.keys.get(team.path), records)

    def done(self) -> None:
        """Keep every block not read whole whose teams' findings are all known."""
        known = self._read_blocks()
        for bkey, block in self._blocks:
            if bkey not in self._whole and len(block) > 1 and all(path in known for path, _ in block):
                self.store.put("verdicts", bkey, [known[path] for path, _ in block])

    def _read_blocks(self) -> dict[str, list[DiagRecord]]:
        if self._known is None:
            self._known = {}
            for bkey, block in self._blocks:
                stored = self.store.get("verdicts", bkey) if len(block) > 1 else None
                if isinstance(stored, list) and len(stored) == len(block):
                    self._whole.add(bkey)
                    self._known.update((path, found) for (path, _), found in zip(block, stored))
        return self._known

    def _records(self, key: str | None) -> list[DiagRecord] | None:
        """One verdict's findings as kept (kind ``rules``), or None when not kept."""
        stored = None if key is None else self.store.get("rules", key)
        return stored if isinstance(stored, list) else None

    def _keep(self, key: str | None, records: list[DiagRecord]) -> None:
        if key is not None:
            self.store.put("rules", key, records)


class FileHomes(Mapping[str, str]):
    """``out/`` path -> the key of the unit (or of the inline blob) holding its bytes, built when
    first asked: only a build that writes files asks, and then reads every unit's ``files``."""

    def __init__(self, unit_files: Callable[[str], dict[str, str] | None], rec: RunRecord) -> None:
        self.unit_files = unit_files  # Run.unit_files
        self.rec = rec
        self._map: dict[str, str] | None = None

    def _built(self) -> dict[str, str]:
        if self._map is None:
            where: dict[str, str] = {}
            for key in self.rec.units:
                files = self.unit_files(key)
                if files is None:
                    raise CacheEntryMissing(f"files/{key}")
                where.update(dict.fromkeys(files, key))
            where.update(dict.fromkeys(self.rec.inline, self.rec.glob))
            where.update(self.rec.homes)
            self._map = where
        return self._map

    def __getitem__(self, rel: str) -> str:
        return self._built()[rel]

    def __iter__(self) -> Iterator[str]:
        return iter(self._built())

    def __len__(self) -> int:
        return len(self._built())


def cooked(store: Store, recipe: Recipe) -> bytes:
    """A report's bytes from its recipe (``compiler.pipeline.policy_unit.stored_part``): its
    literal text and the kept fragments it names (a fragment gone: ``CacheEntryMissing``)."""
    texts: list[str] = []
    for piece in recipe:
        if isinstance(piece, str):
            texts.append(piece)
            continue
        text = store.get("fragment", piece[0])
        if not isinstance(text, str):
            raise CacheEntryMissing(f"fragment/{piece[0]}")
        texts.append(text)
    return "".join(texts).encode()


class LazyFiles(Mapping[str, bytes]):
    """``out/``-relative path → bytes, read from the units' blobs when first asked for."""

    def __init__(self, digests: dict[str, str], fetch: Callable[[str], bytes]) -> None:
        self.digests = digests
        self.fetch = fetch

    def __getitem__(self, rel: str) -> bytes:
        if rel not in self.digests:
            raise KeyError(rel)
        return self.fetch(rel)

    def __iter__(self) -> Iterator[str]:
        return iter(self.digests)

    def __len__(self) -> int:
        return len(self.digests)


class StoredFragments:
    """Report texts that read the fleet and some teams' files alone
    (``compiler.report.fragments.Fragments``), kept by those teams' units' keys (kind
    ``fragment``). ``names``: team name -> its unit's key (None when two files name one team:
    every text is rendered). The keys read or written are in ``used``: a forked process hands
    them back, so that the run keeps them live."""

    def __init__(self, store: Store, names: Mapping[str, str] | None, fleet: str | None = None) -> None:
        self.store = store
        self.names = names
        self.fleet = fleet  # the fleet file's key (``fleet_input_key``): None, nothing kept by it
        self.used: list[str] = []

    def of_fleet(self, what: str, compute: Callable[[], Any]) -> Any:
        if self.fleet is None:
            return compute()
        key = digest("fragment", what, self.fleet)
        hit = self.store.get("fragment", key)
        if isinstance(hit, tuple) and len(hit) == 1:  # the value itself may be None
            self.used.append(key)
            return hit[0]
        value = compute()
        self.store.put("fragment", key, (value,))
        self.used.append(key)
        return value

    def text(self, what: str, teams: Sequence[str], render: Callable[[], str | None]) -> str | None:
        names = self.names
        if names is None:
            return render()
        try:  # unit keys are fixed-length digests: joined, they are one unambiguous part
            key = digest("fragment", what, "".join([names[t] for t in teams]))
        except KeyError:
            return render()
        hit = self.store.get("fragment", key)
        if isinstance(hit, str):
            self.used.append(key)
            return kept_piece(hit, key)
        text = render()
        if text is not None:
            self.store.put("fragment", key, text)
            if ("fragment", key) in self.store.used:  # kept: a report may name it (``recipe``)
                self.used.append(key)
                return kept_piece(text, key)
        return text


def team_names(team_keys: Mapping[str, str], teams: Sequence[Team]) -> dict[str, str] | None:
    """Team name -> its unit's key (``StoredFragments``), or None when two files name one team."""
    names = {t.name: team_keys[t.path] for t in teams if t.path in team_keys}
    return names if len(names) == len(teams) else None

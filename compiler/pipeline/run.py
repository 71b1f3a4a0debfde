"""The one pipeline: load → validate → lower → verify → emit → report, consulting a store.

Every command runs this one sequence (``compile_policies``; the stages, in order, are
``compiler.pipeline.stages.compile_run``). The store decides only where each unit's result comes
from: ``compiler.cache.store.Store`` (the on-disk cache of the compile commands) returns what an
earlier run computed from the same inputs; ``NullStore`` (``--no-cache``, tests, benchmarks) holds
nothing, so every unit is computed. The result is the same either way (tests/test_incremental.py).

Units, by the scope of what they read:

- *file*: one policy file's parse (load), keyed by its bytes;
- *fleet*: the cluster passes' objects (lower), verified one at a time through a table keyed by
  content; the Cohorts (but the spare quota's holder) kept a cluster at a time (``pipeline.cohorts``);
- *team*: everything the team passes produce for one team on every cluster, rendered and
  verified, keyed by the fleet's and that team's bytes (team passes read no other team:
  ``compiler.lower``), with an outline of its Kueue objects for ``diff`` (``stored_unit``); the
  records of consecutive units are also kept merged, a block at a time (``compiler.pipeline.blocks``);
- *summary*: a fact of one team that whole-policy passes and rules fold over every team
  (``compiler.policy.team_facts``), kept a block of teams at a time (``pipeline.summaries``);
- *policy*: the semantic rules, and REPORT.md with allocation.json, computed in two more
  processes while this one lowers (``compiler.cache.forked``; their texts that list teams are kept
  by those teams' units: ``StoredFragments``); the rules' errors stop the build
  before anything is emitted. The rules' findings are kept by every input (``checks``): the
  commands that stop after validate (``explain``, ``report``, ``nodes``) read them instead of
  running the rules. The team-scope rules' findings are kept per team unit (``rules``): they
  read the fleet and their team only (``tests/test_rule_scopes.py``);
- *output*: ArgoCD objects, GITOPS006, CODEOWNERS and the bootstrap report, from the merged
  inventories of all units (``compiler.model.inventory``); CODEOWNERS reads each unit's part
  (kind ``owners``) and its sections a block of teams at a time (``compiler.pipeline.owners``),
  while this process would wait for the rules (``Run.meanwhile``), or without a store in a child;
- *run*: the whole result, keyed by every input: an unchanged tree compiles nothing. The digests
  of every ``out/`` file are the last run's, patched with the units that came and went
  (``Run.out_digests``). A run that renders digests (``build``) drops the entries it did not use
  once they outnumber the used ones (``Store.prune``); ``validate`` and ``check`` only once the store
  is heavy (``compiler.cache.weight``), so ``check`` finds the units of the build that wrote ``out/``.
"""

from __future__ import annotations

import gc
import marshal
import time
import zlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from compiler.cache.forked import Pending
from compiler.cache.records import RunRecord, diag_in, diag_out, outline_in, outline_out
from compiler.cache.store import NullStore, Store, compiler_fingerprint, content_digest, digest, tree_fingerprint
from compiler.diagnostics import Diagnostic, has_errors
from compiler.load.files import read_inputs
from compiler.load.paths import display_path
from compiler.model.manifest import Manifest
from compiler.pipeline.lifetime import hold
from compiler.pipeline.options import Options
from compiler.pipeline.out_digests import out_digests
from compiler.pipeline.previous import previous_outputs
from compiler.pipeline.units import (
    CacheEntryMissing,
    FileHomes,
    LazyFiles,
    RepoFile,
    StoredVerdicts,
    cooked,
    fleet_input_key,
    team_unit_keys,
    unit_entries,
    verdict_blocks,
)
from compiler.pipeline.waivers import expire

if TYPE_CHECKING:
    from compiler.policy.graph import Policy
    from compiler.verify.run import Verifier


@dataclass
class Result:
    diagnostics: list[Diagnostic] = field(default_factory=list)
    failed: bool = True  # policy errors: nothing to compare or write
    policy: Policy | None = None  # validated (None when it failed, or when the run came from the store)
    manifests: list[Manifest] = field(default_factory=list)  # lowered by this run, in out/ order
    out_digests: dict[str, str] = field(default_factory=dict)  # out/-relative path -> digest
    out_files: Mapping[str, bytes] = field(default_factory=dict)  # the same paths -> bytes, lazily
    repo_files: Mapping[str, bytes] = field(default_factory=dict)  # relative to the root, lazily
    repo_digests: dict[str, str] = field(default_factory=dict)  # the same paths -> digest
    n_objects: int = 0
    verify_stats: dict[str, object] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    cached: str = "none"  # "result" (nothing compiled), "partial" (units reused), "none"
    units: dict[str, dict[str, str]] = field(default_factory=dict)  # team unit key -> its files' digests
    outlines: dict[str, dict[str, Manifest]] = field(default_factory=dict)  # shared unit -> out/ path -> outline
    key: str = ""  # the run's key (every input)
    record: RunRecord | None = None  # what the store keeps of the run
    unit_files: Callable[[str], dict[str, str] | None] = lambda key: None  # a unit's files' digests
    all_digests: Callable[[], dict[str, str] | None] = dict  # out_digests, when the run did without (validate, check)

    @property
    def ok(self) -> bool:
        return not self.failed and not has_errors(self.diagnostics)


@contextmanager
def no_collections() -> Iterator[None]:
    """A build allocates millions of objects that live until it ends; the cyclic collector
    would re-walk them over and over (~30% of the 1,000-team benchmark with the default
    thresholds, bench/README.md; still ~60% of loading the cache with thresholds raised 100x).
    Cycles are rare here (peak RSS +3-10% without collecting), so none runs during a compile."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def compile_policies(opts: Options, store: Store | None = None, *, shared: frozenset[str] | None = None,
                     objects: bool = True, reports: bool = True, outlines: bool = True, digests: bool = True) -> Result:
    """Run every stage over the policy directory; nothing here touches ``out/``.

    ``objects=False`` (the CLI's validate, check and build, which use the rendered files only):
    ``Result.manifests`` holds the fleet's and ArgoCD's objects but no team's, so a team's objects
    are freed once rendered and verified (peak memory at 10,000 teams: bench/README.md).
    ``reports=False`` (``diff``, which compares objects): no REPORT.md, allocation.json or
    CODEOWNERS, and the run's result is not stored (it lacks them).

    ``shared`` (``gpupolicy diff``): the team units the other side of the comparison has too. Of
    those the result holds outlines (``Result.outlines``; a cold store lowers them too); every other unit is lowered, even
    when stored, so its objects are at hand (in ``Result.manifests``), and the policy is always
    assembled (no whole-result answer). ``outlines=False``: the other side keeps the shared
    units' outlines; this one takes those units from the store whole, without them.

    ``digests=False`` (``validate``, which compares no file): ``Result.out_digests`` and
    ``out_files`` are empty, so a one-team edit reads no unit's ``files`` (the next ``check``
    finds them from the last run's: ``Run.out_digests``)."""
    with no_collections():
        run = Run(opts, NullStore() if store is None else store, shared, objects, reports, outlines, digests)
        hold(run)
        result = run.run()
        if result is None:  # a stored unit's entry vanished meanwhile
            result = Run(opts, NullStore(), shared, objects, reports, outlines, digests).run()
            assert result is not None
    return result


def unit_keys(opts: Options) -> dict[str, str]:
    """The keys of the team units a run over ``opts`` would use, each with its file's display
    path, without compiling anything (a file that turns out not to be a team only adds a key no
    run asks for)."""
    run = Run(opts, NullStore())
    inputs, _ = run.read_inputs()
    run.fingerprint()
    return {key: shown for shown, key in team_unit_keys(run.fp, inputs).items()}


def validated_policy(opts: Options, store: Store | None = None) -> tuple[Policy | None, list[Diagnostic]]:
    """The pipeline up to validate (load, schema, semantic rules), for the commands that read the
    validated policy and nothing lowered (``explain``, ``report``, ``nodes``); files are parsed
    through the store like any run's."""
    from compiler.pipeline.front import validate_run  # the front stages' imports, as in Run.run

    with no_collections():
        run = Run(opts, NullStore() if store is None else store)
        hold(run)
        inputs, diags0 = run.read_inputs()
        run.fingerprint()
        run.previous = previous_outputs(opts, run.store)
        run.key_all = run.key_of(inputs, diags0)
        run.team_keys = team_unit_keys(run.fp, inputs)
        run.fleet_key = fleet_input_key(run.fp, inputs)
        return validate_run(run, inputs, diags0)


@dataclass(frozen=True)
class PolicyInput:
    shown: str  # display path, relative to the root
    data: bytes | None  # None: unreadable (reported)
    is_fleet: bool
    digest: str = ""  # of ``data``, hashed once: every key of the file derives from it ("" when unreadable)


class Run:
    """One run's state: its options, its store, and where each unit's rendered files are."""

    def __init__(self, opts: Options, store: Store, shared: frozenset[str] | None = None,
                 objects: bool = True, reports: bool = True, outlines: bool = True, digests: bool = True) -> None:
        self.opts = opts
        self.digests = digests  # compile_policies
        self.store = store
        self.shared = shared  # compile_policies
        self.outlined = outlines  # compile_policies
        self.objects = objects
        self.reports = reports
        self.kept: list[Manifest] = []  # team units' objects lowered by this run, when ``objects``
        self.outlines: dict[str, dict[str, Manifest]] = {}
        self.verifier: Verifier | None = None
        self.blobs: dict[str, dict[str, bytes] | bytes] = {}  # unit key -> rendered files (``keep``)
        self.files: dict[str, dict[str, str]] = {}  # unit key -> digests of its files
        self.repo: dict[str, bytes] = {}  # digest -> a repository file this run rendered (``keep_repo``)
        self.children: list[Pending] = []  # forked work; reaped whatever path compile() takes
        self.meanwhile: list[Pending] = []  # this process's work for while it would wait for the rules
        self.policy: Policy | None = None
        self.lowered: list[Manifest] = []
        self.reused_units: list[tuple[str, str]] = []  # (team file, unit key) taken from the store
        self.fp = ""  # fingerprint of the compiler, the CRDs and the options: part of every key
        self.key_all = ""  # every input: the run's key, and its semantic rules' verdict's
        self.team_keys: dict[str, str] = {}  # team file -> its unit's key (its rules' verdict's too)
        self.fleet_key: str | None = None  # the fleet file's (its fleet-scope rules' verdict's)
        self.previous: frozenset[str] | None = None  # what the clusters hold before the change (GITOPS302)
        self.timings: dict[str, float] = {}
        self.t = time.perf_counter()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.timings[stage] = self.timings.get(stage, 0.0) + now - self.t
        self.t = now

    def fingerprint(self) -> None:
        opts = self.opts
        crds = tree_fingerprint(opts.crds) if opts.verify else "-"
        self.fp = digest(compiler_fingerprint(), crds, str(opts.crds is None), str(opts.strict), str(opts.verify),
                         display_path(opts.policy_dir, opts.root), display_path(opts.out_dir, opts.root))

    def run(self) -> Result | None:
        inputs, diags0 = self.read_inputs()
        self.fingerprint()
        self.previous = previous_outputs(self.opts, self.store)
        key_all = self.key_all = self.key_of(inputs, diags0)
        self.team_keys = team_unit_keys(self.fp, inputs)
        self.fleet_key = fleet_input_key(self.fp, inputs)
        stored = None if self.shared is not None or not self.reports else self.store.get("result", key_all)
        if stored is not None:
            self.lap("load")
            return self.output(RunRecord.of(stored), "result")
        # The stages are imported only when something is compiled: a run answered from the store
        # imports ~0.06 s of modules instead of ~0.3 s (python -X importtime), most of a warm check.
        self.lap("load")
        from compiler.pipeline.stages import compile_run

        self.lap("import")
        rec = compile_run(self, inputs, diags0)
        self.store.used.add(("checks", key_all))  # written by the child that ran the rules, and
        self.store.used.update(("rules", k) for k in [*self.team_keys.values(), self.fleet_key or ""])  # verdicts
        self.store.used.update(("verdicts", k) for k, _ in verdict_blocks(self.team_keys))
        if self.reports:
            self.store.put("result", key_all, rec.plain())
        result = self.output(rec, "partial" if self.reused_units else "none")  # reads the last run's digests: first
        last = self.store.get("last", self.fp)  # the last build's record: check compares out/ with it
        if isinstance(last, str):
            self.store.used.add(("result", last))
        heavy = self.store.pressure()  # validate and check prune only then: the build that wrote out/
        if self.digests or heavy:  # may have units they have not, whose files check reads
            self.prune(heavy)
        return result

    def prune(self, by_bytes: bool = False) -> None:
        for path, key in self.reused_units:  # their entries are live, read by this run or not
            self.store.used.update(unit_entries(self.fp, path, key))
        self.store.prune(("result", "checks", "load", "pos", "unit", "files", "blob", "outline", "schemas", "digests",
                          "last", "rules", "verified", "rendered", "listed", "owners", "ownsec", "repo", "rows",
                          "block", "parses", "verdicts", "ownblock", "ownchunk", "ownfile", "fragment", "cohorts",
                          "summary"),
                         by_bytes=by_bytes)

    def key_of(self, inputs: list[PolicyInput], diags0: list[Diagnostic]) -> str:
        """The key of every input. The previous out/ is an input of GITOPS302: part of the key,
        so a stored verdict never outlives the tree it was given on."""
        return digest(self.fp, *[x for i in inputs for x in (i.shown, i.digest)],
                      *[repr(diag_out(d)) for d in diags0], repr(sorted(self.previous or ())),
                      str(self.previous is None))

    def semantic(self, policy: Policy) -> list[Diagnostic]:
        """The semantic rules' findings on the whole policy (before waivers) for the commands that
        stop after validate (``explain``, ``report``, ``nodes``): from the store when one of them
        ran on the same inputs, else computed and kept. Keyed by every input (``key_of``)."""
        stored = self.store.get("checks", self.key_all)
        if stored is not None:
            return [diag_in(d) for d in stored]
        from compiler.validate import run_checks

        found = run_checks(policy, None if self.store.off else StoredVerdicts(self.store, self.team_keys, self.fleet_key))
        self.store.put("checks", self.key_all, [diag_out(d) for d in found])
        return found

    def output(self, rec: RunRecord, how: str) -> Result | None:
        digests = out_digests(self, rec) if self.digests else {}
        if digests is None:
            return None
        self.lap("report" if how != "result" else "result")
        units = {k: self.files.get(k, {}) for k in rec.units} if self.shared is not None else {}  # diff's
        # waiver expiry depends on the date, so it is decided here on every run, never stored
        self.store.used.update(("repo", d) for d in rec.repo.values())
        self.store.used.update(("blob", k) for k in {rec.glob, *rec.homes.values()})
        self.store.used.update(("fragment", k) for k in rec.pieces)  # the reports' recipes read them
        return Result(expire(diag_in(d) for d in rec.diags), rec.failed, self.policy,
                      sorted(self.lowered, key=Manifest.sort_key), digests,
                      LazyFiles(digests, self.fetch(FileHomes(self.unit_files, rec))),
                      LazyFiles(rec.repo, lambda rel: self.repo_bytes(rec.repo[rel])), rec.repo,
                      rec.n, rec.stats, self.timings, how, units, self.outlines,
                      self.key_all, rec, self.unit_files, lambda: out_digests(self, rec))

    def keep_repo(self, file: RepoFile) -> str:
        """A repository file this run rendered (``repo_file``): its bytes held for this run when
        the store does not keep them; its digest, for the run's record."""
        key, _, _, data = file
        if data is not None:
            self.repo[key] = data
        return key

    def repo_bytes(self, key: str) -> bytes:
        data = self.repo.get(key)
        if data is None:
            data = self.store.get("repo", key)
            if not isinstance(data, bytes):
                raise CacheEntryMissing(f"repo/{key}")
        return data

    def unit_files(self, key: str) -> dict[str, str] | None:
        """A team unit's files (out/ path -> digest): computed by this run, or its ``files`` entry."""
        files = self.files.get(key)
        if files is None:
            files = self.store.get("files", key)  # {}: a unit rendering nothing
            if files is None:  # gone: the unit is computed again next time, which rewrites them
                self.store.discard("unit", key)
                return None
            self.files[key] = files
        return files

    def stored_unit(self, key: str) -> Any | None:
        """A team unit's stored record, or None to compute it. A diff (``shared``) takes a shared
        unit with its outline and computes every other one, for its objects."""
        if self.shared is None:
            return self.store.get("unit", key)
        if key not in self.shared:
            return None
        if not self.outlined:
            return self.store.get("unit", key)
        outline = self.store.get("outline", key)
        if outline is None:
            return None
        stored = self.store.get("unit", key)
        if stored is not None:
            self.outlines[key] = dict(map(outline_in, outline))
        return stored

    def unit_lowered(self, key: str, manifests: list[Manifest]) -> None:
        """A team unit computed by this run: its objects are kept (``objects``) and its outline
        stored (a later diff takes the unit from the store with it); a diff also keeps a shared
        unit's outline, the same the other side may have read from the store."""
        if self.objects:
            self.kept += manifests
        if self.shared is None and self.store.off:
            return
        outline = [o for o in map(outline_out, manifests) if o is not None]
        self.store.put("outline", key, outline)
        if self.shared is not None and key in self.shared and self.outlined:
            self.outlines[key] = dict(map(outline_in, outline))

    def keep(self, key: str, files: dict[str, bytes]) -> None:
        """Hold a unit's rendered files until ``out/`` is written. Without a store (``--no-cache``)
        nothing else holds them and they were the largest part of a build's peak memory (10,000
        teams: ~0.7 GB of bytes in 861,000 objects), so they are held as one zlib stream per unit
        at level 1 (a team's YAML repeats itself across clusters: 14x smaller for ~0.15 s of CPU
        per 1,000 teams, bench/README.md). With a store they stay as they are: the store
        compresses its own copy."""
        self.blobs[key] = zlib.compress(marshal.dumps(files), 1) if self.store.off else files

    def fetch(self, where: Mapping[str, str]) -> Callable[[str], bytes]:
        """``out/`` path -> bytes. A compressed unit is expanded for the paths asked one after the
        other and dropped at the next unit's: ``write_tree`` asks in ``Result.out_digests``' order,
        unit by unit, so each is expanded once and one at a time."""
        last: tuple[str, dict[str, bytes]] = ("", {})

        def get(rel: str) -> bytes:
            nonlocal last
            key = where[rel]
            if key == last[0]:
                return last[1][rel]
            held = self.blobs.get(key)
            if held is None:
                held = self.store.get("blob", key)
                if held is None:
                    raise CacheEntryMissing(f"blob/{key}")
                self.blobs[key] = held
            if isinstance(held, bytes):
                last = key, marshal.loads(zlib.decompress(held))
                return last[1][rel]
            data = held[rel]
            return data if isinstance(data, bytes) else cooked(self.store, data)

        return get

    def read_inputs(self) -> tuple[list[PolicyInput], list[Diagnostic]]:
        opts = self.opts
        blobs, diags = read_inputs(opts.policy_dir, opts.root)  # LOAD009: regular files inside only
        return [PolicyInput(shown, data, is_fleet, "" if data is None else content_digest(data))
                for shown, data, is_fleet in blobs], diags

"""The front stages, load and validate: each file's parse through the store, the assembled policy,
and (``validate_run``) the semantic rules' verdict.

Apart from ``compiler.pipeline.stages`` so that the commands that stop after validate
(``explain``, ``report``, ``nodes``, ``audit``, ``init``) do not import the lowering, verify and
report modules (~0.07 s of every such command).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

from compiler.cache.records import DiagRecord, diag_in, diag_out
from compiler.cache.store import compiler_fingerprint, digest
from compiler.diagnostics import Diagnostic, has_errors
from compiler.load.source import PolicySources, Positions, SourceFile, YamlPath, load_text
from compiler.pipeline.run import PolicyInput, Run
from compiler.pipeline.summaries import StoredSummaries
from compiler.pipeline.units import blocks_of
from compiler.pipeline.waivers import expire
from compiler.policy.graph import Policy
from compiler.validate import assemble_policy, run_checks
from compiler.validate.cascade import recoverable
from compiler.validate.waivers import apply_waivers


def assemble(run: Run, inputs: list[PolicyInput], diags0: list[Diagnostic]) -> tuple[Policy | None, list[Diagnostic]]:
    """Load, then schema-check and assemble the policy: the policy when the rules and lowering may
    run on it, else None with every diagnostic found."""
    sources, diags = load(run, inputs)
    diags = diags0 + diags
    run.lap("load")
    policy, more = assemble_policy(sources)
    diags += more
    if policy is None:
        return None, diags
    kept = None if run.store.off else StoredSummaries.of(run.store, policy, run.team_keys)
    policy = replace(policy, previous=run.previous, summaries=kept)
    if recoverable(diags):  # a rejected cut: its classes are unknown, the rest is whole
        return None, diags + run_checks(policy)
    return (None, diags) if has_errors(diags) else (policy, diags)


def validate_run(run: Run, inputs: list[PolicyInput], diags0: list[Diagnostic]) -> tuple[Policy | None, list[Diagnostic]]:
    """The stages up to validate: the validated policy (None on errors) and every diagnostic."""
    policy, diags = assemble(run, inputs, diags0)
    if policy is None:
        return None, diags
    # the rules' verdict may come from the store (run.semantic); waivers and expiry apply now
    checked = expire(apply_waivers(policy, run.semantic(policy)))
    return (None if has_errors(checked) else policy), diags + checked


# -- load ------------------------------------------------------------------------------------


def load(run: Run, inputs: list[PolicyInput]) -> tuple[PolicySources, list[Diagnostic]]:
    """Each file's parse (a file-scope unit); a stored parse reads its position tables only when
    a diagnostic needs them. The parses are also kept a block of files at a time (kind
    ``parses``, keyed by the block's files' keys; blocks as the units': ``ends_block``), so a
    one-team edit reads ~N/64 entries and one block's files' instead of one per file."""
    fleet: SourceFile | None = None
    teams: list[SourceFile] = []
    diags: list[Diagnostic] = []
    fp = compiler_fingerprint()
    keyed = [(i, digest(fp, i.shown, i.digest)) for i in inputs if i.data is not None]
    for block in blocks_of(keyed, lambda item: item[0].shown):
        bkey = digest("parses", *(key for _, key in block))
        stored = run.store.get("parses", bkey) if len(block) > 1 else None
        fresh: dict[str, SourceFile] = {}  # parsed by this run: with their position tables
        if isinstance(stored, list) and len(stored) == len(block):
            run.store.used.update(x for _, key in block for x in (("load", key), ("pos", key)))
            parses = stored
        else:
            parses = [_parse(run, i, key, fresh) for i, key in block]
            if len(block) > 1:
                run.store.put("parses", bkey, parses)
        for (i, key), (parsed, found, blanks) in zip(block, parses):
            diags.extend(diag_in(x) for x in found)
            if parsed is None:
                continue
            src = fresh.get(key)
            if src is None:
                text = i.data.decode("utf-8") if i.data is not None else ""
                src = SourceFile(i.shown, text[1:] if text.startswith("\ufeff") else text, parsed,
                                 lazy_positions=_positions(run, key, i.shown, i.data or b""), blanks=blanks)
            if i.is_fleet:
                fleet = src
            else:
                teams.append(src)
    return PolicySources(fleet, teams), diags


def _parse(run: Run, i: PolicyInput, key: str, fresh: dict[str, SourceFile]
           ) -> tuple[Any, list[DiagRecord], list[YamlPath] | None]:
    """One file's parse, load diagnostics and blanks (``SourceFile.blanks``; kind ``load``),
    parsed now if the store lacks it (its source then goes to ``fresh``); its position tables are
    kept apart (kind ``pos``)."""
    hit = run.store.get("load", key)
    if hit is not None:
        run.store.used.add(("pos", key))
        parsed, found, blanks = hit
        return parsed, found, blanks
    src, diags = load_text(i.shown, i.data or b"")
    if src is not None:
        fresh[key] = src
        run.store.put("pos", key, (src.positions, src.key_positions))
    value = (None if src is None else src.data, [diag_out(x) for x in diags], None if src is None else src.blank_paths())
    run.store.put("load", key, value)
    return value


def _positions(run: Run, key: str, shown: str, data: bytes) -> Callable[[], Positions]:
    """A file's position tables, read when a diagnostic first needs them (or re-parsed, if the
    entry was pruned meanwhile)."""
    def get() -> Positions:
        hit: Positions | None = run.store.get("pos", key)
        if hit is None:
            src, _ = load_text(shown, data)
            hit = ({}, {}) if src is None else (src.positions, src.key_positions)
        return hit

    return get

"""The front stages, load and validate: each file's parse through the store, the assembled policy,
and (``validate_run``) the semantic rules' verdict.

Apart from ``compiler.pipeline.stages`` so that the commands that stop after validate
(``explain``, ``report``, ``nodes``, ``audit``, ``init``) do not import the lowering, verify and
report modules (~0.07 s of every such command).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from compiler.cache.records import diag_in, diag_out
from compiler.cache.store import compiler_fingerprint, digest
from compiler.diagnostics import Diagnostic, has_errors
from compiler.load.source import PolicySources, Positions, SourceFile, load_text
from compiler.pipeline.run import PolicyInput, Run
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
    policy = replace(policy, previous=run.previous)
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
    a diagnostic needs them."""
    fleet: SourceFile | None = None
    teams: list[SourceFile] = []
    diags: list[Diagnostic] = []
    for i in inputs:
        if i.data is None:
            continue
        key = digest(compiler_fingerprint(), i.shown, i.data)
        hit = run.store.get("load", key)
        src: SourceFile | None
        if hit is None:
            src, found = load_text(i.shown, i.data)
            diags.extend(found)
            if src is not None:
                run.store.put("pos", key, (src.positions, src.key_positions))
            run.store.put("load", key, (None if src is None else src.data, [diag_out(x) for x in found]))
        else:
            run.store.used.add(("pos", key))
            parsed, stored = hit
            diags.extend(diag_in(x) for x in stored)
            if parsed is None:
                continue
            text = i.data.decode("utf-8")
            src = SourceFile(i.shown, text[1:] if text.startswith("\ufeff") else text, parsed,
                             lazy_positions=_positions(run, key, i.shown, i.data))
        if src is None:
            continue
        if i.is_fleet:
            fleet = src
        else:
            teams.append(src)
    return PolicySources(fleet, teams), diags


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

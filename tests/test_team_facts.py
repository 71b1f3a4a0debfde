"""The teams' summaries kept a block at a time (``compiler.policy.summaries``, issue 21) and the
rules that read them to prove they have nothing to say (``compiler.policy.team_facts``).

Held here, on the demo, every golden case, a generated organisation and variants of the demo
with findings: each summary gathered from kept blocks equals its fold over every team, a
one-team edit folds one block again, and each proof holds exactly when the rule, run over the
whole policy, finds nothing (so a proof never hides a finding, and is not so weak that the rule
always runs)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest
from conftest import REPO
from helpers import copy_demo, mutate, policy_at, team_alone

from compiler.cache.store import Store, content_digest
from compiler.diagnostics import Diagnostic
from compiler.pipeline.summaries import StoredSummaries
from compiler.policy.graph import Policy
from compiler.policy.summaries import SUMMARIES, gather
from compiler.policy.team_facts import CAPPED, CLAIMS, CONFLICT, ancestors
from compiler.validate import capacity, semantic

GOLDEN = REPO / "tests" / "golden"
VARIANTS: dict[str, list[tuple[str, str, str]]] = {  # demo edits that give the proved rules findings
    "demo": [],
    "cap": [("teams/nlp.yaml", "guaranteed: 32", "guaranteed: 48")],  # KUEUE003
    "borrow": [("teams/vision.yaml", "borrow: 8", "borrow: 900")],  # KUEUE004
    "claim": [("teams/vision.yaml", "- name: vision-train", "- name: nlp-train")],  # FLEET004, twice
    "system": [("teams/vision.yaml", "- name: vision-train", "- name: kube-system")],  # FLEET004, system
    "addon": [("teams/vision.yaml", "- name: vision-train", "- name: dra-driver-nvidia-gpu")],  # FLEET004, add-on
    "gateway": [("teams/vision.yaml", "- name: vision-train", "- name: gateway-system")],  # FLEET004, a Gateway's
}


def _cases(tmp: Path) -> Iterator[tuple[str, Path]]:
    from bench.generate import generate

    for name, edits in VARIANTS.items():
        root = copy_demo(tmp / name)
        for rel, old, new in edits:
            mutate(root, rel, old, new)
        yield name, root
    for case in sorted(p.name for p in GOLDEN.iterdir() if (p / "policies").is_dir()):
        shutil.copytree(GOLDEN / case / "policies", tmp / case / "policies")
        yield case, tmp / case
    generate(80, 5, tmp / "generated", seed=3)
    yield "generated", tmp / "generated"


def _keys(policy: Policy) -> dict[str, str]:
    return {t.path: content_digest(t.src.text.encode()) for t in policy.teams}


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, Path, Policy]]:
    out = []
    for name, root in _cases(tmp_path_factory.mktemp("facts")):
        policy, diags = policy_at(root)
        assert policy is not None, (name, diags)
        out.append((name, root, policy))
    return out


def _kept(policy: Policy, store: Store) -> Policy:
    from dataclasses import replace

    return replace(policy, summaries=StoredSummaries.of(store, policy, _keys(policy)))


def test_kept_summaries_equal_their_fold_over_every_team(cases: list[tuple[str, Path, Policy]],
                                                         tmp_path: Path) -> None:
    for name, root, policy in cases:
        store = Store(tmp_path / name)
        for s in SUMMARIES.values():
            whole = s.over(policy, policy.teams)
            assert gather(_kept(policy, store), s) == whole, (name, s.name)  # folded and kept
            assert gather(_kept(policy, store), s) == whole, (name, s.name)  # read back


def test_a_one_team_edit_folds_one_block_again(tmp_path: Path) -> None:
    from bench.generate import generate

    root = tmp_path / "org"
    generate(300, 4, root, seed=5)
    policy, _ = policy_at(root)
    assert policy is not None
    store = Store(tmp_path)
    blocks = StoredSummaries.of(store, policy, _keys(policy))
    assert blocks is not None and len(blocks.blocks) > 2
    for s in SUMMARIES.values():
        gather(_kept(policy, store), s)
    team = policy.teams[len(policy.teams) // 2]
    path = root / team.path
    path.write_text(path.read_text().replace("guaranteed: ", "guaranteed: 1", 1))
    edited, _ = policy_at(root)
    assert edited is not None
    kept: list[str] = []
    put = store.put
    store.put = lambda kind, key, value, **kw: (kept.append(kind), put(kind, key, value, **kw))[1]  # type: ignore[method-assign]
    again = _kept(edited, store)
    for s in SUMMARIES.values():
        assert gather(again, s) == s.over(edited, edited.teams), s.name
    assert kept == ["summary"] * len(SUMMARIES)  # the edited team's block, once per summary; every other read


def _whole(module: Any, check: str, proof: str, policy: Policy, monkeypatch: pytest.MonkeyPatch) -> list[Diagnostic]:
    """The check's findings with its proof off: the rule over the whole policy."""
    with monkeypatch.context() as m:
        m.setattr(module, proof, lambda policy: False)
        return list(getattr(module, check)(policy))


def test_each_proof_holds_exactly_when_its_rule_finds_nothing(cases: list[tuple[str, Path, Policy]],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, set[bool]] = {"caps": set(), "borrowing": set(), "claims": set()}
    for name, _, policy in cases:
        caps = capacity._caps_met(policy)
        assert caps == (not _whole(capacity, "check_department_caps", "_caps_met", policy, monkeypatch)), name
        borrowing = capacity._borrowing_met(policy)
        assert borrowing == (not _whole(capacity, "check_borrowing", "_borrowing_met", policy, monkeypatch)), name
        claims = CONFLICT not in gather(policy, CLAIMS)
        with monkeypatch.context() as m:
            m.setattr(semantic, "gather", lambda policy, s: {CONFLICT: ("", "")})
            assert claims == (not list(semantic.check_namespace_claims(policy))), name
        seen["caps"].add(caps)
        seen["borrowing"].add(borrowing)
        seen["claims"].add(claims)
        for check, proof in (("check_department_caps", "_caps_met"), ("check_borrowing", "_borrowing_met")):
            assert list(getattr(capacity, check)(policy)) == _whole(capacity, check, proof, policy, monkeypatch), name
    assert all(v == {True, False} for v in seen.values()), seen  # both outcomes met by the cases


def test_capped_is_what_the_teams_below_each_cap_guarantee(cases: list[tuple[str, Path, Policy]]) -> None:
    """``CAPPED`` (FLEET404 and KUEUE003 read it) against the allocation: for each cap, the
    guarantees of the teams whose department has the capped one above it or is it, keyed as soon
    as one of them budgets the class (0 included)."""
    capped_somewhere = False
    for name, _, policy in cases:
        expected: dict[tuple[str, str, str], int] = {}
        caps = {(d.name, cap.cluster, cap.class_) for d in policy.fleet.spec.departments for cap in d.caps}
        capped_somewhere |= bool(caps)
        for dept, cluster, cid in caps:  # a cap named twice counts once
            for e in policy.allocation.for_class(cluster, cid):
                team = next(t for t in policy.teams if t.path == e.source)
                if dept in ancestors(policy, team.model.spec.department):
                    expected[(dept, cluster, cid)] = expected.get((dept, cluster, cid), 0) + (e.guaranteed.value or 0)
        assert gather(policy, CAPPED) == expected, name
    assert capped_somewhere


def test_a_summary_reads_the_fleet_and_its_team_only(tmp_path: Path) -> None:
    """What makes a block's fold a function of the block's key (the fleet's and its teams' bytes):
    each team's fact is the same in the whole policy as in a policy of the fleet and that team."""
    from bench.generate import generate

    generate(30, 4, tmp_path / "org", seed=11)
    for root in (copy_demo(tmp_path / "demo"), tmp_path / "org"):
        policy, _ = policy_at(root)
        assert policy is not None
        for team in policy.teams:
            single, mine = team_alone(root, team, tmp_path / f"alone-{root.name}-{team.name}")
            assert single is not None and mine is not None
            for s in SUMMARIES.values():
                assert s.of_team(single, mine) == s.of_team(policy, team), (team.name, s.name)


def test_budgeted_and_departments_are_every_budget_s(cases: list[tuple[str, Path, Policy]]) -> None:
    """``BUDGETED`` (OPS005, REPORT.md's idle classes) and ``DEPARTMENTS`` (the cohort forest):
    the (cluster, class) and (cluster, department) of every budget of every team."""
    from compiler.policy.team_facts import BUDGETED, DEPARTMENTS

    for name, _, policy in cases:
        budgets = [(b, t.model.spec.department) for t in policy.teams for b in t.model.spec.budgets]
        assert gather(policy, BUDGETED) == {(b.cluster, b.class_) for b, _ in budgets}, name
        assert gather(policy, DEPARTMENTS) == {(b.cluster, dept) for b, dept in budgets}, name

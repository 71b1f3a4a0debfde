"""Builders for tests: compile a policy tree in memory, mutate demo files."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import CRDS, REPO

from compiler.diagnostics import Diagnostic, Scope
from compiler.load.source import load_policy_dir
from compiler.pipeline.options import Options
from compiler.pipeline.run import Result, compile_policies
from compiler.policy.graph import Policy, Team
from compiler.rules import get
from compiler.validate import build_policy


def policy_at(root: Path) -> tuple[Policy | None, list[Diagnostic]]:
    """Load and validate a policy tree (no lowering): the policy and every diagnostic."""
    sources, diags = load_policy_dir(root / "policies", root)
    policy, more = build_policy(sources)
    return policy, diags + more


def team_alone(root: Path, team: Team, dest: Path) -> tuple[Policy | None, Team | None]:
    """The policy of ``root``'s fleet and ``team``'s file alone (copied under ``dest``), and that
    team in it: what a check or fact that reads the fleet and one team must agree with."""
    shutil.copytree(root / "policies", dest / "policies",
                    ignore=lambda d, names: [n for n in names if Path(d).name == "teams" and
                                             f"policies/teams/{n}" != team.path])
    single, _ = policy_at(dest)
    return single, None if single is None else single.team(team.name)


def compile_dir(root: Path, *, verify: bool = False, strict: bool = False) -> Result:
    crds = CRDS if (verify and CRDS.is_dir()) else None
    return compile_policies(Options(root=root, policy_dir=root / "policies", out_dir=root / "out",
                                    crds=crds, strict=strict, verify=verify))


def copy_demo(tmp: Path) -> Path:
    root = tmp / "repo"
    shutil.copytree(REPO / "policies", root / "policies")
    return root


def mutate(root: Path, rel: str, old: str, new: str) -> None:
    path = root / "policies" / rel
    text = path.read_text()
    assert old in text, f"{old!r} not in {rel}"
    path.write_text(text.replace(old, new, 1))


def codes(diags: list[Diagnostic]) -> list[str]:
    return [d.code for d in diags]


def find(diags: list[Diagnostic], code: str) -> Diagnostic:
    """The first diagnostic of ``code`` that is not a note (the error or warning itself), else the
    first, in the order the CLI shows them (``sort_diagnostics``), not the order rules ran in."""
    for d in sorted(diags, key=lambda d: (d.severity.rank, d.sort_key())):
        if d.code == code:
            return d
    raise AssertionError(f"no {code} among {[(d.code, d.message) for d in diags]}")


def line_of(root: Path, rel: str, needle: str, occurrence: int = 1) -> int:
    """1-based line of the n-th line containing ``needle``."""
    seen = 0
    for i, line in enumerate((root / "policies" / rel).read_text().splitlines(), 1):
        if needle in line:
            seen += 1
            if seen == occurrence:
                return i
    raise AssertionError(f"{needle!r} not in {rel}")


def run_alone(policy: Policy, rule_id: str) -> list[Diagnostic]:
    """Only the rule's check (and its per-team part), as the validate driver calls them."""
    rule = get(rule_id)
    assert rule.check is not None, rule_id
    if rule.scope is Scope.TEAM:
        return [d for team in policy.teams for d in rule.check(policy, team)]
    part = rule.team_part
    return [*rule.check(policy), *(d for team in policy.teams if part is not None for d in part(policy, team))]

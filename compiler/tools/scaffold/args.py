"""The flags of ``gpupolicy init``, apart from the command so ``--help`` imports no pipeline."""

from __future__ import annotations

import argparse
from pathlib import Path

ISOLATIONS = ("shared", "isolated", "exclusive")  # compiler.model.team.Isolation (tests/test_init.py checks)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--root", type=Path, default=Path("."), help="repository root (default: .)")
    p.add_argument("--policies", type=Path, default=None, help="policy directory (default: <root>/policies)")
    p.add_argument("--team", help="team name (a DNS label); the file is teams/<team>.yaml")
    p.add_argument("--department", help="department (Kueue cohort) of the fleet")
    p.add_argument("--owner", action="append", dest="owners", metavar="OWNER",
                   help="code owner, @org/team, @user or an e-mail address (repeatable)")
    p.add_argument("--group", action="append", dest="groups", metavar="GROUP",
                   help="identity-provider group allowed to submit jobs (RBAC; repeatable)")
    p.add_argument("--isolation", choices=ISOLATIONS, help="shared | isolated | exclusive (default: shared)")
    p.add_argument("--data-class", action="append", dest="data_classes", metavar="NAME",
                   help="data class the team handles (repeatable; default: public when the fleet has it)")
    p.add_argument("--cluster", help="cluster of the first budget and namespace")
    p.add_argument("--class", dest="gpu_class", metavar="CLASS", help="GPU class of the first budget, e.g. h100-80gb")
    p.add_argument("--gpus", type=int, help="GPUs (or MIG instances, shares) guaranteed on that class")
    p.add_argument("--namespace", help="training namespace (default: <team>-train)")
    p.add_argument("--priority", help="the team's priority tier (default: the fleet's default tier)")

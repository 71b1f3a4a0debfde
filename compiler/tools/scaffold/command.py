"""``gpupolicy init``: a new team file, ``policies/teams/<team>.yaml``, that validates at once.

The choices come from the current fleet (departments, clusters, the GPU classes each cluster's
pools create, data classes, priority tiers), read through the normal pipeline, so a scaffold
never names what the fleet lacks. On a terminal the missing answers are asked for, with the
choices listed; otherwise they come from flags and a missing one is a usage error (exit 2).
Names are checked with the models' own types (``DnsLabel``, ``Owner``). The file is written only
after the whole policy, the new file included, validates in a scratch copy (the same
``validated_policy`` every command uses); an existing file is never overwritten.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from pydantic import TypeAdapter, ValidationError

from compiler import escape
from compiler.cli.render import print_to_stderr
from compiler.diagnostics import EXIT_OK, EXIT_POLICY, Diagnostic, UsageError, has_errors
from compiler.model.common import API_VERSION, DnsLabel
from compiler.model.fleet import Owner
from compiler.pipeline.options import Options
from compiler.pipeline.run import validated_policy
from compiler.policy.cuts import ISOLATION_ALLOWS
from compiler.policy.graph import Policy
from compiler.tools.scaffold.args import ISOLATIONS

_NAME: TypeAdapter[str] = TypeAdapter(DnsLabel)
_OWNER: TypeAdapter[str] = TypeAdapter(Owner)


@dataclass
class Answers:
    team: str = ""
    department: str = ""
    owners: list[str] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    isolation: str = "shared"
    data_classes: list[str] = field(default_factory=list)
    cluster: str = ""
    gpu_class: str = ""
    gpus: int = -1
    namespace: str = ""
    priority: str | None = None


@dataclass(frozen=True)
class Fleet:
    """What a team file may name, from the validated current policy."""

    name: str
    departments: list[str]
    clusters: list[str]
    classes: dict[str, dict[str, tuple[str, int]]]  # cluster -> class -> (cut, capacity no team is guaranteed)
    data_classes: list[str]
    priorities: list[str]
    teams: set[str]

    def classes_for(self, cluster: str, isolation: str) -> list[str]:
        allowed = ISOLATION_ALLOWS[isolation]  # type: ignore[index]
        return [c for c, (cut, _free) in self.classes.get(cluster, {}).items() if cut in allowed]


def fleet_of(policy: Policy) -> Fleet:
    spec = policy.fleet.spec
    classes: dict[str, dict[str, tuple[str, int]]] = {}
    for cname, by_id in sorted(policy.classes.items()):
        classes[cname] = {cid: (cls.cut, cls.capacity - policy.allocation.guaranteed_total(cname, cid))
                          for cid, cls in sorted(by_id.items()) if cls.capacity > 0}
    return Fleet(policy.fleet.metadata.name, sorted(d.name for d in spec.departments), sorted(classes),
                 classes, [d.name for d in spec.data_classes], [p.name for p in spec.priorities],
                 {t.name for t in policy.teams})


def _check_name(value: str, what: str) -> str:
    try:
        return _NAME.validate_python(value)
    except ValidationError:
        raise UsageError(f"{what} {escape.text(value)!r} is not a DNS label (lowercase letters, digits and '-', "
                         "at most 63 characters, starting and ending with a letter or digit)") from None


def _check_owner(value: str) -> str:
    try:
        return _OWNER.validate_python(value)
    except ValidationError:
        raise UsageError(f"owner {escape.text(value)!r} is not @org/team, @user or an e-mail address") from None


def _check_group(value: str) -> str:
    if not 1 <= len(value) <= 253 or value != value.strip() or escape.text(value) != value:
        raise UsageError(f"group {escape.text(value)!r} must be 1-253 characters of one line, without surrounding spaces")
    return value


def _check_choice(value: str, choices: Sequence[str], what: str) -> str:
    if value not in choices:
        raise UsageError(f"{what} {escape.text(value)!r} is not one of the fleet's: {', '.join(choices) or '(none)'}")
    return value


def _check_gpus(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise UsageError(f"--gpus {escape.text(value)!r} is not a whole number") from None
    if not 0 <= n <= 1_000_000:
        raise UsageError(f"--gpus {n} is outside 0..1000000")
    return n


class Prompter:
    """Asks on a terminal until an answer passes the check; the default is taken on Enter."""

    def __init__(self, stdin: TextIO, stdout: TextIO) -> None:
        self.stdin, self.stdout = stdin, stdout

    def ask(self, question: str, check: Callable[[str], Any], default: str | None = None,
            choices: Sequence[str] = ()) -> Any:
        hint = f" [{', '.join(choices)}]" if choices and len(choices) <= 12 else ""
        if choices and len(choices) > 12:
            self.stdout.write(f"  choices: {', '.join(choices)}\n")
        while True:
            self.stdout.write(f"{question}{hint}{f' ({default})' if default else ''}: ")
            self.stdout.flush()
            line = self.stdin.readline()
            if not line:
                raise UsageError("no answer (end of input)")
            answer = line.strip() or (default or "")
            try:
                return check(answer)
            except UsageError as exc:
                self.stdout.write(f"  {exc}\n")


def gather(ns: argparse.Namespace, fleet: Fleet, prompt: Prompter | None) -> Answers:
    """The answers from flags, asking ``prompt`` for the missing ones (None: a missing one is an error)."""
    a = Answers()

    def need(flag: str, value: Any, ask: Callable[[], Any], check: Callable[[Any], Any]) -> Any:
        if value is not None:
            return check(value)
        if prompt is None:
            raise UsageError(f"{flag} is required when stdin is not a terminal (gpupolicy init --help)")
        return ask()

    def team_check(v: str) -> str:
        name = _check_name(v, "team")
        if name in fleet.teams:
            raise UsageError(f"team {name!r} exists already")
        return name

    a.team = need("--team", ns.team, lambda: prompt.ask("team name", team_check) if prompt else "", team_check)
    dept = lambda v: _check_choice(v, fleet.departments, "department")  # noqa: E731
    a.department = need("--department", ns.department,
                        lambda: prompt.ask("department", dept, choices=fleet.departments) if prompt else "", dept)
    if ns.owners:
        a.owners = [_check_owner(o) for o in ns.owners]
    elif prompt is None:
        raise UsageError("--owner is required when stdin is not a terminal (gpupolicy init --help)")
    else:
        a.owners = [prompt.ask("code owner (@org/team, @user or e-mail)", _check_owner)]
    if ns.groups:
        a.groups = [_check_group(g) for g in ns.groups]
    elif prompt is not None:
        group = prompt.ask("identity group allowed to submit jobs (RBAC; Enter for none)", lambda v: v and _check_group(v))
        a.groups = [group] if group else []
    iso = lambda v: _check_choice(v, ISOLATIONS, "isolation")  # noqa: E731
    if ns.isolation is not None or prompt is None:
        a.isolation = iso(ns.isolation or "shared")
    else:
        a.isolation = prompt.ask("isolation", iso, "shared", ISOLATIONS)
    default_dc = "public" if "public" in fleet.data_classes else (fleet.data_classes[:1] or [""])[0]
    dc = lambda v: _check_choice(v, fleet.data_classes, "data class")  # noqa: E731
    if ns.data_classes:
        a.data_classes = [dc(v) for v in ns.data_classes]
    elif prompt is None or not fleet.data_classes:
        a.data_classes = [dc(default_dc)]
    else:
        a.data_classes = [prompt.ask("data class", dc, default_dc, fleet.data_classes)]
    cl = lambda v: _check_choice(v, fleet.clusters, "cluster")  # noqa: E731
    a.cluster = need("--cluster", ns.cluster,
                     lambda: prompt.ask("cluster", cl, choices=fleet.clusters) if prompt else "", cl)
    offered = fleet.classes_for(a.cluster, a.isolation)
    described = [f"{c} ({fleet.classes[a.cluster][c][1]} free)" for c in offered]
    kl = lambda v: _check_choice(v, offered, f"GPU class (on {a.cluster}, for a team of isolation {a.isolation})")  # noqa: E731
    if ns.gpu_class is None and prompt is not None:
        prompt.stdout.write(f"  GPU classes on {a.cluster} an {a.isolation} team may use: {', '.join(described)}\n")
    a.gpu_class = need("--class", ns.gpu_class, lambda: prompt.ask("GPU class", kl) if prompt else "", kl)
    free = fleet.classes[a.cluster][a.gpu_class][1]
    a.gpus = need("--gpus", None if ns.gpus is None else str(ns.gpus),
                  lambda: prompt.ask(f"guaranteed ({free} not guaranteed to any team)", _check_gpus) if prompt else 0,
                  _check_gpus)
    a.namespace = _check_name(ns.namespace or f"{a.team}-train", "namespace")
    if ns.priority is not None:
        a.priority = _check_choice(ns.priority, fleet.priorities, "priority")
    return a


def _q(s: str) -> str:
    """A YAML scalar: names pass the DNS-label check and need no quotes; owners (``@``) do."""
    try:
        return _NAME.validate_python(s)
    except ValidationError:
        return json.dumps(s)


def render_team(a: Answers, schema_ref: str) -> str:
    lines = [f"# yaml-language-server: $schema={schema_ref}",
             f"apiVersion: {API_VERSION}", "kind: Team", "metadata:", f"  name: {a.team}", "spec:",
             f"  owners: [{', '.join(_q(o) for o in a.owners)}]",
             *([f"  groups: [{', '.join(_q(g) for g in a.groups)}]"] if a.groups else []),
             f"  department: {a.department}", f"  isolation: {a.isolation}",
             f"  dataClasses: [{', '.join(a.data_classes)}]"]
    if a.priority:
        lines.append(f"  priority: {a.priority}")
    lines += ["  namespaces:", f"    - name: {a.namespace}", f"      clusters: [{a.cluster}]",
              "  budgets:",
              "    # borrow and lend unset: inherited from the department's defaults, then the fleet's",
              f"    - cluster: {a.cluster}", f"      class: {a.gpu_class}", f"      guaranteed: {a.gpus}"]
    return "\n".join(lines) + "\n"


def _trial(opts: Options, rel: Path, text: str) -> list[Diagnostic]:
    """Validate the policy with the new file in a scratch copy, at the same relative paths."""
    with tempfile.TemporaryDirectory(prefix="gpupolicy-init-") as tmp:
        root = Path(tmp)
        policy_rel = opts.policy_dir.resolve().relative_to(opts.root.resolve())
        shutil.copytree(opts.policy_dir, root / policy_rel, symlinks=True)
        (root / rel).write_text(text, encoding="utf-8")
        trial = Options(root=root, policy_dir=root / policy_rel, out_dir=root / "out", verify=False)
        _policy, diags = validated_policy(trial)
        return diags


def run(ns: argparse.Namespace) -> int:
    root: Path = ns.root
    policy_dir: Path = ns.policies if ns.policies is not None else root / "policies"
    if not (policy_dir / "fleet.yaml").is_file():
        raise UsageError(f"no fleet file at {policy_dir / 'fleet.yaml'}: init adds a team to an existing fleet")
    opts = Options(root=root, policy_dir=policy_dir, out_dir=root / "out", verify=False)
    policy, diags = validated_policy(opts)
    if policy is None or has_errors(diags):
        print("gpupolicy init: the current policies do not validate; fix them first:", file=sys.stderr)
        print_to_stderr(diags, root)
        return EXIT_POLICY
    fleet = fleet_of(policy)
    if ns.team is not None:
        team = _check_name(ns.team, "team")
        if (policy_dir / "teams" / f"{team}.yaml").exists():
            raise UsageError(f"{policy_dir / 'teams' / f'{team}.yaml'} exists; init never overwrites a team file")
    prompt = Prompter(sys.stdin, sys.stdout) if sys.stdin.isatty() else None
    answers = gather(ns, fleet, prompt)
    path = policy_dir / "teams" / f"{answers.team}.yaml"
    schema_ref = Path(os.path.relpath(root / "schemas" / "team.schema.json", path.parent)).as_posix()
    text = render_team(answers, schema_ref)
    rel = path.resolve().relative_to(root.resolve())
    found = _trial(opts, rel, text)
    if has_errors(found):
        print(f"gpupolicy init: {rel.as_posix()} would not validate; nothing written:", file=sys.stderr)
        print_to_stderr(found, root)
        return EXIT_POLICY
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with path.open("x", encoding="utf-8") as f:  # exclusive: a file created meanwhile is kept
            f.write(text)
    except FileExistsError:
        raise UsageError(f"{path} exists; init never overwrites a team file") from None
    new = [d for d in found if d.location is not None and d.location.file == rel.as_posix()]  # its warnings
    if new:
        print_to_stderr(new, root)
    t = escape.text(answers.team)
    print(f"wrote {rel.as_posix()}: team {t} in {escape.text(answers.department)}, {answers.gpus} guaranteed "
          f"{escape.text(answers.gpu_class)} on {escape.text(answers.cluster)}; it validates against fleet "
          f"{escape.text(fleet.name)}.\nNext:\n"
          f"  gpupolicy explain {t}      # what the team gets and where each value comes from\n"
          "  gpupolicy build            # render out/, schemas/ and .github/CODEOWNERS\n"
          f"  git add {rel.as_posix()} out .github/CODEOWNERS   # commit, then open a pull request")
    return EXIT_OK

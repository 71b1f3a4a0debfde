"""Waivers applied: which findings each waiver of fleet.yaml covers (``compiler.model.waivers``).

A covered finding stays in the output with its rule ID and place, as ``info``, its message saying
by whom, why and until when it is waived; it no longer fails the run (nor, for a warning, a
``--strict`` run). The waiver travels with it in ``Diagnostic.extra`` so that expiry, the one
date-dependent verdict, is decided after the store on every run (``compiler.pipeline.waivers``).

The stages call ``apply_waivers`` before each verdict that stops the build (the semantic rules'
gate, and the last one, over every diagnostic of the run); it is idempotent. The last call also
reports waivers that cover nothing (FLEET018), since only then has every stage spoken.

Trust boundary (README "Trust boundary"): waivers live only in the fleet file, which the platform
team owns, so no team waives a finding about another team or the fleet. Some rules cannot be
waived at all (``NOT_WAIVABLE``, with the reason each page of docs/rules/ shows).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Iterator

from compiler.diagnostics import Diagnostic, Location, Rule, Scope, Severity, define, did_you_mean
from compiler.load.source import YamlPath
from compiler.model.waivers import Waiver
from compiler.pipeline import waivers as expiry
from compiler.pipeline.waivers import AT, EXPIRES, MESSAGE, OWNER, RULE, WAIVED, waiver_at

if TYPE_CHECKING:
    from compiler.model.inventory import Inventory
    from compiler.policy.graph import Policy

UNKNOWN_RULE = define(
    "FLEET015", "A waiver names a rule the compiler has and that may be waived (not LOAD, SCHEMA or MIG findings, "
    "the trust-boundary rules, GITOPS302 or the waiver rules themselves).",
    "waivers:\n- {rule: FLEET401, team: vision, owner: '@org/ml-platform', reason: namespace created next sprint,\n"
    "   expires: '2027-03-31'}",
    "waivers:\n- {rule: KEUE001, team: vision, owner: '@org/ml-platform', reason: typo in the rule ID,\n"
    "   expires: '2027-03-31'}", scope=Scope.POLICY)
BAD_TARGET = define(
    "FLEET016", "A waiver names its target precisely: a team and/or a cluster that exist, or `scope: fleet` alone to "
    "waive the rule everywhere.",
    "waivers:\n- {rule: FLEET401, team: vision, cluster: onprem, owner: '@org/ml-platform', reason: onboarding,\n"
    "   expires: '2027-03-31'}",
    "waivers:\n- {rule: FLEET401, owner: '@org/ml-platform', reason: onboarding, expires: '2027-03-31'}"
    "   # no target", scope=Scope.POLICY)
STALE = define(
    "FLEET018", "Every waiver covers at least one finding: a stale waiver would silently cover the next one.",
    "waivers:  # vision has no namespace on onprem yet (FLEET401)\n- {rule: FLEET401, team: vision, cluster: onprem, "
    "owner: '@org/ml-platform',\n   reason: onboarding, expires: '2027-03-31'}",
    "waivers:  # vision's namespace on onprem exists now\n- {rule: FLEET401, team: vision, cluster: onprem, "
    "owner: '@org/ml-platform',\n   reason: onboarding, expires: '2027-03-31'}", Severity.WARNING, scope=Scope.POLICY)

RULES: tuple[Rule, ...] = (UNKNOWN_RULE, BAD_TARGET, STALE, *expiry.RULES)
OWN = frozenset(r.id for r in RULES)

# Rule ID or area -> why its findings cannot be waived (shown on the rule's docs page).
NOT_WAIVABLE: dict[str, str] = {
    "LOAD": "a file is read, and the policy directory's trust boundary (links, credentials) checked, before any "
            "waiver is: a waiver cannot vouch for the file that carries it",
    "SCHEMA": "the shape of each file is checked before the policy, and its waivers, exist: a waiver cannot make "
              "the compiler read keys or values the language does not define",
    "MIG": "a rejected cut leaves its pool without GPU classes and stops the policy before waivers are read; "
           "waiving the message would not make the pool usable",
    "FLEET003": "trust boundary: a team file defines its own team only; a waiver would let one file speak for another "
                "team",
    "FLEET004": "trust boundary: a namespace claimed by two teams puts one team's jobs under another team's quota and "
                "RBAC",
    "ADM007": "trust boundary: a protected priority tier is what keeps a team from outranking another team's jobs",
    "GITOPS490": "stale generated files are fixed by `gpupolicy build`, not accepted: a waiver would let out/ drift "
                 "from what ArgoCD syncs",
    "GITOPS302": "a removal a sync cannot undo has its own, more precise acknowledgement: acknowledgedRemovals names "
                 "the object removed",
    **{rid: "a waiver of the waiver rules would hide the very review waivers exist for"
       for rid in ("FLEET015", "FLEET016", "FLEET017", "FLEET018")},
}


def why_not_waivable(rule_id: str) -> str | None:
    """Why findings of ``rule_id`` cannot be waived, or None when they can."""
    return NOT_WAIVABLE.get(rule_id) or NOT_WAIVABLE.get(rule_id[:-3])


@dataclass(frozen=True)
class Entry:
    """A valid waiver of the fleet file, with its place."""

    waiver: Waiver
    location: Location

    @property
    def at(self) -> str:
        return waiver_at(self.location)

    def carried(self) -> tuple[tuple[str, str], ...]:
        """What a diagnostic needs to know of this waiver once the policy is gone (the store)."""
        w = self.waiver
        return ((RULE, w.rule), (OWNER, w.owner), (EXPIRES, w.expires), (AT, self.at))


def apply_waivers(policy: Policy, diags: list[Diagnostic], inventory: Inventory | None = None, *,
                  final: bool = False, verified: bool = True) -> list[Diagnostic]:
    """``diags`` with the findings the fleet's waivers cover marked waived, plus FLEET015/FLEET016
    for waivers that are not valid and, when ``final`` (every stage has run), FLEET018 for valid
    waivers that cover nothing; without the verify stage (``verified`` false) a waiver of one of its
    rules is not judged. Idempotent: its own earlier diagnostics are recomputed."""
    if not policy.fleet.spec.waivers:
        return diags
    entries, problems = check_waivers(policy)
    places = Places(policy, inventory)
    out: list[Diagnostic] = []
    for d in diags:
        if d.code in OWN:
            continue
        entry = next((e for e in entries if _covers(e.waiver, d, places)), None)
        out.append(d if entry is None else _waived(d, entry))
    if final:
        used = {dict(d.extra).get(AT) for d in out if d.extra}
        unjudged = frozenset() if verified else verify_stage_rules()
        problems += [replace(STALE.diag(f"the waiver of {e.waiver.rule} ({e.waiver.target()}) covers no finding: "
                                        "nothing it names is reported any more", e.location,
                                        hint="remove the waiver (it would silently cover the next such finding)"),
                             extra=e.carried())  # an expired stale waiver is FLEET017 too
                     for e in entries if e.at not in used and e.waiver.rule not in unjudged]
    return out + problems


def verify_stage_rules() -> frozenset[str]:
    """Rules only the verify stage emits (``--no-verify`` skips it)."""
    from compiler.verify import dra_claims, embedded_cel, kueue_config, kueue_webhook
    from compiler.verify import rules as object_rules
    from compiler.verify import run as run_level

    return frozenset(r.id for m in (object_rules, embedded_cel, kueue_webhook, kueue_config, dra_claims, run_level)
                     for r in m.RULES)


def _waived(d: Diagnostic, entry: Entry) -> Diagnostic:
    w = entry.waiver
    return replace(d, severity=Severity.INFO,
                   message=f"waived until {w.expires} by {w.owner} ({w.reason}): {d.message}",
                   extra=((WAIVED, d.severity.value), (MESSAGE, d.message), *entry.carried()))


def check_waivers(policy: Policy) -> tuple[list[Entry], list[Diagnostic]]:
    """The valid waivers, and FLEET015/FLEET016 for the others (which then cover nothing)."""
    from compiler.rules import all_rules  # the registry imports this module's RULES

    rules = all_rules()
    src = policy.fleet_src
    entries: list[Entry] = []
    problems: list[Diagnostic] = []
    for i, w in enumerate(policy.fleet.spec.waivers):
        at = ("spec", "waivers", i)
        found: list[Diagnostic] = []
        why = why_not_waivable(w.rule)
        if w.rule not in rules:
            found.append(UNKNOWN_RULE.diag(f"waiver names rule {w.rule}, which gpupolicy does not have",
                                           src.locate((*at, "rule")), hint=did_you_mean(w.rule, rules)
                                           or "`gpupolicy rules` lists every rule"))
        elif why is not None:
            found.append(UNKNOWN_RULE.diag(f"{w.rule} cannot be waived: {why}", src.locate((*at, "rule")),
                                           hint="fix the finding instead"))
        found += _target_problems(policy, w, at)
        if found:
            problems += found
        else:
            entries.append(Entry(w, src.locate(at)))
    return entries, problems


def _target_problems(policy: Policy, w: Waiver, at: tuple[str | int, ...]) -> list[Diagnostic]:
    src = policy.fleet_src
    if w.scope == "fleet":
        if w.team or w.cluster:
            return [BAD_TARGET.diag(f"waiver of {w.rule} has `scope: fleet` (everywhere) and a team or cluster",
                                    src.locate((*at, "scope")),
                                    hint="drop `scope: fleet` to waive it only there, or drop team/cluster")]
        return []
    if not w.team and not w.cluster:
        return [BAD_TARGET.diag(f"waiver of {w.rule} names no target: it would waive the rule everywhere",
                                src.locate(at), hint="name a `team` and/or a `cluster`, or write `scope: fleet` "
                                                     "to waive it everywhere on purpose")]
    out: list[Diagnostic] = []
    if w.team and policy.team(w.team) is None:
        out.append(BAD_TARGET.diag(f"waiver of {w.rule} names team {w.team!r}, which has no team file",
                                   src.locate((*at, "team")),
                                   hint=did_you_mean(w.team, [t.name for t in policy.teams])))
    if w.cluster and w.cluster not in policy.clusters:
        out.append(BAD_TARGET.diag(f"waiver of {w.rule} names cluster {w.cluster!r}, which the fleet does not declare",
                                   src.locate((*at, "cluster")), hint=did_you_mean(w.cluster, policy.clusters)))
    return out


# -- where a finding is, in policy terms -------------------------------------------------------


Position = tuple[int, int]  # line, col
Span = tuple[Position, Position, str]  # first and last position, the cluster
_END = 10**9  # a block entry runs to the end of its last line


@dataclass
class Places:
    """Which team and cluster a finding's location belongs to, computed on first need."""

    policy: Policy
    inventory: Inventory | None = None
    _spans: dict[str, list[Span]] = field(default_factory=dict)

    @cached_property
    def team_of_file(self) -> dict[str, str]:
        return {t.path: t.name for t in self.policy.teams}

    @cached_property
    def out_sources(self) -> dict[str, tuple[str, ...]]:
        """``out/<relpath>`` -> the policy files it derives from."""
        if self.inventory is None:
            return {}
        return {f"out/{rel}": sources for rel, _, _, sources in self.inventory.files}

    def in_team(self, loc: Location, team: str) -> bool:
        if self.team_of_file.get(loc.file) == team:
            return True
        sources = self.out_sources.get(loc.file, ())
        return any(self.team_of_file.get(s) == team for s in sources)

    def in_cluster(self, loc: Location, cluster: str) -> bool:
        if loc.file.startswith(f"out/{cluster}/"):
            return True
        at = (loc.line, loc.col)
        return loc.line > 0 and any(lo <= at <= hi and c == cluster for lo, hi, c in self.spans(loc.file))

    def spans(self, file: str) -> list[Span]:
        if file not in self._spans:
            self._spans[file] = list(_cluster_spans(self.policy, file))
        return self._spans[file]


def _cluster_spans(policy: Policy, file: str) -> Iterator[Span]:
    """Where ``file`` speaks of one cluster: the fleet's ``spec.clusters[i]``, every mapping with a
    ``cluster`` key (a budget, a serving deployment, a department cap), each whole; and each item of
    a ``clusters`` list (a team namespace's), exactly (``clusters: [cloud, onprem]`` is one line)."""
    src = policy.fleet_src if file == policy.fleet_src.path else next(
        (t.src for t in policy.teams if t.path == file), None)
    if src is None or not isinstance(src.data, dict):
        return
    src.locate(())  # fills the position tables of a file read from the store
    entries: dict[YamlPath, str] = {}
    for path, node in _nodes(src.data.get("spec"), ("spec",)):
        if isinstance(node, dict) and isinstance(node.get("cluster"), str):
            entries[path] = node["cluster"]
        elif len(path) == 3 and path[1] == "clusters" and file == policy.fleet_src.path and isinstance(node, dict):
            if isinstance(node.get("name"), str):
                entries[path] = node["name"]
        elif len(path) >= 2 and path[-2] == "clusters" and isinstance(node, str) and path in src.positions:
            yield src.positions[path], src.positions[path], node
    found: dict[YamlPath, list[Position]] = {}
    for table in (src.positions, src.key_positions):
        for path, pos in table.items():
            for n in range(2, len(path) + 1):
                if path[:n] in entries:
                    found.setdefault(path[:n], []).append(pos)
    for entry, cluster in entries.items():
        if entry in found:
            yield min(found[entry]), (max(found[entry])[0], _END), cluster


def _nodes(data: object, path: YamlPath) -> Iterator[tuple[YamlPath, object]]:
    """Every node of ``data`` below ``path``, with its path."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield (*path, key), value
            yield from _nodes(value, (*path, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield (*path, i), value
            yield from _nodes(value, (*path, i))


def _covers(w: Waiver, d: Diagnostic, places: Places) -> bool:
    if d.code != w.rule or d.severity is Severity.INFO or WAIVED in dict(d.extra):
        return False
    if w.scope == "fleet":
        return True
    if d.location is None:
        return False
    return ((w.team is None or places.in_team(d.location, w.team))
            and (w.cluster is None or places.in_cluster(d.location, w.cluster)))

"""``.github/CODEOWNERS`` from team owners (SPEC §5): a team's own PR needs only its approval.

GitHub requires one approval per changed file from that file's owners, the last matching line
deciding; several owners on one line means any one of them suffices. So:

- ``*`` and the fleet file: the platform (the compiler, schemas, workflows, cluster-wide output
  such as ResourceFlavors, Cohorts, admission policies, ArgoCD objects, node contracts).
- A team file: that team only; nobody else changes a team's intent.
- The ``out/`` files derived from one team file (its namespaces, queues, RBAC, serving): that
  team *or* the platform. A team PR needs only the team; a platform PR that regenerates every
  team's output (a compiler upgrade, a fleet change) needs only the platform.
- Shared generated files that any policy change may touch (REPORT.md, allocation.json, this
  CODEOWNERS, which changes when a team's set of output files does, and the root Cohort that
  holds the GPUs no team is guaranteed, whose quota moves with every guarantee): any team owner
  or the platform. This is safe only with ``gpupolicy check`` as a required status check: it fails
  unless these files are exactly what the policies render, and GitHub reads CODEOWNERS from the
  base branch, so a PR cannot rewrite its own reviewers.

A team PR therefore needs platform approval only when it changes something shared: output
derived from several teams or from the fleet alone (e.g. a first budget on a cluster adds a
department's Cohort, a first serving deployment adds the cluster's serving Application).

Ownership is read per file from its sources, not from a table of kinds: each lowering target
declares its CODEOWNERS scope (``Target.scope`` in ``compiler.model.targets``: ``"cluster"`` =
platform, ``"team"`` = the team), and ``tests/test_targets.py`` checks that its passes name exactly
the sources that scope implies (no team file, or the one team's file).
"""

from __future__ import annotations

from collections import defaultdict
from sys import intern
from typing import Iterable, Mapping

from compiler.diagnostics import Diagnostic, Rule, Scope, Severity, define
from compiler.escape import codeowners_path
from compiler.model.inventory import FileRow, Inventory
from compiler.model.manifest import Manifest
from compiler.policy.cohorts import spare_cohort_files
from compiler.policy.graph import Policy, Team
from compiler.report.owner_names import agreed, dotted_names, prefixed_teams, rest_of
from compiler.report.report_size import over_github_limit

# GitHub loads a CODEOWNERS file only under 3 MB ("CODEOWNERS file size", docs.github.com: About code
# owners); over it no code owner is requested or required. Taken as 3,000,000 bytes, the smaller reading.
GITHUB_MAX_BYTES = 3_000_000
TOO_LARGE = define(
    "GITOPS403", "The rendered CODEOWNERS is under GitHub's 3 MB limit: over it GitHub does not load the file, "
    "so no team's review is requested or required (the trust boundary between teams is gone).",
    "# 10,000 teams on 50 clusters, namespaces named after their team: CODEOWNERS 2.4 MB",
    "# 10,000 teams on 50 clusters, namespaces not named after their team: CODEOWNERS 4.5 MB",
    Severity.WARNING, scope=Scope.OUTPUT)
RULES: tuple[Rule, ...] = (TOO_LARGE,)


def check_size(policy: Policy, size: int, lines: int, limit: int | None = None) -> list[Diagnostic]:
    """GITOPS403, emitted by the pipeline once CODEOWNERS is rendered (``size`` bytes, ``lines``
    lines), on the platform's owners, whose team reviews the repository without it."""
    limit = GITHUB_MAX_BYTES if limit is None else limit
    return over_github_limit(
        TOO_LARGE, policy, size, limit, f".github/CODEOWNERS is {size:,} bytes ({lines:,} lines for "
        f"{len(policy.teams):,} teams), over GitHub's limit of {limit:,}: GitHub ignores the whole file, so no code "
        "owner review is requested or required",
        hint="the file has a line per team file and one for a team's namespaces named after it and its ClusterQueue "
        "(else a line per namespace and ClusterQueue; per kind of object, or per cluster, only where another file "
        "bears a namespace's name), and its shared lines name every team owner: ~0.25 KB per team, the limit at "
        "~12,000 teams (~0.45 KB and ~6,500 teams where namespaces are not named after their team); name "
        "namespaces <team>-<purpose>, or keep an organisation's policies under the limit (one repository per "
        "region or business unit)")


# Shared generated files (relative to out/, or to the repository root with a leading "/"), as
# patterns: REPORT.md with the files its long tables go to (REPORT.<name>.md,
# compiler.report.report_tables); ``*`` stays within out/, where nothing else is so named.
SUMMARIES = ("REPORT*.md", "allocation.json")
REPO_SUMMARIES = ("/.github/CODEOWNERS",)


# What CODEOWNERS reads of some out/ files: (cluster, namespace) -> the teams owning its files
# (None: not one team's, or not in the globbable layout); (cluster, namespace) -> (component, kind,
# escaped "<cluster>/<component>/<kind>.<namespace>.") of its files; (cluster, namespace or None) ->
# the files one team owns there as (relpath, team, escaped relpath), sorted; the files no one team
# owns, as their path below the cluster's folder (their *rest*) -> its name (``name_of``); each
# *dotted* name (``dotted_names``) of a file three folders deep -> the team owning every such file
# bearing it (None: one is not one team's). Set and dict unions, concatenations and that
# agreement, so parts of disjoint file lists merge into exactly the part of their union: a team
# unit's part is computed once and stored with the unit (compiler.pipeline.stages), and a one-team
# edit recomputes only that part.
OwnedPart = tuple[dict[tuple[str, str], set[str | None]], dict[tuple[str, str], set[tuple[str, str, str]]],
                  dict[tuple[str, str | None], list[tuple[str, str, str]]], dict[str, str], dict[str, str | None]]


def owned_part(files: Iterable[FileRow], team_of: Mapping[str, str]) -> OwnedPart:
    """The part of these files; ``team_of`` maps a team file's path to the team's name (a team
    unit passes its own team only: its objects derive from the fleet and that file alone)."""
    by_ns: dict[tuple[str, str], set[str | None]] = defaultdict(set)  # (cluster, ns) -> owning teams
    kinds: dict[tuple[str, str], set[tuple[str, str, str]]] = defaultdict(set)
    single: dict[tuple[str, str | None], list[tuple[str, str, str]]] = defaultdict(list)
    others: dict[str, str] = {}
    dotted: dict[str, str | None] = {}
    escaped: dict[str, str] = {}  # a folder's glob literal, escaped once
    for relpath, cluster, namespace, sources in files:
        teams = {team_of[s] for s in sources if s in team_of}
        team = teams.pop() if len(teams) == 1 else None
        parts = relpath.split("/")
        if len(parts) == 3:
            for name in parts[2].split(".")[1:-1]:  # dotted_names, inlined: every file of every unit
                dotted[name] = team if dotted.get(name, team) == team else None
        if namespace:
            by_ns[(cluster, namespace)].add(team)
            kind = parts[-1].split(".", 1)[0]
            if len(parts) == 3 and parts[0] == cluster and parts[2].startswith(f"{kind}.{namespace}."):
                folder = f"{cluster}/{parts[1]}/{kind}.{namespace}."
                literal = escaped.get(folder)
                if literal is None:
                    literal = escaped[folder] = _escaped(folder)
                kinds[(cluster, namespace)].add((intern(parts[1]), intern(kind), literal))  # stored once
            else:  # not the <cluster>/<component>/<kind>.<ns>.<name>.yaml layout: never globbed
                by_ns[(cluster, namespace)].add(None)
        if team is not None:
            single[(cluster, namespace or None)].append((relpath, team, _escaped(relpath)))
        elif (rest := rest_of(relpath)) is not None:
            others[rest] = namespace or rest
    for rows in single.values():
        rows.sort()
    return dict(by_ns), dict(kinds), dict(single), others, dotted


def delivery_rows(manifests: Iterable[Manifest]) -> list[FileRow]:
    """The rows of ArgoCD's files (``out/argocd/``), which ``Inventory`` does not list: a
    namespace's line for every cluster could match them (``merged_outputs``)."""
    return [(m.relpath, m.cluster, m.namespace, m.sources) for m in manifests if m.cluster == "argocd"]


def _escaped(path: str) -> str:
    """``codeowners_path``, or "" for a path CODEOWNERS cannot hold: the error is raised only if
    the path is written (``merged_outputs``), as when every path was escaped at the end."""
    try:
        return codeowners_path(path)
    except ValueError:
        return ""


def team_outputs(policy: Policy, inventory: Inventory, out_dir: str,
                 delivery: Iterable[FileRow] = ()) -> dict[str, list[str]]:
    """team -> CODEOWNERS patterns of the out/ files derived from its file and no other team's
    (``delivery``: the rows of ArgoCD's files, which the inventory does not list)."""
    return merged_outputs([owned_part([*inventory.files, *delivery], {t.path: t.name for t in policy.teams})],
                          out_dir)


def merged_outputs(parts: Iterable[OwnedPart], out_dir: str, taken: Iterable[str] = ()) -> dict[str, list[str]]:
    """team -> CODEOWNERS patterns of the out/ files derived from its file and no other team's,
    from the parts of disjoint file lists covering every out/ file.

    A team namespace gets one line for every cluster, ``/out/*/*/*.<namespace>.*yaml``, when every
    file that line matches is the team's: every file of that name's namespace on every cluster
    (FLEET004 lets two teams use one name on two clusters), and every file three folders deep with
    the name as a dot-separated part of its file name (``dotted_names``: an object named after a
    class, ``resourceclaimtemplate.<ns>.a100-80gb-mig-3g.40gb-1.yaml``, or a cluster-wide one,
    ``deviceclass._.a100-80gb-mig-3g.40gb.yaml``, bears ``a100-80gb-mig-3g``; ArgoCD's files under
    ``argocd/<cluster>/`` too, which the caller passes with the fleet's). The line stands for the
    namespace's objects of every kind and its Namespace object (``namespace._.<ns>.yaml``): one
    line where a line per kind was five or more. Otherwise the namespace gets one pattern per kind of
    object it holds (``/out/<cluster>/<component>/<kind>.<namespace>.*.yaml``), where the kind and
    the namespace (a DNS label, no dots) are literal, so the ``*`` stands only for the object's
    name. Either way objects the team adds later in its namespace (a claim template for a new
    class, a second serving deployment) are the team's from the start. The rest are exact paths.
    Every literal part is escaped (``codeowners_path``). New namespaces fall under ``*``: a
    Namespace is cluster-scoped.

    One line then stands for every cluster (``/out/*/...``: CODEOWNERS patterns follow gitignore's,
    where ``*`` matches anything but ``/``, and GitHub suggests wildcards to keep the file under its
    limit, docs.github.com "About code owners"; so the ``*`` is one folder, a cluster's or ``argocd``)
    when every file it matches is the team's: a namespace the team's alone on each cluster it has
    files on, or an exact path whose rest no other file has. A namespace or path the team adds on
    another cluster is then the team's from the start. A file another team's PR adds that one of
    this team's lines matches (the same namespace name on another cluster, or an object named with
    this team's namespace name as a dot-separated part) needs this team's or the platform's
    approval until the file is regenerated (the base branch's CODEOWNERS decides): it can cost
    that PR the platform's review, never give this team a file it can change alone, since each
    ``out/`` file is the render of policy files whose own lines do not change (``gpupolicy check``).
    (Sizes at 1,000 to 10,000 teams as each of these came: bench/README.md.)

    A team whose namespaces are named after it gets one line for all of them and its ClusterQueue,
    ``/out/*/*/*.<team>*yaml``, when no file of another team or the fleet bears a name starting
    with the team's (``prefixed_teams``; ``taken``: the teams for which files outside these parts
    do). Such a file a later PR adds needs this team's or the platform's approval, as above."""
    by_ns: dict[tuple[str, str], set[str | None]] = {}
    kinds: dict[tuple[str, str], set[tuple[str, str, str]]] = {}
    singles: list[tuple[tuple[str, str | None], list[tuple[str, str, str]]]] = []
    others: set[str] = set()
    dotted: dict[str, str | None] = {}
    for part_ns, part_kinds, part_single, part_others, part_dotted in parts:
        for key, owners in part_ns.items():
            mine = by_ns.get(key)
            by_ns[key] = set(owners) if mine is None else mine | owners
        for key, found in part_kinds.items():
            had = kinds.get(key)
            kinds[key] = set(found) if had is None else had | found
        singles += part_single.items()
        others.update(part_others)
        if dotted:
            for name, team in part_dotted.items():
                agreed(dotted, name, team)
        else:
            dotted.update(part_dotted)
    out = codeowners_path(out_dir)
    globbed, whole, prefixed, owned = _globbed(by_ns, kinds, dotted, frozenset(taken), out)
    _add_exact(owned, singles, globbed, whole, prefixed, others, out)
    return owned


def _globbed(by_ns: Mapping[tuple[str, str], set[str | None]], kinds: Mapping[tuple[str, str], set[tuple[str, str, str]]],
             dotted: Mapping[str, str | None], taken: frozenset[str], out: str
             ) -> tuple[dict[tuple[str, str], str], dict[str, set[str]], set[str], dict[str, list[str]]]:
    """The namespaces one team's alone on a cluster; those with a line of their own (team ->
    namespaces: every file bearing the name is the team's, ``dotted``); the teams with a line for
    every name starting with theirs (``prefixed_teams``); and each team's patterns: that line, a
    namespace's line, else one per kind, for every cluster where the namespace is the team's
    alone on each cluster it has files on."""
    globbed: dict[tuple[str, str], str] = {}
    everywhere: dict[str, str | None] = {}  # namespace -> the team it is globbed to on every cluster
    for key, owners in by_ns.items():
        only = next(iter(owners))
        team = only if len(owners) == 1 else None
        if team is not None:
            globbed[key] = team
        everywhere[key[1]] = team if everywhere.get(key[1], team) == team else None
    owned: dict[str, list[str]] = defaultdict(list)
    whole: dict[str, set[str]] = defaultdict(set)  # team -> namespaces with a line of their own
    wide: dict[str, set[str]] = defaultdict(set)  # team -> escaped "<component>/<kind>.<ns>." of every cluster
    for (cluster, ns), team in sorted(globbed.items()):
        if everywhere[ns] == team and dotted.get(ns) == team:
            whole[team].add(ns)
            continue
        literals = [literal or codeowners_path(f"{cluster}/{component}/{kind}.{ns}.")
                    for component, kind, literal in kinds.get((cluster, ns), ())]
        if everywhere[ns] == team:
            wide[team].update(literal.split("/", 1)[1] for literal in literals)
        else:
            owned[team] += [f"/{out}/{literal}*.yaml" for literal in sorted(literals)]
    for team, rests in wide.items():
        owned[team][:0] = [f"/{out}/*/{rest}*.yaml" for rest in sorted(rests)]
    prefixed = prefixed_teams(dotted, everywhere, whole, taken)
    for team, spaces in whole.items():
        lines = [f"/{out}/*/*/*.{codeowners_path(team)}*yaml"] if team in prefixed else []
        owned[team][:0] = lines + [f"/{out}/*/*/*.{codeowners_path(ns)}.*yaml" for ns in sorted(spaces)
                                   if not (lines and ns.startswith(team))]
    return globbed, whole, prefixed, owned


def _add_exact(owned: dict[str, list[str]], singles: list[tuple[tuple[str, str | None], list[tuple[str, str, str]]]],
               globbed: Mapping[tuple[str, str], str], whole: Mapping[str, set[str]], prefixed: set[str],
               others: set[str], out: str) -> None:
    """Each team's exact paths outside its globbed namespaces and not bearing the name of one with
    a line of its own (its Namespace object's file, ``namespace._.<ns>.yaml``) or, for a team with
    a line for every name starting with its own, such a name (its ClusterQueue's file), after its
    patterns: one for every cluster where no other file has the path's rest."""
    rest_team: dict[str, str] = {}  # rest -> the team owning every file there ("" for several teams)
    for _, rows in singles:
        for relpath, team, _ in rows:
            if (rest := rest_of(relpath)) is not None:
                rest_team[rest] = team if rest_team.get(rest, team) == team else ""
    exact: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for (cluster, namespace), rows in singles:
        if not (namespace and (cluster, namespace) in globbed):
            for row in rows:
                team = row[1]
                spaces = whole.get(team)
                if not (spaces and any(name in spaces or (team in prefixed and name.startswith(team))
                                       for name in dotted_names(row[0]))):
                    exact[team].append(row)
    for team, rows in exact.items():
        rows.sort()  # out/ paths are unique: the order of the paths (runs of sorted rows)
        every: set[str] = set()
        lines = []
        for relpath, _, escaped in rows:
            rest = rest_of(relpath)
            if rest is not None and rest not in others and rest_team[rest] == team:
                every.add((escaped or codeowners_path(relpath)).split("/", 1)[1])
            else:
                lines.append(f"/{out}/{escaped or codeowners_path(relpath)}")
        owned[team] += [f"/{out}/*/{rest}" for rest in sorted(every)] + lines


def render_codeowners(policy: Policy, inventory: Inventory | list[OwnedPart], policy_dir: str, out_dir: str,
                      delivery: Iterable[FileRow] = ()) -> bytes:
    """The file, from the merged inventory and ArgoCD's rows (``delivery_rows``), or from the
    owned parts covering both."""
    owned = (team_outputs(policy, inventory, out_dir, delivery) if isinstance(inventory, Inventory)
             else merged_outputs(inventory, out_dir))
    return codeowners_file(policy, policy_dir, out_dir, [team_section(policy, t, owned.get(t.name, []))
                                                         for t in policy.teams])


def team_section(policy: Policy, team: Team, patterns: list[str]) -> str:
    """One team's lines: its file, then its output's ``patterns`` (``merged_outputs``)."""
    platform_owners = list(policy.fleet.spec.platform.owners)
    team_owners = list(team.model.spec.owners)
    both = " ".join(team_owners + [o for o in platform_owners if o not in team_owners])
    return "\n".join([f"# team {team.name}",
                      f"/{codeowners_path(team.path)} {' '.join(team_owners)}",
                      *[f"{p} {both}" for p in patterns]])


def codeowners_file(policy: Policy, policy_dir: str, out_dir: str, sections: Iterable[str]) -> bytes:
    """The file: the platform's lines, the shared files', then each team's section in order."""
    return (codeowners_header(policy, policy_dir, out_dir) + sections_text(sections)).encode()


def codeowners_header(policy: Policy, policy_dir: str, out_dir: str) -> str:
    """The file's lines before the teams' sections: the platform's, then the shared files'."""
    platform_owners = list(policy.fleet.spec.platform.owners)
    platform = " ".join(platform_owners)
    lines = [
        "# generated by gpupolicy from the owners in the policy files; do not edit",
        "# (edit policies/, run `gpupolicy build`; `gpupolicy check` must be a required status check)",
        "",
        "# Platform: everything by default, including the compiler and cluster-wide output.",
        f"* {platform}",
        f"/{codeowners_path(policy_dir)}/fleet.yaml {platform}",
        "",
    ]
    everyone = sorted({o for t in policy.teams for o in t.model.spec.owners} | set(platform_owners))
    lines.append("# Shared generated files: any team owner may approve their regeneration.")
    lines += [f"/{codeowners_path(out_dir)}/{p} {' '.join(everyone)}"
              for p in (*SUMMARIES, *spare_cohort_lines(policy))]
    lines += [f"{p} {' '.join(everyone)}" for p in REPO_SUMMARIES]
    lines += ["", "# Each team: its file (the team alone), then its output (the team or the platform, for regenerations).",
              ""]
    return "\n".join(lines)


def spare_cohort_lines(policy: Policy) -> list[str]:
    """The escaped ``out/``-relative patterns of the Cohorts holding unguaranteed GPUs: one for
    every cluster (``*/kueue/cohort._.<name>.yaml``) when every cluster has its spare Cohort there
    (then the ``*`` matches only these: ``argocd/``'s folders hold ArgoCD's objects alone), else a
    path per cluster (at 5,000 teams the 20 paths were 2.2 MB of the file: each names every team)."""
    files = spare_cohort_files(policy)
    rests = {relpath.split("/", 1)[1] for relpath in files}
    if len(rests) == 1 and len(files) == len(policy.clusters) > 1:
        return [f"*/{codeowners_path(rests.pop())}"]
    return [codeowners_path(relpath) for relpath in files]


def sections_text(sections: Iterable[str]) -> str:
    """Consecutive teams' sections as they follow the header, each after a blank line: the text
    of a run of sections is the same wherever the run is cut (``compiler.pipeline.owners`` keeps it
    a block of teams at a time)."""
    return "".join(f"\n{section}\n" for section in sections)

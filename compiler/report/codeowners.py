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

from compiler.escape import codeowners_path
from compiler.model.inventory import Inventory
from compiler.policy.cohorts import spare_cohort_files
from compiler.policy.graph import Policy

# Shared generated files (relative to out/, or to the repository root with a leading "/").
SUMMARIES = ("REPORT.md", "allocation.json")
REPO_SUMMARIES = ("/.github/CODEOWNERS",)


def team_outputs(policy: Policy, inventory: Inventory, out_dir: str) -> dict[str, list[str]]:
    """team -> CODEOWNERS patterns of the out/ files derived from its file and no other team's.

    A team namespace whose objects all derive from that team gets one pattern per kind of object
    it holds (``/out/<cluster>/<component>/<kind>.<namespace>.*.yaml``), so objects of those kinds
    the team adds later (a claim template for a new class, a second serving deployment) are the
    team's from the start. The ``*`` stands only for the object's name: the kind and the namespace
    (a DNS label, no dots) are literal, so a namespace named like a class (``a100-80gb-mig-3g``)
    cannot match a cluster-wide file (``deviceclass._.a100-80gb-mig-3g.40gb.yaml``) or another
    namespace's. The rest are exact paths. Every literal part is escaped (``codeowners_path``).
    New namespaces fall under ``*``: a Namespace is cluster-scoped."""
    team_paths = {t.path: t for t in policy.teams}
    owned: dict[str, list[str]] = defaultdict(list)
    by_ns: dict[tuple[str, str], set[str | None]] = defaultdict(set)  # (cluster, ns) -> owning teams
    kinds: dict[tuple[str, str], set[tuple[str, str]]] = defaultdict(set)  # (cluster, ns) -> (component, kind)
    single: list[tuple[str, str, str, str | None]] = []  # (path, team, cluster, namespace)
    for relpath, cluster, namespace, sources in inventory.files:
        teams = {team_paths[s].name for s in sources if s in team_paths}
        team = teams.pop() if len(teams) == 1 else None
        if namespace:
            by_ns[(cluster, namespace)].add(team)
            parts = relpath.split("/")
            if len(parts) == 3 and parts[0] == cluster and parts[2].startswith(f"{parts[2].split('.', 1)[0]}.{namespace}."):
                kinds[(cluster, namespace)].add((parts[1], parts[2].split(".", 1)[0]))
            else:  # not the <cluster>/<component>/<kind>.<ns>.<name>.yaml layout: never globbed
                by_ns[(cluster, namespace)].add(None)
        if team is not None:
            single.append((relpath, team, cluster, namespace))
    globbed: dict[tuple[str, str], str] = {}
    for key, owners in by_ns.items():
        only = next(iter(owners))
        if len(owners) == 1 and only is not None:
            globbed[key] = only
    out = codeowners_path(out_dir)
    for (cluster, ns), team in sorted(globbed.items()):
        for component, kind in sorted(kinds[(cluster, ns)]):
            literal = codeowners_path(f"{cluster}/{component}/{kind}.{ns}.")
            owned[team].append(f"/{out}/{literal}*.yaml")
    for relpath, team, cluster, namespace in sorted(single):  # out/ paths are unique
        if not (namespace and (cluster, namespace) in globbed):
            owned[team].append(f"/{out}/{codeowners_path(relpath)}")
    return owned


def render_codeowners(policy: Policy, inventory: Inventory, policy_dir: str, out_dir: str) -> bytes:
    platform_owners = list(policy.fleet.spec.platform.owners)
    platform = " ".join(platform_owners)
    owned = team_outputs(policy, inventory, out_dir)
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
    lines += [f"/{codeowners_path(out_dir)}/{codeowners_path(p)} {' '.join(everyone)}"
              for p in (*SUMMARIES, *spare_cohort_files(policy))]
    lines += [f"{p} {' '.join(everyone)}" for p in REPO_SUMMARIES]
    lines.append("")
    for t in policy.teams:
        team_owners = list(t.model.spec.owners)
        both = " ".join(team_owners + [o for o in platform_owners if o not in team_owners])
        lines.append(f"# team {t.name}: its file; its output (also the platform, for regenerations)")
        lines.append(f"/{codeowners_path(t.path)} {' '.join(team_owners)}")
        lines += [f"{p} {both}" for p in owned.get(t.name, [])]
        lines.append("")
    return "\n".join(lines).encode()

"""Ambiguous or surprising YAML (docs/misconfigurations.md, family "yaml"): what a file says is not
what its author meant.

- SCHEMA301: a blank value (``borrow:`` with nothing after it, ``~``, ``null``) is null, which the
  language reads as "not set": a budget amount inherits (possibly ``unlimited``), an optional key
  takes its default. The author almost always meant something else.
- KUEUE302: a department's default undoes a protection its parent declares (``lend: 0`` or
  ``borrow: 0`` above, a larger or unlimited default below): the teams of the sub-department inherit
  the nearer, looser value.
- GITOPS301: two clusters with one API server URL: ArgoCD keys clusters by URL, so both clusters'
  Applications sync to one cluster, and each prunes what the other created.
"""

from __future__ import annotations

from typing import Iterator
from urllib.parse import urlsplit

from compiler.diagnostics import Diagnostic, Rule, Scope, Severity, checks, define
from compiler.load.source import SourceFile, YamlPath
from compiler.policy.allocation import TeamAllocation
from compiler.policy.graph import Policy

BLANK = define(
    "SCHEMA301", "No key is left blank: YAML reads `key:` with no value as null, which gpupolicy reads as 'not set' "
    "(a budget amount then inherits, possibly unlimited). Write 0, unlimited or a value, or remove the key.",
    "lend: 0", "lend:        # null: inherits the department's unlimited", Severity.WARNING, scope=Scope.POLICY)
UNDONE_PROTECTION = define(
    "KUEUE302", "A department's budget default does not undo a protection (lend: 0 or borrow: 0) its parent "
    "department declares: teams inherit the nearest default.",
    "- {name: product, defaults: {lend: 0}}\n- {name: ads, parent: product}",
    "- {name: product, defaults: {lend: 0}}\n- {name: ads, parent: product, defaults: {lend: unlimited}}",
    Severity.WARNING, scope=Scope.FLEET)
SAME_API_SERVER = define(
    "GITOPS301", "Every cluster has its own API server URL (ArgoCD identifies clusters by URL: two clusters with one "
    "URL sync to one cluster and prune each other's objects).",
    "- {name: a, apiServer: https://a.example:6443}\n- {name: b, apiServer: https://b.example:6443}",
    "- {name: a, apiServer: https://a.example:6443}\n- {name: b, apiServer: https://a.example:6443/}",
    scope=Scope.FLEET)

RULES: tuple[Rule, ...] = (BLANK, UNDONE_PROTECTION, SAME_API_SERVER)

AMOUNTS = ("guaranteed", "borrow", "lend")


def _crumb(path: YamlPath) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


@checks(BLANK)
def check_blank_values(policy: Policy) -> Iterator[Diagnostic]:
    resolved: dict[tuple[str, YamlPath], TeamAllocation] = {}  # filled at the first blank amount: blanks are rare
    files: list[SourceFile] = [policy.fleet_src, *(t.src for t in policy.teams)]
    for src in files:
        for path in src.blank_paths():
            key = path[-1]
            if key in AMOUNTS and not resolved:
                resolved = {(e.source, e.path): e for e in policy.allocation.entries}
            entry = resolved.get((src.path, path[:-1])) if key in AMOUNTS else None
            if entry is not None:
                value = getattr(entry, str(key))
                meant = f"it inherits {value.show()} from {value.origin}"
            else:
                meant = "the key counts as not set and takes its default"
            yield BLANK.diag(f"{_crumb(path)} is blank, which YAML reads as null: {meant}",
                             src.locate(path, key=True),  # a null has no token: its key is the line
                             hint="write the value you mean (for amounts: 0 for none, unlimited for no limit), or "
                                  "delete the key to inherit on purpose")


def _protected(policy: Policy, dept: str, field: str) -> str | None:
    """The nearest ancestor of ``dept`` (excluded) whose default for ``field`` is 0."""
    seen = {dept}
    name = policy.departments[dept].parent if dept in policy.departments else None
    while name is not None and name in policy.departments and name not in seen:
        seen.add(name)
        d = policy.departments[name]
        value = getattr(d.defaults, field) if d.defaults is not None else None
        if value is not None:
            return name if value == 0 else None  # the nearest explicit default decides
        name = d.parent
    return None


@checks(UNDONE_PROTECTION)
def check_undone_protection(policy: Policy) -> Iterator[Diagnostic]:
    for i, d in enumerate(policy.fleet.spec.departments):
        if d.defaults is None:
            continue
        for field in ("borrow", "lend"):
            value = getattr(d.defaults, field)
            if value is None or value == 0:
                continue
            parent = _protected(policy, d.name, field)
            if parent is None:
                continue
            shown = "unlimited" if value == "unlimited" else str(value)
            what = "lend none of their guarantees" if field == "lend" else "borrow nothing"
            yield UNDONE_PROTECTION.diag(
                f"department {d.name!r} defaults {field} to {shown}, undoing {parent!r}'s {field}: 0 for its "
                f"teams, which {parent!r} meant to {what}",
                policy.fleet_src.locate(("spec", "departments", i, "defaults", field)),
                hint=f"drop {field} from {d.name!r}'s defaults to inherit the protection, or set it in the team "
                     "files that may deviate, where their owners review it")


def _endpoint(url: str) -> str:
    parts = urlsplit(url.strip())
    host = (parts.hostname or "").lower().rstrip(".")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{host}:{port}{parts.path.rstrip('/')}"


@checks(SAME_API_SERVER)
def check_same_api_server(policy: Policy) -> Iterator[Diagnostic]:
    first: dict[str, tuple[int, str]] = {}
    for ci, c in enumerate(policy.fleet.spec.clusters):
        key = _endpoint(str(c.api_server))
        if key not in first:
            first[key] = (ci, c.name)
            continue
        oi, other = first[key]
        yield SAME_API_SERVER.diag(
            f"clusters {other!r} and {c.name!r} name one API server ({key}): ArgoCD identifies a cluster by its URL, "
            f"so the Applications of both sync to the same cluster, and each prunes the other's objects",
            policy.fleet_src.locate(("spec", "clusters", ci, "apiServer")),
            hint="give each cluster its own API server URL; one Kubernetes cluster is one gpupolicy cluster")
        yield SAME_API_SERVER.diag(
            f"cluster {other!r} shares its API server with {c.name!r}",
            policy.fleet_src.locate(("spec", "clusters", oi, "apiServer")), severity=Severity.INFO,
            hint="related: the duplicate is reported on the later cluster")

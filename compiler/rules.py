"""The one registry of rule IDs (SPEC §9): every ``<AREA><3 digits>`` the compiler can emit, with
its one-line summary, PASS/FAIL examples and scope.

A rule is declared (``compiler.diagnostics.define``) in the module that emits it, and each such
module lists its rules in ``RULES``. This module imports those modules by name and nothing imports
it back except the CLI (``gpupolicy rules``), docs and tests, so it can see every stage without an
import cycle. The semantic rules come as one tuple, ``compiler.validate.driver.RULES``, because the
validate stage runs them from there. A new rule in an existing module needs no change here; a new
rule module is one import and one line below.
"""

from __future__ import annotations

from compiler.cli import stale
from compiler.diagnostics import AREAS, Rule, Scope
from compiler.load import files, secrets, yaml_faults
from compiler.report import codeowners, report_size
from compiler.validate import driver, mig, schema, waivers
from compiler.verify import dra_claims, embedded_cel, kueue_config, kueue_webhook
from compiler.verify import ops as ops_rules
from compiler.verify import rules as verify_rules
from compiler.verify import run as verify_run

__all__ = ["AREAS", "RULES", "Rule", "Scope", "all_rules", "get"]

RULES: tuple[Rule, ...] = (
    *yaml_faults.RULES,  # LOAD: reading the files
    *files.RULES,  # LOAD: which files are read (the policy directory's trust boundary)
    *secrets.RULES,  # LOAD: no credentials in any policy string
    *schema.RULES,  # SCHEMA: each file against its model
    *mig.RULES,  # MIG: layouts against the GPU catalog, per pool
    *driver.RULES,  # the semantic rules over the whole policy (SPEC §6)
    *waivers.RULES,  # FLEET015-018: waivers in fleet.yaml, applied by the stages (and expiry after the store)
    *verify_rules.RULES,  # VERIFY and the webhook/config checks over the rendered objects
    *embedded_cel.RULES,
    *kueue_webhook.RULES,
    *kueue_config.RULES,
    *dra_claims.RULES,
    *verify_run.RULES,
    *ops_rules.RULES,  # OPS over the rendered fleet (those over the policy come with driver.RULES)
    *stale.RULES,  # GITOPS490: `check` finds generated files stale
    *codeowners.RULES,  # GITOPS403: CODEOWNERS over GitHub's size limit
    *report_size.RULES,  # GITOPS404: REPORT.md over the size GitHub renders
)


def _index(rules: tuple[Rule, ...]) -> dict[str, Rule]:
    out: dict[str, Rule] = {}
    for rule in rules:
        if rule.id in out:
            raise ValueError(f"rule {rule.id} is declared twice")
        out[rule.id] = rule
    return dict(sorted(out.items()))


_BY_ID = _index(RULES)


def all_rules() -> dict[str, Rule]:
    """Every rule, by ID in ID order."""
    return dict(_BY_ID)


def get(id: str) -> Rule:
    """The rule ``id``; raises ``KeyError`` on an unknown ID (as yamllint's ``rules.get``)."""
    return _BY_ID[id]

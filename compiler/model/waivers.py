"""Waivers (``waivers:`` in fleet.yaml): a finding the platform team accepts on purpose, for a while.

A waiver lives only in the fleet file, which the platform team owns (CODEOWNERS), so it is
reviewed like any policy change and no team can waive a finding about another team or the fleet
(a team file has no ``waivers`` key: SCHEMA001). Each one names the rule, a precise target, who
answers for it, why, and until when; ``compiler.validate.waivers`` applies them.
"""

from __future__ import annotations

import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from compiler.model.common import DnsLabel, Strict

_ISO_DATE = r"^\d{4}-\d{2}-\d{2}$"


def _real_date(v: str) -> str:
    """``2027-02-30`` matches the pattern but is no day: refuse it here, where it is located."""
    try:
        datetime.date.fromisoformat(v)
    except ValueError:
        raise ValueError(f"{v!r} is not a calendar date (YYYY-MM-DD)") from None
    return v


# The loader reads YAML scalars as strings (no implicit timestamps), and the models are strict, so
# the date is a validated ISO string rather than a ``datetime.date``.
IsoDate = Annotated[str, Field(pattern=_ISO_DATE, json_schema_extra={"format": "date"}), AfterValidator(_real_date)]
RuleId = Annotated[str, Field(pattern=r"^[A-Z]{2,8}\d{3}$")]
# Patterns rather than validators, so the JSON Schema an editor uses refuses the same values: one
# line with something on it; a reason of at least three characters, not all blank.
Contact = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[^\r\n]*\S[^\r\n]*$")]
Reason = Annotated[str, Field(min_length=3, max_length=512, pattern=r"\S")]


class Waiver(Strict):
    """One accepted finding: rule ``rule`` where the target says, owned by ``owner``, until ``expires``.

    The target is ``team`` (its file and the out/ objects derived from it) and/or ``cluster``
    (its entry in fleet.yaml, the team-file entries that name it and out/<cluster>/); a waiver of a
    rule everywhere must say so with ``scope: fleet`` instead."""

    rule: RuleId
    team: DnsLabel | None = None
    cluster: DnsLabel | None = None
    scope: Literal["fleet"] | None = None
    owner: Contact
    reason: Reason
    expires: IsoDate

    @property
    def expiry(self) -> datetime.date:
        return datetime.date.fromisoformat(self.expires)

    def target(self) -> str:
        """The target in words, for messages and REPORT.md."""
        if self.scope == "fleet":
            return "everywhere (scope: fleet)"
        parts = [f"team {self.team}" if self.team else "", f"cluster {self.cluster}" if self.cluster else ""]
        return ", ".join(p for p in parts if p) or "no target"


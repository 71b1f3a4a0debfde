"""Waiver expiry: the one verdict of the pipeline that depends on today's date.

Everything else a run computes depends only on its inputs, so the store may answer it (the whole
run, keyed by every input: ``compiler.pipeline.run``). Which findings a waiver covers is such a
verdict (``compiler.validate.waivers`` marks them inside the stages); whether the waiver still
holds is not. So a waived finding carries its waiver in ``Diagnostic.extra`` and ``expire`` runs
after the store on every run: a waiver past its ``expires`` date is an error at its line
(FLEET017) and the findings it covered count again with their own severity.

Light on purpose: a run answered from the store imports this and nothing of the stages.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import replace
from typing import Iterable

from compiler.diagnostics import Diagnostic, Location, Scope, Severity, UsageError, define

EXPIRED = define(
    "FLEET017", "A waiver is past its `expires` date: the findings it covered count again, and the waiver must be "
    "renewed (a new date, reviewed) or removed.",
    "waivers:\n- {rule: FLEET401, team: vision, owner: '@org/ml-platform', reason: cluster onboarding,\n"
    "   expires: '2099-12-31'}",
    "waivers:\n- {rule: FLEET401, team: vision, owner: '@org/ml-platform', reason: cluster onboarding,\n"
    "   expires: '2020-01-31'}   # today is later", scope=Scope.POLICY)

RULES = (EXPIRED,)

# Diagnostic.extra keys of a waived finding (and of a stale-waiver warning): the waiver itself, so
# expiry needs neither the policy nor the fleet file.
WAIVED = "waived"  # the finding's own severity
MESSAGE = "waived.message"  # the finding's own message
RULE = "waiver.rule"
OWNER = "waiver.owner"
EXPIRES = "waiver.expires"
AT = "waiver.at"  # file, line and col of the waiver, joined by NUL (a file name has no NUL)


def waiver_location(extra: dict[str, str]) -> Location:
    file, line, col = extra[AT].split("\0")
    return Location(file, int(line), int(col))


def waiver_at(location: Location) -> str:
    return f"{location.file}\0{location.line}\0{location.col}"


def today() -> datetime.date:
    """``$GPUPOLICY_TODAY`` (YYYY-MM-DD: tests, or a CI replaying an old commit), else today in UTC."""
    env = os.environ.get("GPUPOLICY_TODAY")
    if not env:
        return datetime.datetime.now(datetime.timezone.utc).date()
    try:
        return datetime.date.fromisoformat(env)
    except ValueError:
        raise UsageError(f"GPUPOLICY_TODAY={env!r} is not a date (YYYY-MM-DD)") from None


def expire(diags: Iterable[Diagnostic], on: datetime.date | None = None) -> list[Diagnostic]:
    """``diags`` as of ``on`` (default ``today()``): findings of an expired waiver restored, and one
    FLEET017 error per expired waiver. A waiver is valid through its ``expires`` day."""
    out = list(diags)
    if not any(d.extra and EXPIRES in dict(d.extra) for d in out):
        return out  # no waiver: the common case costs one scan
    day = on or today()
    expired: dict[str, dict[str, str]] = {}
    for i, d in enumerate(out):
        extra = dict(d.extra)
        if EXPIRES not in extra or datetime.date.fromisoformat(extra[EXPIRES]) >= day:
            continue
        expired.setdefault(extra[AT], extra)
        if WAIVED in extra:
            out[i] = replace(d, severity=Severity(extra[WAIVED]), message=extra[MESSAGE], extra=())
    for extra in expired.values():
        out.append(EXPIRED.diag(
            f"the waiver of {extra[RULE]} owned by {extra[OWNER]} expired on {extra[EXPIRES]} (today is "
            f"{day.isoformat()}): what it covered counts again", waiver_location(extra),
            hint="renew it with a new `expires` date (reviewed like any policy change), fix what it covers, or "
                 "remove the waiver"))
    return out

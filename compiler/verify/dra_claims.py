"""DRA009: what Kueue can count of a ResourceClaimTemplate (``pkg/dra/claims.go``
countDevicesPerClass). A check of lowered objects, so it runs in the verify stage, once per
rendered template (and is cached with its team's unit)."""

from __future__ import annotations

from typing import Any

from compiler.diagnostics import Rule, Scope, define
from compiler.verify.context import ObjectContext

CLAIM_MODE = define(
    "DRA009", "ResourceClaimTemplates Kueue must count use one `exactly` request per device class with "
    "allocationMode ExactCount (Kueue rejects All, firstAvailable and adminAccess).",
    "exactly: {deviceClassName: h100-80gb, allocationMode: ExactCount, count: 4}",
    "exactly: {deviceClassName: h100-80gb, allocationMode: All}", scope=Scope.OUTPUT)


RULES: tuple[Rule, ...] = (CLAIM_MODE,)


def claim_problems(template: dict[str, Any]) -> list[str]:
    """Why Kueue could not count a ResourceClaimTemplate (pkg/dra/claims.go countDevicesPerClass)."""
    spec = template.get("spec") or {}
    requests = ((spec.get("spec") or {}).get("devices") or {}).get("requests") or []
    out = []
    for i, r in enumerate(requests):
        exactly = r.get("exactly")
        if r.get("firstAvailable") is not None or exactly is None:
            out.append(f"request {i} uses firstAvailable; Kueue counts only `exactly` requests")
            continue
        if exactly.get("adminAccess"):
            out.append(f"request {i} sets adminAccess, which Kueue does not support")
        mode = exactly.get("allocationMode", "ExactCount")
        if mode != "ExactCount":
            out.append(f"request {i} uses allocationMode {mode}; Kueue counts only ExactCount")
        elif int(exactly.get("count", 1)) < 1:
            out.append(f"request {i} asks for {exactly.get('count')} devices")
    return out


def check_claim_template(obj: dict[str, Any], ctx: ObjectContext) -> None:
    for problem in claim_problems(obj):
        ctx.report(CLAIM_MODE, "spec.spec.devices.requests", problem,
                   hint="Kueue counts `exactly` requests with allocationMode ExactCount and count >= 1")

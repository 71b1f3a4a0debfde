"""JSON Schema of the policy files, generated from the models (``gpupolicy schema``).

The schema an editor checks and the compiler agree on every field (issue 19; proven value by value
at the boundaries by ``tests/test_schema_parity.py``). Name rules are on the types themselves
(``compiler.model.common``); two gaps of pydantic's generator are closed here:

- a map whose keys have a pattern (``featureGates``, ``nodeLabels``, ``catalog``) comes out as
  ``patternProperties`` alone, which lets any other key through: such maps get
  ``additionalProperties: false``, as the compiler rejects those keys;
- the GPU catalog's models (``compiler.catalog.spec``) check MIG profile names and PCI device ids,
  and a waiver its expiry's calendar day, in validators the generator cannot see: their patterns
  are added to those properties.

What a per-field schema cannot state (a catalog model's productName *or* variants, a MIG profile
that fits its GPU) stays a compiler check; the parity test lists those.
"""

from __future__ import annotations

import json
from typing import Any

from compiler.catalog.model import PROFILE_NAME
from compiler.model.fleet import FleetFile
from compiler.model.team import TeamFile

SCHEMA_FILES = {"fleet.schema.json": (FleetFile, "gpupolicy Fleet"), "team.schema.json": (TeamFile, "gpupolicy Team")}

# An NVIDIA PCI device id as ``compiler.catalog.model.normalize_pci_id`` reads it (case and
# surrounding blanks ignored): 0xDDDD10DE, DDDD, 0xDDDD or 10de:DDDD.
PCI_DEVICE_ID = (r"^\s*((0[xX])?[0-9A-Fa-f]{4}(10[dD][eE])?|(0[xX])?10[dD][eE]:(0[xX])?[0-9A-Fa-f]{4})\s*$")
# A calendar day YYYY-MM-DD (a waiver's ``expires``, read with ``datetime.date.fromisoformat``):
# month lengths, and February 29 in leap years only (every 4th, not centuries but every 400th).
_MONTH_DAY = (r"((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)"
              r"|02-(0[1-9]|1[0-9]|2[0-8]))")
_LEAP_DAY = r"([0-9]{2}(0[48]|[2468][048]|[13579][26])|([02468][048]|[13579][26])00)-02-29"
CALENDAR_DATE = rf"^(?!0000)([0-9]{{4}}-{_MONTH_DAY}|{_LEAP_DAY})$"
# (definition, property) -> what the property's validator checks, as JSON Schema
VALIDATED: dict[tuple[str, str], dict[str, Any]] = {
    ("MigProfileSpec", "name"): {"pattern": PROFILE_NAME.pattern.replace(r"\d", "[0-9]")},
    ("GpuVariantSpec", "pciDeviceId"): {"pattern": PCI_DEVICE_ID},
    ("Waiver", "expires"): {"pattern": CALENDAR_DATE},
}
VALIDATED_ITEMS: dict[tuple[str, str], dict[str, Any]] = {
    ("GpuModelSpec", "pciDeviceIds"): {"pattern": PCI_DEVICE_ID},
}


def _closed_maps(node: Any) -> None:
    """``additionalProperties: false`` beside every ``patternProperties`` that has none."""
    if isinstance(node, dict):
        if "patternProperties" in node and "additionalProperties" not in node:
            node["additionalProperties"] = False
        for v in node.values():
            _closed_maps(v)
    elif isinstance(node, list):
        for v in node:
            _closed_maps(v)


def _validated(schema: dict[str, Any]) -> None:
    defs = schema.get("$defs", {})
    for (name, prop), extra in VALIDATED.items():
        if name in defs:
            defs[name]["properties"][prop].update(extra)
    for (name, prop), extra in VALIDATED_ITEMS.items():
        if name in defs:
            defs[name]["properties"][prop]["items"].update(extra)


def render_schemas() -> dict[str, bytes]:
    out = {}
    for name, (model, title) in SCHEMA_FILES.items():
        schema = model.model_json_schema(by_alias=True, mode="validation")
        _closed_maps(schema)
        _validated(schema)
        schema = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"https://gpupolicy.dev/schemas/{name}",
            **schema,
            "title": title,
        }
        out[name] = (json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()
    return out

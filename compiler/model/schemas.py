"""JSON Schema of the policy files, generated from the models (``gpupolicy schema``)."""

from __future__ import annotations

import json

from compiler.model.fleet import FleetFile
from compiler.model.team import TeamFile

SCHEMA_FILES = {"fleet.schema.json": (FleetFile, "gpupolicy Fleet"), "team.schema.json": (TeamFile, "gpupolicy Team")}


def render_schemas() -> dict[str, bytes]:
    out = {}
    for name, (model, title) in SCHEMA_FILES.items():
        schema = model.model_json_schema(by_alias=True, mode="validation")
        schema = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"https://gpupolicy.dev/schemas/{name}",
            **schema,
            "title": title,
        }
        out[name] = (json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()
    return out

"""Over-limit inputs are diagnostics, never hangs: team and cluster counts."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from helpers import compile_dir, copy_demo

import compiler.validate as validate


def test_too_many_teams(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(validate, "MAX_TEAMS", 3)
    res = compile_dir(copy_demo(tmp_path))
    assert not res.ok
    d = next(d for d in res.diagnostics if d.code == "LOAD006")
    assert "5 team files, over the limit of 3" in d.message


def test_too_many_clusters(tmp_path: Path) -> None:
    root = copy_demo(tmp_path)
    fleet_path = root / "policies" / "fleet.yaml"
    fleet = yaml.safe_load(fleet_path.read_text())
    base = fleet["spec"]["clusters"][1]
    fleet["spec"]["clusters"] += [{**base, "name": f"extra{i}"} for i in range(100)]
    fleet_path.write_text(yaml.safe_dump(fleet, sort_keys=False))
    res = compile_dir(root)
    d = next(d for d in res.diagnostics if d.code == "SCHEMA002")
    assert "clusters" in (d.path or "") and "100" in d.message
    assert d.location is not None and d.location.line > 0

"""Utilisation from Prometheus range-query exports (the JSON ``/api/v1/query_range`` returns, or a
list of such responses), per GPU class and team, with its coverage: samples, hours with data and
GPUs seen. No samples: no number.

Series are DCGM exporter metrics: ``DCGM_FI_DEV_GPU_UTIL`` (percent) or ``DCGM_FI_PROF_GR_ENGINE_ACTIVE``
/ ``DCGM_FI_PROF_SM_ACTIVE`` ratios (scaled to percent); a series without ``__name__`` (an aggregating
query) is taken as utilisation in percent; series of other metrics are counted and ignored. The team comes from the pod label DCGM copies (``gpupolicy_dev_team``, with
pod-label attribution on), else from the ``namespace`` label through the policy; the class from
``modelName`` (the NVML product name) and ``GPU_I_PROFILE`` (MIG) through the GPU catalog.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compiler.catalog import Catalog, builtin_catalog
from compiler.tools.audit.context import PolicyView
from compiler.tools.kube_export import ExportError, ExportMissing

UTILISATION = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE")
TEAM_LABELS = ("gpupolicy_dev_team", "label_gpupolicy_dev_team", "team")
NS_LABELS = ("namespace", "exported_namespace", "pod_namespace")


@dataclass
class Cell:
    samples: int = 0
    total: float = 0.0
    hours: set[int] = field(default_factory=set)
    gpus: set[str] = field(default_factory=set)

    @property
    def mean(self) -> float | None:
        return self.total / self.samples if self.samples else None


@dataclass
class Window:
    source: str
    cells: dict[tuple[str, str], Cell] = field(default_factory=dict)  # (class, team)
    start: float | None = None
    end: float | None = None
    ignored: dict[str, int] = field(default_factory=dict)  # series of other metrics, by name

    @property
    def samples(self) -> int:
        return sum(c.samples for c in self.cells.values())


def _responses(doc: Any, path: Path) -> list[dict[str, Any]]:
    items = doc if isinstance(doc, list) else [doc]
    for i, r in enumerate(items):
        if not isinstance(r, dict) or "data" not in r and r.get("status") != "error":
            raise ExportError(f"{path}: response {i} is not a Prometheus query_range result "
                              "(expected {{\"status\": \"success\", \"data\": {{\"resultType\": \"matrix\", ...}}}})")
        if r.get("status") == "error":
            raise ExportError(f"{path}: response {i} is a Prometheus error: {r.get('error', '?')}")
        if (r.get("data") or {}).get("resultType") not in ("matrix", None):
            raise ExportError(f"{path}: response {i} is a {r['data'].get('resultType')} result; export "
                              "/api/v1/query_range (a matrix)")
    return items


def _class(metric: dict[str, str], catalog: Catalog) -> str:
    if metric.get("gpupolicy_dev_class"):
        return metric["gpupolicy_dev_class"]
    name = metric.get("modelName") or ""
    model = catalog.by_product(name) or catalog.by_product(name.replace(" ", "-"))
    if model is None:
        return f"unknown ({name})" if name else "unknown"
    profile = metric.get("GPU_I_PROFILE")
    return f"{model.id}-mig-{profile.replace('+', '.')}" if profile else model.id


def _team(metric: dict[str, str], view: PolicyView) -> str:
    for k in TEAM_LABELS:
        if metric.get(k):
            return metric[k]
    for k in NS_LABELS:
        ns = metric.get(k)
        if ns:
            return view.ns_team.get(ns) or view.serving_ns.get(ns) or f"namespace {ns}"
    return "unattributed"


def read_window(path: Path, view: PolicyView, catalog: Catalog | None = None) -> Window:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ExportMissing(f"{path}: cannot read ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ExportError(f"{path}: not a JSON Prometheus export ({exc})") from None
    cat = catalog or builtin_catalog()
    w = Window(str(path))
    for i, resp in enumerate(_responses(doc, path)):
        for j, series in enumerate((resp.get("data") or {}).get("result") or []):
            if not isinstance(series, dict) or not isinstance(series.get("values", []), list):
                raise ExportError(f"{path}: response {i} series {j} is not a matrix series")
            metric = {str(k): str(v) for k, v in (series.get("metric") or {}).items()}
            name = metric.get("__name__", "")
            if name and name not in UTILISATION:  # e.g. Kueue metrics in the same export: not utilisation
                w.ignored[name] = w.ignored.get(name, 0) + 1
                continue
            scale = 100.0 if metric.get("__name__", "").startswith("DCGM_FI_PROF_") else 1.0
            gpu = "/".join(metric.get(k, "") for k in ("Hostname", "UUID", "gpu", "GPU_I_ID"))
            cell = w.cells.setdefault((_class(metric, cat), _team(metric, view)), Cell())
            for point in series.get("values") or []:
                try:
                    ts, value = float(point[0]), float(point[1]) * scale
                except (TypeError, ValueError, IndexError):
                    raise ExportError(f"{path}: response {i} series {j}: a sample is not [time, \"value\"]") from None
                if math.isnan(value):
                    continue
                cell.samples += 1
                cell.total += value
                cell.hours.add(int(ts // 3600))
                cell.gpus.add(gpu)
                w.start = ts if w.start is None else min(w.start, ts)
                w.end = ts if w.end is None else max(w.end, ts)
    return w

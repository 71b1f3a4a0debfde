"""A model of how the GPU Operator chart (v26.7.0, ``templates/clusterpolicy.yaml``) turns Helm
values into the ClusterPolicy it creates, for the sections the CRD requires and those gpupolicy
sets. It lets tests (and later the verify stage) check our values against the ClusterPolicy CRD
although the chart, not gpupolicy, renders that object.

Strict by construction: the renderer records every values path the modelled template reads;
``render_cluster_policy`` raises ``ChartValuesError`` for any override the template would not
read (a typo, a key of an operand this model does not cover, or a key the template ignores in
that configuration, such as ``driver.version`` with ``driver.nvidiaDriverCRD.enabled``).
Helm semantics kept: maps merge recursively over the chart defaults, other values replace;
``{{ if }}`` is Go-template truthiness; ``| quote`` makes a string.
"""

from __future__ import annotations

import copy
from typing import Any, Iterator

from compiler.policy.versions import DEFAULT_GPU_OPERATOR

_MISSING = object()
# Values of the chart's subcharts (Chart.yaml dependencies): read by the subchart, not by the
# ClusterPolicy template, so never "unread" here.
SUBCHARTS = frozenset({"node-feature-discovery"})


class ChartValuesError(ValueError):
    pass


def deep_merge(base: Any, override: Any) -> Any:
    """Helm's values coalescing: maps merge key by key, anything else replaces."""
    if isinstance(base, dict) and isinstance(override, dict):
        out = dict(base)
        for k, v in override.items():
            out[k] = deep_merge(base[k], v) if k in base else copy.deepcopy(v)
        return out
    return copy.deepcopy(override)


def _truthy(value: Any) -> bool:
    return value not in (None, False, 0, "") and value != {} and value != []


class _Values:
    """Values with a record of which paths the template consumed."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.read: set[str] = set()

    def _lookup(self, path: str) -> Any:
        cur: Any = self.data
        for k in path.split("."):
            if not isinstance(cur, dict) or k not in cur:
                return _MISSING
            cur = cur[k]
        return cur

    def get(self, path: str, default: Any = None) -> Any:
        self.read.add(path)
        v = self._lookup(path)
        return default if v is _MISSING else v

    def test(self, path: str) -> bool:
        """``{{ if .Values.<path> }}`` without consuming the value."""
        v = self._lookup(path)
        return v is not _MISSING and _truthy(v)


def _if(v: _Values, out: dict[str, Any], key: str, path: str, *, quote: bool = False) -> None:
    value = v.get(path)
    if _truthy(value):
        out[key] = str(value) if quote else value


_COMMON = ("imagePullSecrets", "resources", "env", "args")


def _operand(v: _Values, name: str, *, version_default: str | None = None) -> dict[str, Any]:
    """The shape most operands share: enabled, image fields, pull/resources/env/args, hostNetwork."""
    out: dict[str, Any] = {"enabled": v.get(f"{name}.enabled")}
    _if(v, out, "repository", f"{name}.repository")
    _if(v, out, "image", f"{name}.image")
    if version_default is not None:
        out["version"] = str(v.get(f"{name}.version") or version_default)
    else:
        _if(v, out, "version", f"{name}.version", quote=True)
    _if(v, out, "imagePullPolicy", f"{name}.imagePullPolicy")
    for key in _COMMON:
        _if(v, out, key, f"{name}.{key}")
    return out


def _driver(v: _Values) -> dict[str, Any]:
    d: dict[str, Any] = {"enabled": v.get("driver.enabled"), "useNvidiaDriverCRD": v.get("driver.nvidiaDriverCRD.enabled")}
    if not _truthy(d["useNvidiaDriverCRD"]):
        d["kernelModuleType"] = v.get("driver.kernelModuleType")
        d["usePrecompiled"] = v.get("driver.usePrecompiled")
        _if(v, d, "repository", "driver.repository")
        _if(v, d, "image", "driver.image")
        _if(v, d, "version", "driver.version", quote=True)
        _if(v, d, "imagePullPolicy", "driver.imagePullPolicy")
        for key in ("imagePullSecrets", "startupProbe", "livenessProbe", "readinessProbe"):
            _if(v, d, key, f"driver.{key}")
        d["rdma"] = {"enabled": v.get("driver.rdma.enabled"), "useHostMofed": v.get("driver.rdma.useHostMofed")}
        manager: dict[str, Any] = {}
        for key in ("repository", "image", "version", "imagePullPolicy", "env"):
            _if(v, manager, key, f"driver.manager.{key}", quote=key == "version")
        d["manager"] = manager
        for key in ("repoConfig", "certConfig", "licensingConfig", "virtualTopology", "kernelModuleConfig",
                    "secretEnv", "resources", "env", "args"):
            _if(v, d, key, f"driver.{key}")
    if v.test("driver.upgradePolicy"):
        u = "driver.upgradePolicy"
        d["upgradePolicy"] = {
            "autoUpgrade": v.get(f"{u}.autoUpgrade") or False,
            "maxParallelUpgrades": v.get(f"{u}.maxParallelUpgrades") or 0,
            "maxUnavailable": v.get(f"{u}.maxUnavailable") or "25%",
            "waitForCompletion": {"timeoutSeconds": v.get(f"{u}.waitForCompletion.timeoutSeconds")},
            "podDeletion": {
                "force": v.get(f"{u}.gpuPodDeletion.force") or False,
                "timeoutSeconds": v.get(f"{u}.gpuPodDeletion.timeoutSeconds"),
                "deleteEmptyDir": v.get(f"{u}.gpuPodDeletion.deleteEmptyDir") or False,
            },
            "drain": {
                "enable": v.get(f"{u}.drain.enable") or False,
                "force": v.get(f"{u}.drain.force") or False,
                "timeoutSeconds": v.get(f"{u}.drain.timeoutSeconds"),
                "deleteEmptyDir": v.get(f"{u}.drain.deleteEmptyDir") or False,
            },
        }
        _if(v, d["upgradePolicy"]["waitForCompletion"], "podSelector", f"{u}.waitForCompletion.podSelector")
        _if(v, d["upgradePolicy"]["drain"], "podSelector", f"{u}.drain.podSelector")
    _if(v, d, "hostNetwork", "driver.hostNetwork")
    return d


def _spec(v: _Values, app_version: str) -> dict[str, Any]:
    operator: dict[str, Any] = {}
    for key in ("runtimeClass", "defaultGPUMode", "use_ocp_driver_toolkit"):
        _if(v, operator, key, f"operator.{key}")
    daemonsets: dict[str, Any] = {"labels": dict(v.get("daemonsets.labels") or {})}
    for key in ("annotations", "tolerations", "priorityClassName", "updateStrategy"):
        _if(v, daemonsets, key, f"daemonsets.{key}")
    if v.test("daemonsets.rollingUpdate"):
        daemonsets["rollingUpdate"] = {"maxUnavailable": str(v.get("daemonsets.rollingUpdate.maxUnavailable"))}
    mig: dict[str, Any] = {}
    _if(v, mig, "strategy", "mig.strategy")

    toolkit = _operand(v, "toolkit")
    _if(v, toolkit, "installDir", "toolkit.installDir")
    device_plugin = _operand(v, "devicePlugin")
    if v.test("devicePlugin.config.name"):
        device_plugin["config"] = {"name": str(v.get("devicePlugin.config.name")),
                                   "default": str(v.get("devicePlugin.config.default") or "")}
    exporter = _operand(v, "dcgmExporter")
    _if(v, exporter, "annotations", "dcgmExporter.annotations")
    if v.test("dcgmExporter.config.name"):
        exporter["config"] = {"name": v.get("dcgmExporter.config.name")}
    for key in ("serviceMonitor", "service", "hostPID", "hpcJobMapping", "enablePodLabels", "enablePodUID",
                "podLabelAllowlistRegex"):
        _if(v, exporter, key, f"dcgmExporter.{key}")
    mig_manager = _operand(v, "migManager")
    if v.test("migManager.config"):
        cfg: dict[str, Any] = {}
        _if(v, cfg, "name", "migManager.config.name")
        cfg["default"] = str(v.get("migManager.config.default") or "")
        mig_manager["config"] = cfg
    _if(v, mig_manager, "gpuClientsConfig", "migManager.gpuClientsConfig")
    spec = {
        "operator": operator,
        "daemonsets": daemonsets,
        "mig": mig,
        "driver": _driver(v),
        "toolkit": toolkit,
        "devicePlugin": device_plugin,
        "dcgm": _operand(v, "dcgm"),
        "dcgmExporter": exporter,
        "gfd": _operand(v, "gfd"),
        "migManager": mig_manager,
        "nodeStatusExporter": _operand(v, "nodeStatusExporter", version_default=app_version),
    }
    for section in ("toolkit", "devicePlugin", "dcgm", "dcgmExporter", "gfd", "migManager", "nodeStatusExporter"):
        _if(v, spec[section], "hostNetwork", f"{section}.hostNetwork")
    return spec


def _leaves(data: Any, prefix: str = "") -> Iterator[str]:
    if isinstance(data, dict) and data:
        for k, val in data.items():
            yield from _leaves(val, f"{prefix}.{k}" if prefix else str(k))
    elif prefix:
        yield prefix


def _consumed(path: str, read: set[str]) -> bool:
    parts = path.split(".")
    return any(".".join(parts[:i]) in read for i in range(1, len(parts) + 1))


def render_cluster_policy(
    defaults: dict[str, Any], overrides: dict[str, Any], *, app_version: str = DEFAULT_GPU_OPERATOR
) -> dict[str, Any] | None:
    """The ClusterPolicy the chart creates from ``defaults`` (its values.yaml) and ``overrides``
    (None when ``clusterPolicy.deployCR`` is false). Raises ``ChartValuesError`` for overrides
    the template would not read."""
    v = _Values(deep_merge(defaults, overrides))
    deploy = v.get("clusterPolicy.deployCR")
    spec = _spec(v, app_version)
    unread = [p for p in _leaves(overrides) if not _consumed(p, v.read) and p.split(".")[0] not in SUBCHARTS]
    if unread:
        raise ChartValuesError("values the ClusterPolicy template does not read: " + ", ".join(sorted(unread)))
    if not _truthy(deploy):
        return None
    return {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy"},
        "spec": spec,
    }

"""Measure the CEL engines the compiler could use, and the verify stage built on the chosen one.

    .venv/bin/python bench/cel_engines.py [--crds DIR] [--queues 20000] [--quick]

Engines compared (each only if importable):
  cel-python            pure Python (celpy, lark parser)
  common-expression-language  Rust (cel-rust via PyO3), ``import cel``
  cel-expr-python       C++ (Google's cel-cpp), ``from cel_expr_python import cel``
  compiler.cel          cel-expr-python + the Kubernetes library in Python (what verify uses)

Figures: compile time per expression, evaluation time per call (variables passed as plain
Python data each call, as verify does), which Kubernetes CEL features work natively, how many of
the upstream CRDs' rules compile; then JSON Schema backends and verify throughput.
"""

from __future__ import annotations

import argparse
import copy
import functools
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from compiler.cel import compile_expr, references_old_self  # noqa: E402
from compiler.cel.quantity import parse_quantity  # noqa: E402

KUEUE_RULE = "self.flavors.all(x, size(x.resources) == size(self.coveredResources))"
DRA_PRODUCT = ('device.driver == "gpu.nvidia.com" && '
               'device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3"')
DRA_MEMORY = 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0'
SELF = {"coveredResources": ["nvidia.com/gpu", "cpu", "memory"],
        "flavors": [{"name": f, "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8},
                                              {"name": "cpu", "nominalQuota": "64"},
                                              {"name": "memory", "nominalQuota": "512Gi"}]}
                    for f in ("h100", "a100")]}
DEVICE_PLAIN = {"driver": "gpu.nvidia.com",
                "attributes": {"gpu.nvidia.com": {"productName": "NVIDIA H100 80GB HBM3", "type": "gpu"}},
                "capacity": {"gpu.nvidia.com": {"memory": "80Gi"}}}
PROBES = {
    "strings (lowerAscii, split, indexOf)": '"A,B".lowerAscii().split(",").size() == 2 && "abc".indexOf("c") == 2',
    "strings.format": '"%d-%s".format([1, "x"]) == "1-x"',
    "lists (indexOf, isSorted, sum, min, max)": "[3, 1].indexOf(1) == 1 && ![3, 1].isSorted() && [1, 2].sum() == 3 && [1, 2].max() == 2",
    "regex find/findAll": '"a/b".find("^[^/]+") == "a" && "a1b2".findAll("[0-9]").size() == 2',
    "matches": '"abc".matches("^a")',
    "cel.bind": "cel.bind(x, 2, x * x) == 4",
    "optional syntax .?": '{"a": 1}.?b.orValue(2) == 2',
    "quantity library": 'quantity("1Gi").isGreaterThan(quantity("1G"))',
    "url library": 'url("https://a.io:8443/x").getHostname() == "a.io"',
    "math.greatest": "math.greatest(1, 2) == 2",
    "duration()/int() conversions": 'duration("1s") > duration("0s") && int("3") == 3',
}


def per_call_us(fn: Callable[[], Any], budget_s: float = 0.25, min_n: int = 20) -> float:
    """Median of 5 batches, in microseconds per call."""
    fn()
    n, start = 0, time.perf_counter()
    while n < min_n or time.perf_counter() - start < budget_s / 5:
        fn()
        n += 1
    samples = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter() - t) / n * 1e6)
    return statistics.median(samples)


# --- engine adapters: compile(expr) -> program; run(program, variables) -> value ----------------

def _q(text: str) -> str:
    return str(parse_quantity(text).value)


def engine_celpy() -> tuple[str, Callable[[str], Any], Callable[[Any, dict[str, Any]], Any]]:
    import celpy
    import celpy.adapter
    import celpy.celtypes as ct

    env = celpy.Environment()
    funcs: dict[str, Any] = {"quantity": lambda s: ct.MapType({ct.StringType("q"): ct.StringType(_q(str(s)))}),
                             "compareTo": lambda a, b: ct.IntType(_cmp(a, b))}

    def _cmp(a: Any, b: Any) -> int:
        x, y = (parse_quantity(str(v)).value if "q" not in v else parse_quantity(str(v["q"])).value for v in (a, b))
        return (x > y) - (x < y)

    def compile_(expr: str) -> Any:
        return env.program(env.compile(expr), functions=funcs)

    def run(prog: Any, variables: dict[str, Any]) -> Any:
        return prog.evaluate({k: celpy.adapter.json_to_cel(v) for k, v in variables.items()})

    return "cel-python 0.5 (pure Python)", compile_, run


def engine_rust() -> tuple[str, Callable[[str], Any], Callable[[Any, dict[str, Any]], Any]]:
    import cel

    def cmp_(a: Any, b: Any) -> int:
        x, y = (parse_quantity(v).value if isinstance(v, str) else parse_quantity(v["q"]).value for v in (a, b))
        return (x > y) - (x < y)

    funcs: dict[str, Any] = {"quantity": lambda s: {"q": s}, "compareTo": cmp_}

    def run(prog: Any, variables: dict[str, Any]) -> Any:
        return prog.execute(cel.Context(variables, funcs))

    return "common-expression-language 0.10 (Rust)", cel.compile, run


def engine_cpp() -> tuple[str, Callable[[str], Any], Callable[[Any, dict[str, Any]], Any]]:
    from cel_expr_python import cel
    from cel_expr_python.ext import ext_bindings, ext_math, ext_optional, ext_strings

    t = cel.Type

    def cmp_(a: Any, b: Any) -> int:
        x, y = (parse_quantity(v).value if isinstance(v, str) else parse_quantity(v["q"]).value for v in (a, b))
        return (x > y) - (x < y)

    funcs = [cel.FunctionDecl("quantity", [cel.Overload("q_s", t.MAP, [t.STRING], False, lambda s: {"q": s})]),
             cel.FunctionDecl("compareTo", [cel.Overload("c_sm", t.INT, [t.STRING, t.MAP], True, cmp_),
                                            cel.Overload("c_mm", t.INT, [t.MAP, t.MAP], True, cmp_)])]
    env = cel.NewEnv(variables={"self": t.DYN, "device": t.DYN},
                     extensions=[ext_bindings.ExtBindings(), ext_optional.ExtOptional(), ext_strings.ExtStrings(),
                                 ext_math.ExtMath()],
                     functions=funcs)

    def run(prog: Any, variables: dict[str, Any]) -> Any:
        return prog.eval(data=variables).value()

    return "cel-expr-python 0.1 (C++ cel-cpp)", env.compile, run


def engine_ours() -> tuple[str, Callable[[str], Any], Callable[[Any, dict[str, Any]], Any]]:
    def run(prog: Any, variables: dict[str, Any]) -> Any:
        return prog.evaluate(variables)

    return "compiler.cel (cel-expr-python + K8s library)", compile_expr.__wrapped__, run


def adapt(factory: Callable[..., Any], variables: dict[str, Any]) -> dict[str, Any]:
    """compiler.cel takes devices as ``device_activation`` builds them (capacities as Quantities);
    that conversion happens once per device, so it is done before timing."""
    if factory is not engine_ours or "device" not in variables:
        return variables
    from compiler.cel.activation import device_activation

    d = variables["device"]
    return device_activation(d["driver"], {f"{k}/{n}": v for k, a in d["attributes"].items() for n, v in a.items()},
                             {f"{k}/{n}": v for k, a in d["capacity"].items() for n, v in a.items()})


def crd_rules(crds: Path) -> list[str]:
    import yaml

    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            found.extend(str(r.get("rule")) for r in node.get("x-kubernetes-validations") or [])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for path in sorted(crds.rglob("*.yaml")):
        try:
            docs = list(yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader))
        except Exception:
            continue
        for doc in docs:
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                walk(doc)
    return found


def bench_engines(crds: Path | None) -> None:
    rules = [r for r in crd_rules(crds) if not references_old_self(r)] if crds else []
    print("## CEL engines (µs per call; variables converted from plain Python data on every call)\n")
    print(f"{'engine':48} {'compile':>9} {'kueue rule':>11} {'DRA product':>12} {'DRA memory':>11}")
    coverage: dict[str, dict[str, bool]] = {}
    for factory in (engine_celpy, engine_rust, engine_cpp, engine_ours):
        try:
            name, compile_, run = factory()
        except ImportError as exc:
            print(f"{factory.__name__:48} not installed ({exc.name})")
            continue
        row = [per_call_us(lambda: compile_(KUEUE_RULE), 0.3, 5)]
        for expr, var in ((KUEUE_RULE, {"self": SELF}), (DRA_PRODUCT, {"device": DEVICE_PLAIN}),
                          (DRA_MEMORY, {"device": DEVICE_PLAIN})):
            prog = compile_(expr)
            variables = adapt(factory, var)
            assert run(prog, dict(variables)) == True, (name, expr)  # noqa: E712 (celpy BoolType)
            row.append(per_call_us(functools.partial(lambda p, v: run(p, dict(v)), prog, variables)))
        print(f"{name:48} " + " ".join(f"{x:>{w}.1f}" for x, w in zip(row, (9, 11, 12, 11))))
        native = factory is not engine_ours
        coverage[name] = {}
        for label, expr in PROBES.items():
            try:
                prog = compile_(expr) if not native else _native_compile(factory, expr)
                coverage[name][label] = bool(run(prog, {}) == True)  # noqa: E712
            except Exception:
                coverage[name][label] = False
        if rules:
            ok = sum(1 for r in rules if _compiles(compile_ if not native else (lambda e: _native_compile(factory, e)), r))
            coverage[name]["CRD rules that compile"] = f"{ok}/{len(rules)}"  # type: ignore[assignment]
    print("\n## Kubernetes CEL features, natively (compiler.cel: with its Python library)\n")
    names = list(coverage)
    for label in [*PROBES, "CRD rules that compile"]:
        cells = [str(coverage[n].get(label, "-")).replace("True", "yes").replace("False", "no") for n in names]
        print(f"{label:42} " + " ".join(f"{c:>12}" for c in cells))
    print("columns: " + " | ".join(names))
    print("(engines without a type checker only parse at compile time: an unknown function such as\n"
          " find() fails at evaluation instead, so their 'CRD rules that compile' counts parsing only)")


def _native_compile(factory: Callable[[], Any], expr: str) -> Any:
    return factory()[1](expr)


def _compiles(compile_: Callable[[str], Any], expr: str) -> bool:
    try:
        compile_(expr)
        return True
    except Exception:
        return False


def bench_schema_backends(crds: Path) -> None:
    from compiler.verify import CrdRegistry
    from compiler.verify.jsonschema_backend import compile_validator
    from compiler.verify.structural import to_json_schema

    entry = CrdRegistry.load(crds).get("kueue.x-k8s.io", "ClusterQueue")
    if entry is None:
        return
    schema = to_json_schema(entry.schema("v1beta2") or {}, root=True)
    obj = synthetic_queue(0)
    print("\n## JSON Schema backends (one v1beta2 ClusterQueue, µs per object)\n")
    for label, python in (("jsonschema-rs", False), ("jsonschema (pure Python)", True)):
        try:
            v = compile_validator(schema, draft=4, python=python)
        except ImportError:
            continue
        print(f"{label:28} {per_call_us(lambda: v.errors(obj)):8.1f}")


def synthetic_queue(i: int) -> dict[str, Any]:
    flavors = [{"name": f"h100-pool{j}", "resources": [
        {"name": "nvidia.com/gpu", "nominalQuota": 8, "borrowingLimit": 4, "lendingLimit": 2},
        {"name": "cpu", "nominalQuota": "64"}, {"name": "memory", "nominalQuota": "512Gi"}]} for j in range(2)]
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
            "metadata": {"name": f"team-{i}", "labels": {"gpupolicy.dev/team": f"team-{i}"}},
            "spec": {"cohortName": f"dept-{i % 50}", "namespaceSelector": {"matchLabels": {"gpupolicy.dev/team": f"team-{i}"}},
                     "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
                     "fairSharing": {"weight": "1"},
                     "resourceGroups": [{"coveredResources": ["nvidia.com/gpu", "cpu", "memory"], "flavors": flavors}]}}


def bench_verify(crds: Path, queues: int) -> None:
    from compiler.model.manifest import Manifest
    from compiler.verify import CrdRegistry, verify

    t0 = time.perf_counter()
    registry = CrdRegistry.load(crds)
    load_s = time.perf_counter() - t0
    manifests = [Manifest("onprem", "kueue", synthetic_queue(i)) for i in range(queues)]
    t0 = time.perf_counter()
    warm = verify(manifests[:1], kube_versions={"onprem": "1.34"}, crds=registry)
    first_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    result = verify(manifests, kube_versions={"onprem": "1.34"}, crds=registry)
    run_s = time.perf_counter() - t0
    assert not result.diagnostics and not warm.diagnostics, result.diagnostics[:3]
    print(f"\n## verify throughput ({Path(crds)})\n")
    print(f"CRD index load: {load_s * 1e3:.0f} ms; first object (parse + compile CQ CRD, load 1.34 schemas): {first_s * 1e3:.0f} ms")
    print(f"{queues} ClusterQueues: {run_s:.2f} s ({run_s / queues * 1e6:.0f} µs each), "
          f"CEL rules evaluated: {result.stats.cel_rules_evaluated}")
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "vllm", "namespace": "serve"},
                  "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "vllm"}},
                           "template": {"metadata": {"labels": {"app": "vllm"}}, "spec": {"containers": [
                               {"name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
                                "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}}
    mixed = [Manifest("onprem", "serving", copy.deepcopy(deployment)) for _ in range(2000)]
    t0 = time.perf_counter()
    verify(mixed, kube_versions={"onprem": "1.34"}, crds=registry)
    dt = time.perf_counter() - t0
    print(f"2000 Deployments (built-in schema): {dt:.2f} s ({dt / 2000 * 1e6:.0f} µs each)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default = os.environ.get("GPUPOLICY_CRDS") or str(Path(__file__).resolve().parent.parent.parent / "shared" / "crds")
    parser.add_argument("--crds", default=default)
    parser.add_argument("--queues", type=int, default=20000)
    parser.add_argument("--quick", action="store_true", help="skip the engine comparison")
    args = parser.parse_args()
    crds = Path(args.crds) if Path(args.crds).is_dir() else None
    if not args.quick:
        bench_engines(crds)
    if crds is None:
        print(f"\n(no CRD directory at {args.crds}: schema and verify figures skipped)")
        return
    bench_schema_backends(crds)
    bench_verify(crds, args.queues)


if __name__ == "__main__":
    main()

"""The CEL engine: compile/evaluate API, errors, and every Kubernetes extension function."""

from __future__ import annotations

from typing import Any

import pytest

from compiler.cel import (
    CelError,
    Program,
    admission_activation,
    compile_expr,
    compose_variables,
    device_activation,
    device_from_slice,
    evaluate,
    prepare,
    references_old_self,
)
from compiler.cel.library import FUNCTION_NAMES, SPECS, expanded_specs


def ev(expr: str, **variables: Any) -> Any:
    return compile_expr(expr).evaluate(variables)


# --- API ---------------------------------------------------------------------------------------


def test_compile_is_cached_by_text() -> None:
    assert compile_expr("1 + 1") is compile_expr("1 + 1")
    assert isinstance(compile_expr("1 + 1"), Program)
    assert compile_expr("1 + 1").source == "1 + 1"


@pytest.mark.parametrize(
    ("expr", "fragment"),
    [("1 +", "Syntax error"), ("nosuchfn(1)", "undeclared reference to 'nosuchfn'"),
     ("undeclaredVar == 1", "undeclared reference"), ("1 == 'a'", "no matching overload")],
)
def test_compile_errors_are_clear(expr: str, fragment: str) -> None:
    with pytest.raises(CelError) as info:
        compile_expr(expr)
    assert fragment in str(info.value)
    assert "cannot compile CEL expression" in str(info.value)
    assert info.value.expression == expr
    assert "<input>:1:" in str(info.value)  # the position is kept


@pytest.mark.parametrize(
    ("expr", "variables", "fragment"),
    [("self.missing", {"self": {}}, "missing"), ("1 / self", {"self": 0}, "divide by zero"),
     ("self[3]", {"self": [1]}, "ndex"), ('quantity(self)', {"self": "1KiB"}, "quantit"),
     ("self == oldSelf", {"self": 1}, "oldSelf"), ("optional.of(1)", {}, "optional")],
)
def test_runtime_errors_raise_cel_error(expr: str, variables: dict[str, Any], fragment: str) -> None:
    with pytest.raises(CelError) as info:
        compile_expr(expr).evaluate(variables)
    assert fragment in str(info.value)
    assert not str(info.value).startswith(("UNKNOWN:", "INVALID_ARGUMENT:"))


def test_values_round_trip_as_plain_python() -> None:
    obj = {"a": [1, 2.5, "x", True, None, {"b": {}}]}
    assert ev("self", self=obj) == obj
    assert ev("self.a.map(x, type(x) == int)", self=obj) == [True, False, False, False, False, False]
    assert ev("{'k': [1]}") == {"k": [1]}


def test_unsupported_python_values_are_errors() -> None:
    with pytest.raises(CelError):
        ev("self", self=(1, 2))


def test_prepared_activation_is_reusable() -> None:
    act = prepare({"self": {"n": 3}})
    assert compile_expr("self.n > 2").evaluate(act) is True
    assert compile_expr("self.n * 2").evaluate(act) == 6
    assert evaluate("self.n", act) == 3


def test_references_old_self_ignores_string_literals() -> None:
    assert references_old_self("self == oldSelf")
    assert references_old_self("has(oldSelf.x)")
    assert not references_old_self("self.name != 'oldSelf'")
    assert not references_old_self('self.oldSelfish == "x"')


def test_library_table_is_consistent() -> None:
    ids = {(name, member, params) for name, member, params, _, _ in expanded_specs()}
    assert len(ids) == len(expanded_specs())  # no duplicate overloads
    assert {"quantity", "isQuantity", "find", "findAll", "indexOf", "format", "url"} <= FUNCTION_NAMES
    assert all(callable(spec[4]) for spec in SPECS)


# --- extension functions --------------------------------------------------------------------------

CASES: list[tuple[str, Any]] = [
    # quantity (k8s.io/apiserver/pkg/cel/library/quantity.go documented examples)
    ('quantity("1.5G") == quantity("1500M")', True),
    ('isQuantity("1.3Gi")', True), ('isQuantity("200K")', False), ('isQuantity("1,3G")', False),
    ('quantity("50000000G").isInteger()', True), ('quantity("9999999999999999999999999999999999999G").isInteger()', False),
    ('quantity("50k").asInteger() == 50000', True), ('quantity("50k").sub(20000).asApproximateFloat() == 30000.0', True),
    ('quantity("50k").add(quantity("20k")) == quantity("70k")', True), ('quantity("50k").add(20) == quantity("50020")', True),
    ('quantity("50k").sub(quantity("20k")) == quantity("30k")', True),
    ('quantity("50k").add(20).sub(quantity("100k")).sub(-50000) == quantity("20")', True),
    ('quantity("200M").compareTo(quantity("0.2G"))', 0), ('quantity("50M").compareTo(quantity("50Mi"))', -1),
    ('quantity("50Mi").compareTo(quantity("50M"))', 1), ('quantity("150Mi").isGreaterThan(quantity("100Mi"))', True),
    ('quantity("50Mi").isGreaterThan(quantity("100Mi"))', False), ('quantity("50M").isLessThan(quantity("100M"))', True),
    ('quantity("-1").sign()', -1), ('sign(quantity("0"))', 0), ('quantity("2Gi").mul(2) == quantity("4Gi")', True),
    ('quantity("1Gi") == quantity("1024Mi")', True), ('quantity("1Gi") != quantity("1G")', True),
    ('[quantity("2"), quantity("500m")].min() == quantity("0.5")', True),
    # semver
    ('semver("1.2.3").isLessThan(semver("1.10.0"))', True), ('semver("1.0.0-alpha").compareTo(semver("1.0.0"))', -1),
    ('semver("1.0.0-alpha.1").isLessThan(semver("1.0.0-alpha.beta"))', True),
    ('semver("v1.2", true).major() == 1 && semver("v1.2", true).patch() == 0', True),
    ('isSemver("1.2")', False), ('isSemver("1.2", true)', True), ('semver("1.2.3+build") == semver("1.2.3")', True),
    # strings (cel-go ext.Strings)
    ('"hello".charAt(1)', "e"), ('"hello".charAt(5)', ""), ('"hello mellow".indexOf("ello")', 1),
    ('"hello mellow".indexOf("ello", 2)', 7), ('"hello mellow".indexOf("")', 0),
    ('"hello mellow".lastIndexOf("ello")', 7), ('"hello mellow".lastIndexOf("ello", 6)', 1),
    ('"hello".lastIndexOf("")', 5), ('"TacoCat".lowerAscii()', "tacocat"), ('"TacoCÆt".upperAscii()', "TACOCÆT"),
    ('"hello hello".replace("he", "we")', "wello wello"), ('"hello hello".replace("he", "we", 1)', "wello hello"),
    ('"hello hello".replace("he", "we", 0)', "hello hello"),
    ('"a,b,c".split(",")', ["a", "b", "c"]), ('"a,b,c".split(",", 2)', ["a", "b,c"]), ('"a,b,c".split(",", 0)', []),
    ('"abc".split("")', ["a", "b", "c"]), ('"tacocat".substring(4)', "cat"), ('"tacocat".substring(0, 4)', "taco"),
    ('"  \\ttrim\\n ".trim()', "trim"), ('["a", "b"].join()', "ab"), ('["a", "b"].join("-")', "a-b"),
    ('"abc".reverse()', "cba"), ('strings.quote("a\\"b")', '"a\\"b"'),
    ('"%s, %s!".format(["Hello", "world"])', "Hello, world!"), ('"%d items".format([3])', "3 items"),
    ('"%.2f".format([3.14159])', "3.14"), ('"%e".format([1234.5])', "1.234500e+03"), ('"%x %X".format([255, 255])', "ff FF"),
    ('"%b %o".format([5, 8])', "101 10"), ('"%s".format([[1, "a"]])', '[1, "a"]'), ('"100%%".format([])', "100%"),
    ('"%s %s %s".format([true, null, 2.5])', "true null 2.5"), ('"%x".format(["hi"])', "6869"),
    # lists (k8s lists library + cel-go ext.Lists)
    ("[1, 2, 3].isSorted()", True), ("[1, 3, 2].isSorted()", False), ('["a", "b"].isSorted()', True), ("[].isSorted()", True),
    ("[1, 2, 3].sum()", 6), ("[1.5, 2.5].sum()", 4.0), ("[].sum()", 0), ('[duration("1s")].sum()', None),
    ("[3, 1, 2].min()", 1), ("[3, 1, 2].max()", 3), ('["b", "a"].min()', "a"),
    ("[1, 2, 3, 2].indexOf(2)", 1), ("[1, 2, 3, 2].lastIndexOf(2)", 3), ('["a"].indexOf("b")', -1),
    ("[true, 1].indexOf(1)", 1), ("[[1], [2]].indexOf([2])", 1), ('[{"a": 1}].indexOf({"a": 1})', 0),
    ("[1, 2, 1].distinct()", [1, 2]), ("[1, [2, [3]]].flatten()", [1, 2, [3]]), ("[1, [2, [3]]].flatten(2)", [1, 2, 3]),
    ("[1, 2, 3, 4].slice(1, 3)", [2, 3]), ("[3, 1, 2].sort()", [1, 2, 3]), ("[1, 2].reverse()", [2, 1]),
    ("lists.range(3)", [0, 1, 2]),
    ("sets.contains([1, 2, 3], [3, 1])", True), ("sets.contains([1], [1.0])", True), ("sets.contains([1], [true])", False),
    ("sets.equivalent([1, 2], [2, 1, 1])", True), ("sets.intersects([1, 2], [3, 2])", True), ("sets.intersects([1], [2])", False),
    # regex
    ('"abc 123".find("[0-9]+")', "123"), ('"abc".find("[0-9]+")', ""), ('"123 abc 456".findAll("[0-9]+")', ["123", "456"]),
    ('"123 abc 456".findAll("[0-9]+", 1)', ["123"]), ('"a".findAll("a", 0)', []), ('"abc".matches("^a.c$")', True),
    ('"karpenter.sh/nodepool".find("^([^/]+)").endsWith("karpenter.sh")', True),
    # URLs
    ('isURL("https://example.com:80/path?query=val#fragment")', True), ('isURL("relative/path")', False),
    ('isURL("/absolute-path")', True), ('url("https://example.com:80/").getScheme()', "https"),
    ('url("https://example.com:80/").getHost()', "example.com:80"), ('url("https://example.com:80/").getHostname()', "example.com"),
    ('url("https://[::1]:80/").getHostname()', "::1"), ('url("https://example.com:80/").getPort()', "80"),
    ('url("https://example.com/").getPort()', ""), ('url("https://example.com/path with spaces/").getEscapedPath()', None),
    ('url("https://example.com/a/b").getEscapedPath()', "/a/b"),
    ('url("https://example.com/?k=a&k=b&j=c").getQuery()', {"k": ["a", "b"], "j": ["c"]}),
    # natively provided by the engine
    ("cel.bind(x, 3, x * x)", 9), ('{"a": 1}.?b.orValue(7)', 7), ('{"a": 1}.?a.orValue(7)', 1),
    ("math.greatest(1, 5, 3)", 5), ("math.least([4, 2])", 2), ('base64.encode(b"hi")', "aGk="),
    ('duration("90s") > duration("1m")', True), ('int("12") + 1', 13), ('"abc".startsWith("a")', True),
    ("[1, 2, 3].exists_one(i, i == 2)", True), ('["a", "b"].all(k, k.size() == 1)', True),
]


@pytest.mark.parametrize(("expr", "expected"), CASES)
def test_extension_function(expr: str, expected: Any) -> None:
    if expected is None:  # an error is the expected outcome
        with pytest.raises(CelError):
            ev(expr)
        return
    result = ev(expr)
    assert result == expected and type(result) is type(expected)


@pytest.mark.parametrize(
    "expr",
    ['"abc".charAt(4)', '"abc".charAt(-1)', '"abc".indexOf("a", 9)', '"abc".substring(2, 1)', '"abc".substring(0, 9)',
     "[].min()", "[].max()", '["a", 1].sum()', '[{"a": 1}, {"b": 2}].isSorted()', '"%d".format(["x"])',
     '"%s %s".format(["x"])', '"%q".format([1])', '[1, [1]].sort()', '"a".find("(")', '[1].slice(0, 5)',
     'url("relative")', 'quantity("1").compareTo(semver("1.0.0"))', 'quantity("1.5").asInteger()',
     '["a", 1].join()', 'semver("01.2.3")', "[1].flatten(-1)"],
)
def test_extension_function_errors(expr: str) -> None:
    with pytest.raises(CelError):
        ev(expr)


# --- DeviceClass selectors ---------------------------------------------------------------------------

H100 = device_activation(
    "gpu.nvidia.com",
    {"productName": "NVIDIA H100 80GB HBM3", "type": "gpu", "architecture": "Hopper",
     "driverVersion": {"version": "550.54.15"}, "index": {"int": 0}, "resource.kubernetes.io/pcieRoot": "pci0000:00"},
    {"memory": "80Gi", "multiprocessors": {"value": "132"}},
    expressions=['device.attributes["other.example.com"].x'],
)


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ('device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3"', True),
        ('device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0', True),
        ('device.capacity["gpu.nvidia.com"].memory.isGreaterThan(quantity("80Gi"))', False),
        ('device.capacity["gpu.nvidia.com"].memory == quantity("80Gi")', True),
        ("device.attributes['gpu.nvidia.com'].productName.lowerAscii().matches('^.*h100.*$')", True),
        ("device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('550.0.0'))", True),
        ("device.attributes['gpu.nvidia.com'].index == 0", True),
        ("device.attributes['resource.kubernetes.io'].pcieRoot == 'pci0000:00'", True),
        ("device.capacity['gpu.nvidia.com'].multiprocessors.asInteger() > 100", True),
        ('has(device.attributes["other.example.com"].x)', False),  # unknown domain: empty map
        ("cel.bind(a, device.attributes['gpu.nvidia.com'], a.type == 'gpu' && a.architecture == 'Hopper')", True),
        ("device.allowMultipleAllocations", False),
    ],
)
def test_device_selectors(expr: str, expected: bool) -> None:
    assert compile_expr(expr).evaluate(H100) is expected


def test_device_from_resource_slice_entry() -> None:
    entry = {"name": "gpu-0", "attributes": {"type": {"string": "mig"}, "profile": {"string": "1g.10gb"}},
             "capacity": {"memory": {"value": "9856Mi"}}, "allowMultipleAllocations": True}
    act = device_from_slice("gpu.nvidia.com", entry)
    assert compile_expr("device.attributes['gpu.nvidia.com'].profile == '1g.10gb' && device.allowMultipleAllocations").evaluate(act)
    assert compile_expr("device.capacity['gpu.nvidia.com'].memory.isLessThan(quantity('10Gi'))").evaluate(act)


def test_device_activation_rejects_bad_capacity() -> None:
    with pytest.raises(CelError):
        device_activation("gpu.nvidia.com", {}, {"memory": "lots"})
    with pytest.raises(CelError):
        device_activation("gpu.nvidia.com", {"x": [1]}, {})


# --- ValidatingAdmissionPolicy expressions --------------------------------------------------------


def test_admission_policy_expressions() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "train", "namespace": "team-a", "labels": {"gpupolicy.dev/team": "team-a"}},
           "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}
    ns = {"metadata": {"name": "team-a", "labels": {"gpupolicy.dev/purpose": "training"}}}
    act = admission_activation(pod, namespace_object=ns)
    assert act["oldObject"] is None and act["request"]["operation"] == "CREATE" and act["request"]["kind"]["kind"] == "Pod"
    variables = compose_variables(
        [{"name": "gpus", "expression": "object.spec.containers.filter(c, has(c.resources.limits) && "
                                        "'nvidia.com/gpu' in c.resources.limits)"},
         {"name": "wantsGpu", "expression": "size(variables.gpus) > 0"}],
        act,
    )
    assert variables["wantsGpu"] is True
    act = admission_activation(pod, namespace_object=ns, variables=variables)
    rule = ("!variables.wantsGpu || ['gpupolicy.dev/team', 'gpupolicy.dev/model']"
            ".all(k, k in object.metadata.?labels.orValue({}))")
    assert compile_expr(rule).evaluate(act) is False
    assert compile_expr("namespaceObject.metadata.labels['gpupolicy.dev/purpose'] == 'training'").evaluate(act) is True
    assert compile_expr("request.namespace == object.metadata.namespace && params == null").evaluate(act) is True
    with pytest.raises(CelError, match="variable 'bad'"):
        compose_variables([{"name": "bad", "expression": "object.nope"}], act)

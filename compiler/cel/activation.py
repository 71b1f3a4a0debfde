"""Build the variables that DeviceClass selectors and admission policies see.

``device_activation`` mirrors what the DRA scheduler binds for ``spec.selectors[].cel``:

    device.driver                          string
    device.attributes[<domain>].<name>     int | bool | string | semver
    device.capacity[<domain>].<name>       Quantity
    device.allowMultipleAllocations        bool

Attribute and capacity names without a domain belong to the driver's domain, as in a
ResourceSlice. A domain the expression asks for but the device lacks reads as an empty map
(upstream behaviour), so pass the expressions you will evaluate to ``expressions=``.

``admission_activation`` gives a ValidatingAdmissionPolicy's ``object``, ``oldObject``,
``request``, ``params``, ``namespaceObject`` and ``variables``; ``compose_variables`` evaluates
``spec.variables`` in order (eagerly: upstream is lazy, so an unused failing variable is an error
here and not there).
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Sequence

from compiler.cel.engine import CelError, compile_expr
from compiler.cel.quantity import QuantityError, quantity_from_json
from compiler.cel.values import Semver, quantity_value, semver_value

_DOMAIN_LOOKUP = re.compile(r"""\b(attributes|capacity)\s*\[\s*(?:'([^']*)'|"([^"]*)")\s*\]""")
_TYPED_ATTRIBUTE_KEYS = frozenset({"int", "bool", "string", "version"})


def _split_name(name: str, driver: str) -> tuple[str, str]:
    domain, sep, bare = name.rpartition("/")
    return (domain, bare) if sep else (driver, name)


def _attribute(value: Any) -> Any:
    """A ResourceSlice attribute (``{"string": "x"}``, ``{"version": "1.2.3"}``) or a plain value."""
    if isinstance(value, Mapping) and len(value) == 1 and set(value) <= _TYPED_ATTRIBUTE_KEYS:
        (kind, raw), = value.items()
        if kind == "version":
            return semver_value(Semver.parse(str(raw)))
        return raw
    if isinstance(value, (bool, int, str)):
        return value
    raise CelError(f"unsupported device attribute value {value!r}")


def _capacity(value: Any) -> dict[str, str]:
    """A ResourceSlice capacity (``{"value": "80Gi"}``) or a bare quantity string/number."""
    raw = value.get("value") if isinstance(value, Mapping) else value
    try:
        return quantity_value(quantity_from_json(raw))
    except QuantityError as exc:
        raise CelError(f"device capacity {value!r} is not a quantity: {exc}") from None


def referenced_domains(expr: str) -> frozenset[tuple[str, str]]:
    """(``attributes`` or ``capacity``, domain) pairs ``expr`` looks up by name: everything of it
    ``device_activation`` depends on."""
    return frozenset((table, single or double) for table, single, double in _DOMAIN_LOOKUP.findall(expr))


def device_activation(
    driver: str,
    attributes: Mapping[str, Any] | None = None,
    capacity: Mapping[str, Any] | None = None,
    *,
    allow_multiple_allocations: bool = False,
    expressions: Iterable[str] = (),
) -> dict[str, Any]:
    """Variables for a DeviceClass/ResourceClaim selector, e.g.

    >>> act = device_activation("gpu.nvidia.com", {"productName": "NVIDIA H100 80GB HBM3"},
    ...                         {"memory": "80Gi"})
    >>> compile_expr('device.capacity["gpu.nvidia.com"].memory.isGreaterThan(quantity("40Gi"))'
    ...              ).evaluate(act)
    True
    """
    attrs: dict[str, dict[str, Any]] = {driver: {}}
    caps: dict[str, dict[str, Any]] = {driver: {}}
    for name, value in (attributes or {}).items():
        domain, bare = _split_name(name, driver)
        attrs.setdefault(domain, {})[bare] = _attribute(value)
    for name, value in (capacity or {}).items():
        domain, bare = _split_name(name, driver)
        caps.setdefault(domain, {})[bare] = _capacity(value)
    for expr in expressions:
        for table, single, double in _DOMAIN_LOOKUP.findall(expr):
            (attrs if table == "attributes" else caps).setdefault(single or double, {})
    return {
        "device": {
            "driver": driver,
            "attributes": attrs,
            "capacity": caps,
            "allowMultipleAllocations": allow_multiple_allocations,
        }
    }


def device_from_slice(driver: str, device: Mapping[str, Any], *, expressions: Iterable[str] = ()) -> dict[str, Any]:
    """``device_activation`` for one ``ResourceSlice.spec.devices[]`` entry (resource.k8s.io/v1)."""
    return device_activation(
        driver,
        device.get("attributes") or {},
        device.get("capacity") or {},
        allow_multiple_allocations=bool(device.get("allowMultipleAllocations", False)),
        expressions=expressions,
    )


def admission_request(obj: Mapping[str, Any], operation: str = "CREATE", username: str = "") -> dict[str, Any]:
    """A minimal ``request`` (AdmissionRequest) for ``obj``, enough for policy tests."""
    group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
    meta = obj.get("metadata") or {}
    kind = {"group": group, "version": version, "kind": obj.get("kind", "")}
    return {
        "kind": kind,
        "requestKind": kind,
        "name": meta.get("name", ""),
        "namespace": meta.get("namespace", ""),
        "operation": operation,
        "userInfo": {"username": username, "groups": []},
        "dryRun": False,
    }


def admission_activation(
    object: Mapping[str, Any] | None,
    *,
    old_object: Mapping[str, Any] | None = None,
    request: Mapping[str, Any] | None = None,
    params: Any = None,
    namespace_object: Mapping[str, Any] | None = None,
    variables: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Variables of a ValidatingAdmissionPolicy validation/matchCondition expression."""
    return {
        "object": object,
        "oldObject": old_object,
        "request": dict(request) if request is not None else admission_request(object or {}),
        "params": params,
        "namespaceObject": namespace_object,
        "variables": dict(variables or {}),
    }


def compose_variables(specs: Sequence[Mapping[str, str]], activation: dict[str, Any]) -> dict[str, Any]:
    """Evaluate ``spec.variables`` ([{name, expression}]) in order; each sees the earlier ones."""
    values: dict[str, Any] = dict(activation.get("variables") or {})
    for spec in specs:
        name, expr = spec["name"], spec["expression"]
        try:
            values[name] = compile_expr(expr).evaluate({**activation, "variables": values})
        except CelError as exc:
            raise CelError(f"variable {name!r}: {exc}", expr) from None
    return values

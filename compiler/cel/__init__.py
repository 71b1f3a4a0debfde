"""The project's single CEL engine (SPEC §9 "CEL"): CRD ``x-kubernetes-validations`` rules,
DeviceClass selectors and ValidatingAdmissionPolicy expressions all go through ``compile_expr``.

    program = compile_expr('device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0')
    program.evaluate(device_activation("gpu.nvidia.com", {"productName": "NVIDIA H100 80GB HBM3"},
                                       {"memory": "80Gi"}))                       # -> True
    compile_expr("self.size() <= 8").evaluate({"self": [1, 2]})                   # -> True

Values go in and come out as plain JSON-like Python data; compile and runtime failures raise
``CelError``. ``device_activation``/``device_from_slice`` build a DRA selector's ``device``;
``admission_activation``/``compose_variables`` build a policy's ``object``, ``request``,
``params``, ``namespaceObject`` and ``variables``; ``prepare`` converts variables once for
several programs.

Engine choice, measured by ``bench/cel_engines.py`` (2 shared vCPUs, Python 3.11; µs per call,
variables converted from plain Python data on every call, as verify does):

    engine                                   compile  Kueue rule¹  DRA product²  DRA memory³
    cel-python 0.5 (pure Python)               287        738         251          282
    common-expression-language 0.10 (Rust)      34         51          17           23
    cel-expr-python 0.1.3 (C++ cel-cpp)         64         9.5         5.1          8.3
    compiler.cel (cel-expr-python + library)    64        10.5         6.6         11.5

    ¹ ClusterQueue ``self.flavors.all(x, size(x.resources) == size(self.coveredResources))``
      on a 2-flavor x 3-resource group; ² ``device.driver == ... && ...productName == ...``;
    ³ ``device.capacity[...].memory.compareTo(quantity("40Gi")) >= 0``.

Natively (before our library) cel-expr-python has the strings extension, ``cel.bind``, the
optional ``.?`` syntax, math and encoders, and type-checks at compile time (unknown functions
and variables fail in ``compile_expr``); the Rust engine has none of those and resolves
functions only at evaluation; cel-python has none either and is 30-80x slower. All 326
non-transition rules of the upstream CRDs compile here (the 3 that use ``find()`` need our
regex library). The Rust engine's cost is dominated by converting Python values (~18 µs for a
small dict, against ~2 µs of evaluation), which verify pays on every node.

Chosen: **cel-expr-python** (PyPI ``cel-expr-python``), with the Kubernetes libraries it lacks
implemented in Python (``library.py``, ``strings.py``): quantity, semver, lists, regex
(``find``/``findAll``), URLs, sets, and the strings extension (re-implemented because the engine
refuses a second declaration of ``indexOf``, which Kubernetes overloads for strings and lists).
Kubernetes' Quantity, Semver and URL values travel as tagged one-key maps (``values.py``).

Known gaps: ``authorizer`` (VAP authorization checks) and the ``format.*`` validators library
(not used by the upstream CRDs; the engine cannot return optionals from Python functions);
``sum()``/``min()``/``max()`` of durations or timestamps; a quantity's ``type()`` reads ``map``;
``isInteger()`` is by value (upstream depends on representation: ``quantity("1000m")``).
"""

from __future__ import annotations

from compiler.cel.activation import (
    admission_activation,
    admission_request,
    compose_variables,
    device_activation,
    device_from_slice,
)
from compiler.cel.engine import (
    VARIABLES,
    Activation,
    CelError,
    Program,
    compile_expr,
    evaluate,
    prepare,
    references_old_self,
)
from compiler.cel.quantity import Quantity, QuantityError, is_quantity, parse_quantity

__all__ = [
    "VARIABLES", "Activation", "CelError", "Program", "Quantity", "QuantityError",
    "admission_activation", "admission_request", "compile_expr", "compose_variables",
    "device_activation", "device_from_slice", "evaluate", "is_quantity", "parse_quantity",
    "prepare", "references_old_self",
]

"""The one CEL environment: cel-expr-python (Google's cel-cpp) plus ``compiler.cel.library``.

Every expression is type-checked at compile time against ``dyn`` variables, so typos and unknown
functions fail at ``compile_expr`` (as a ``CelError``), not at the first evaluation. Programs are
cached by expression text for the life of the process.
"""

from __future__ import annotations

import functools
import importlib
import re
from typing import Any, Mapping

from compiler.cel.library import expanded_specs

# Variables any expression may use: CRD rules (self, oldSelf), DeviceClass selectors (device),
# ValidatingAdmissionPolicy expressions (object, oldObject, request, params, namespaceObject,
# variables, authorizer is not supported).
VARIABLES: tuple[str, ...] = (
    "self", "oldSelf", "device", "object", "oldObject", "request", "params",
    "namespaceObject", "variables",
)

_STATUS_PREFIX = re.compile(r"^[A-Z_]+: ")


class CelError(Exception):
    """A CEL expression that does not compile, or an evaluation that fails at runtime."""

    def __init__(self, message: str, expression: str | None = None) -> None:
        super().__init__(message)
        self.expression = expression


def _clean(message: str) -> str:
    """Drop the absl status prefix and trailing status tag the engine adds to every message."""
    message = _STATUS_PREFIX.sub("", str(message).strip())
    return re.sub(r"\s*\[[A-Z_]+\]$", "", message)


@functools.lru_cache(maxsize=1)
def _env() -> Any:
    # Imported by name: the binding ships no type stubs, and it loads only when CEL is first used.
    cel = importlib.import_module("cel_expr_python.cel")
    ext = {n: importlib.import_module(f"cel_expr_python.ext.{n}")
           for n in ("ext_bindings", "ext_optional", "ext_math", "ext_encoders")}

    t = cel.Type
    kinds = {
        "int": t.INT, "uint": t.UINT, "double": t.DOUBLE, "string": t.STRING, "bool": t.BOOL,
        "bytes": t.BYTES, "null": t.NULL, "list": t.LIST, "map": t.MAP, "duration": t.DURATION,
        "timestamp": t.TIMESTAMP, "dyn": t.DYN,
    }
    overloads: dict[str, list[Any]] = {}
    for name, member, params, ret, impl in expanded_specs():
        oid = f"{name}_{'member' if member else 'global'}_{'_'.join(params)}"
        overloads.setdefault(name, []).append(
            cel.Overload(oid, kinds[ret], [kinds[p] for p in params], member, impl)
        )
    decls = [cel.FunctionDecl(name, ovs) for name, ovs in sorted(overloads.items())]
    env = cel.NewEnv(
        variables={v: t.DYN for v in VARIABLES},
        extensions=[
            ext["ext_bindings"].ExtBindings(),
            ext["ext_optional"].ExtOptional(),
            ext["ext_math"].ExtMath(),
            ext["ext_encoders"].ExtEncoders(),
        ],
        functions=decls,
    )
    return env, t.ERROR


class Activation:
    """Variable bindings converted once, for several programs evaluated on the same values."""

    __slots__ = ("native",)

    def __init__(self, values: Mapping[str, Any]) -> None:
        env, _ = _env()
        try:
            self.native = env.Activation(values if isinstance(values, dict) else dict(values))
        except Exception as exc:
            raise CelError(f"cannot bind CEL variables: {_clean(str(exc))}") from None


def prepare(values: Mapping[str, Any]) -> Activation:
    """Convert variable values once; pass the result to ``Program.evaluate`` repeatedly."""
    return Activation(values)


class Program:
    """A compiled, type-checked CEL expression."""

    __slots__ = ("source", "_expr", "_error_type")

    def __init__(self, source: str, expr: Any, error_type: Any) -> None:
        self.source = source
        self._expr = expr
        self._error_type = error_type

    def evaluate(self, activation: Mapping[str, Any] | Activation) -> Any:
        """Evaluate with plain JSON-like values; raise ``CelError`` on any runtime error."""
        try:
            if isinstance(activation, Activation):
                result = self._expr.eval(activation.native)
            else:
                result = self._expr.eval(data=activation if isinstance(activation, dict) else dict(activation))
        except Exception as exc:  # conversion of an unsupported Python value
            raise CelError(f"{_clean(str(exc))}", self.source) from None
        try:
            if result.type() == self._error_type:
                message = _clean(str(result.value()))
            else:
                return result.plain_value()
        except Exception:
            # The binding reports optionals (and other opaque values) as unconvertible errors.
            message = "the result (e.g. an optional) cannot be returned to Python"
        raise CelError(message, self.source)

    def __repr__(self) -> str:
        return f"Program({self.source!r})"


@functools.lru_cache(maxsize=None)
def compile_expr(expr: str) -> Program:
    """Parse and type-check ``expr``; cached by its text. Raises ``CelError`` with the position."""
    if not isinstance(expr, str):
        raise CelError(f"CEL expression must be a string, not {type(expr).__name__}")
    env, error_type = _env()
    try:
        compiled = env.compile(expr)
    except Exception as exc:
        raise CelError(f"cannot compile CEL expression: {_clean(str(exc))}", expr) from None
    return Program(expr, compiled, error_type)


def evaluate(expr: str, activation: Mapping[str, Any] | Activation) -> Any:
    """Shorthand for ``compile_expr(expr).evaluate(activation)``."""
    return compile_expr(expr).evaluate(activation)


_STRING = re.compile(r"""(?:[rR])?(?:'''[\s\S]*?'''|\"\"\"[\s\S]*?\"\"\"|'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*")""")
_OLD_SELF = re.compile(r"\boldSelf\b")


def references_old_self(expr: str) -> bool:
    """Whether a rule is a transition rule (mentions ``oldSelf`` outside string literals)."""
    return bool(_OLD_SELF.search(_STRING.sub('""', expr)))

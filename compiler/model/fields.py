"""The leaf fields of the policy language, found by walking the pydantic models.

A *leaf* is a field whose value holds no further policy object: a scalar, an enum, a list or map
of scalars. Lists and maps of objects, optional objects and discriminated unions are walked
into; a field that is either a scalar or an object (a serving ``architecture``: catalog name or
explicit shape) is a leaf *and* is walked into. Paths use the YAML (camelCase) keys: ``[]`` steps
into list items, ``{}`` into map values, ``<mode=mig>`` picks a member of a discriminated union.

Every leaf has an effect on the compiler's output, reports or diagnostics, proven by
``tests/test_field_effects.py``, unless it carries the informational marker
(``compiler.model.common.informational``) with the reason it is only recorded. A leaf whose value
another field overrides where set carries the shadowing marker (``compiler.model.common.shadowed``):
its effect is looked for with those fields unset.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from typing import Any, Literal, Union

from pydantic import BaseModel
from pydantic.fields import FieldInfo

Step = str  # a YAML key, "[]", "{}" or "<mode=mig>"


@dataclass(frozen=True)
class LeafField:
    path: tuple[Step, ...]
    owner: type[BaseModel]  # the model that declares the field
    name: str  # its Python name
    info: FieldInfo

    @property
    def dotted(self) -> str:
        out = ""
        for step in self.path:
            out += step if step.startswith(("[", "{", "<")) or not out else "." + step
        return out

    @property
    def informational(self) -> str | None:
        return informational_reason(self.info)

    @property
    def optional(self) -> bool:
        return not self.info.is_required()

    @property
    def shadowed_by(self) -> list[tuple[str, tuple[Step, ...]]]:
        """(kind, path) of the fields that win over this one where set (``compiler.model.common.shadowed``)."""
        extra = self.info.json_schema_extra
        by = extra.get("shadowedBy") if isinstance(extra, dict) else None
        out = []
        for ref in by if isinstance(by, list) else []:
            kind, _, dotted = str(ref).partition(":")
            out.append((kind, tuple(_path(dotted))))
        return out


def informational_reason(info: FieldInfo) -> str | None:
    extra = info.json_schema_extra
    if isinstance(extra, dict):
        reason = extra.get("informational")
        return str(reason) if reason else None
    return None


def _strip(tp: Any) -> Any:
    """Unwrap Annotated[...] layers."""
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    return tp


def _members(tp: Any) -> list[Any]:
    tp = _strip(tp)
    if typing.get_origin(tp) in (Union, types.UnionType):
        out = []
        for arg in typing.get_args(tp):
            out += _members(arg)
        return out
    return [tp]


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _discriminator(model: type[BaseModel]) -> str | None:
    for name, info in model.model_fields.items():
        args = typing.get_args(_strip(info.annotation))
        if typing.get_origin(_strip(info.annotation)) is Literal and len(args) == 1 and name == "mode":
            return f"<{info.alias or name}={args[0]}>"
    return None


def _inner_models(tp: Any) -> tuple[list[tuple[Step, type[BaseModel]]], bool]:
    """The models a field's type leads to (with the step into each) and whether it also holds scalars."""
    models: list[tuple[Step, type[BaseModel]]] = []
    scalar = False
    several = len([m for m in _members(tp) if m is not type(None)]) > 1
    for member in _members(tp):
        if member is type(None):
            continue
        origin = typing.get_origin(member)
        if _is_model(member):
            tag = _discriminator(member) if several else None
            models.append((tag or "", member))
        elif origin in (list, tuple, set, frozenset):
            sub, sc = _inner_models(typing.get_args(member)[0])
            models += [("[]" + s, m) for s, m in sub]
            scalar = scalar or sc
        elif origin is dict:
            sub, sc = _inner_models(typing.get_args(member)[1])
            models += [("{}" + s, m) for s, m in sub]
            scalar = scalar or sc
        else:
            scalar = True
    return models, scalar


def leaf_fields(model: type[BaseModel], prefix: tuple[Step, ...] = ()) -> list[LeafField]:
    """Every leaf field reachable from ``model``, depth first in declaration order."""
    out: list[LeafField] = []
    for name, info in model.model_fields.items():
        key = info.alias or name
        path = prefix + (key,)
        models, scalar = _inner_models(info.annotation)
        if scalar or not models:
            out.append(LeafField(path, model, name, info))
        for steps, sub in models:
            more = tuple(s for s in _split(steps))
            out += leaf_fields(sub, path + more)
    return out


def _split(steps: str) -> list[Step]:
    out: list[Step] = []
    i = 0
    while i < len(steps):
        if steps[i] == "<":
            j = steps.index(">", i)
            out.append(steps[i:j + 1])
            i = j + 1
        else:
            out.append(steps[i:i + 2])
            i += 2
    return out


def _path(dotted: str) -> list[Step]:
    """``spec.budgets[].guaranteed`` -> ``spec``, ``budgets``, ``[]``, ``guaranteed``."""
    out: list[Step] = []
    for part in dotted.split("."):
        name, _, rest = part.partition("[")
        out.append(name)
        out += ["[]"] * (rest.count("]"))
    return out

"""Kubernetes quantities in ``kubectl`` exports, read exactly and the same way by ``import`` and ``audit``.

The API server writes quantities back in canonical form: a weight of 0.5 comes back as ``"500m"``,
a quota of 2 may be ``2`` or ``"2"``, and nothing stops ``"2000m"`` or ``"1e3"``. Every quantity an
export holds goes through the compiler's own parser (``compiler.cel.quantity``, the one the CEL
engine uses, exact fractions, never floats). What it is not is said with the field it came from:

- not a quantity at all (``"12x"``, ``true``, an object): malformed input, a ``ValueError`` naming
  the field, which the commands report with the file and the object (exit 1);
- negative, or more GPUs than any budget can state (``MAX_GPUS``, the policy's ``Count`` bound):
  for a count of GPUs in use, malformed as well (``gpus``);
- a fraction of a GPU: kept exactly (``amount``), each command saying what it does with it.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from typing import Any

from compiler.cel.quantity import QuantityError, quantity_from_json

MAX_GPUS = 1_000_000  # the largest count a budget may state (compiler.model.common.Count)


class MalformedExport(ValueError):
    """A value an export cannot hold: the message names the field; the command adds file and object."""


def quantity(value: Any, field: str) -> Fraction:
    """``value`` (a JSON string or number) as an exact number; ``MalformedExport`` naming ``field``."""
    try:
        return quantity_from_json(value).value
    except QuantityError as exc:
        raise MalformedExport(f"{field} is {_raw(value)}, not a Kubernetes quantity ({exc})") from None


def amount(q: Fraction) -> int | Fraction:
    """A whole quantity as an ``int`` (fast sums, plain printing), a fraction kept as it is."""
    return q.numerator if q.denominator == 1 else q


def shown(q: int | Fraction) -> str:
    """A quantity as a person reads it: ``8``, ``0.5``, ``0.333`` (exact: the parser keeps at most
    nine decimals), never ``1/2`` or a float's rounding."""
    if isinstance(q, int) or q.denominator == 1:
        return str(int(q))
    text = format(Decimal(q.numerator) / Decimal(q.denominator), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def gpus(value: Any, field: str) -> int | Fraction:
    """A number of GPUs in use (a Workload's ``resourceUsage``, a pod's request): a quantity, not
    negative and at most ``MAX_GPUS``; a fraction is returned as it is (the caller warns)."""
    q = quantity(value, field)
    if q < 0:
        raise MalformedExport(f"{field} is {_raw(value)}: a GPU count cannot be negative")
    if q > MAX_GPUS:
        raise MalformedExport(f"{field} is {_raw(value)}: more than {MAX_GPUS:,} GPUs is not a real count")
    return amount(q)


def whole_gpus(value: Any, field: str) -> int:
    """``gpus`` for an extended resource the API server holds in whole units (a node's capacity, a
    container's request): a fraction there is a malformed export."""
    n = gpus(value, field)
    if not isinstance(n, int):
        raise MalformedExport(f"{field} is {_raw(value)}: extended resources such as GPUs are whole numbers")
    return n


def count(value: Any, field: str) -> int:
    """A plain integer field (``podSets[].count``, ``schedulingStats`` counts): a JSON integer or a
    string of digits, not negative."""
    if isinstance(value, bool) or not isinstance(value, int | str) or not str(value).isdigit() or \
            not str(value).isascii():
        raise MalformedExport(f"{field} is {_raw(value)}, not a whole number")
    n = int(value)
    if n > 2**31 - 1:
        raise MalformedExport(f"{field} is {_raw(value)}: above the int32 the API allows")
    return n


def _raw(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."

"""Kubernetes ``resource.Quantity`` in exact arithmetic.

Parsing follows ``k8s.io/apimachinery/pkg/api/resource.ParseQuantity`` (read, not copied): a
signed decimal number with an optional suffix — binary ``Ki Mi Gi Ti Pi Ei``, decimal
``n u m "" k M G T P E`` or an exponent ``e<int>``/``E<int>``. Values are held as
``fractions.Fraction`` so comparisons are exact (``quantity("0.2G") == quantity("200M")``), never
floats. Upstream quirks kept on purpose, because the API server applies them too:

- non-zero values are rounded *up* (away from zero) to a multiple of 1n (``0.1n`` -> ``1n``);
- binary-suffixed values are capped at 2^63-1 (``9Ei`` -> 9223372036854775807);
- a missing number reads as zero (``"."``, ``"-"``, ``"Mi"`` parse as 0), but whitespace,
  ``K``/``ki``, a bare ``e`` or an exponent beyond int32 are errors.

One deliberate difference: upstream ``isInteger()``/``asInteger()`` depend on the internal
representation (``quantity("1000m").isInteger()`` is false there); here they are true for any
integral value within int64, because CEL quantity equality must be by value and the CEL value of a
quantity carries only its value (see ``compiler.cel.library``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from fractions import Fraction

INT64_MAX = (1 << 63) - 1
INT64_MIN = -(1 << 63)
_INT32_MAX = (1 << 31) - 1
_NANO = Fraction(1, 10**9)

_DECIMAL_SUFFIXES: dict[str, int] = {
    "n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18,
}
_BINARY_SUFFIXES: dict[str, int] = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")


class QuantityError(ValueError):
    """A string that the API server would not accept as a resource.Quantity."""


@dataclass(frozen=True, order=True)
class Quantity:
    """An exact quantity value; ``binary`` records whether a binary suffix was used."""

    value: Fraction
    binary: bool = False

    @classmethod
    def parse(cls, text: str) -> Quantity:
        return parse_quantity(text)

    @classmethod
    def of(cls, number: int | Fraction) -> Quantity:
        return cls(Fraction(number))

    def sign(self) -> int:
        return (self.value > 0) - (self.value < 0)

    def compare(self, other: Quantity) -> int:
        return (self.value > other.value) - (self.value < other.value)

    def add(self, other: Quantity) -> Quantity:
        return Quantity(self.value + other.value, self.binary)

    def sub(self, other: Quantity) -> Quantity:
        return Quantity(self.value - other.value, self.binary)

    def mul(self, factor: int) -> Quantity:
        return Quantity(self.value * factor, self.binary)

    def is_integer(self) -> bool:
        return self.value.denominator == 1 and INT64_MIN <= self.value.numerator <= INT64_MAX

    def as_integer(self) -> int:
        if not self.is_integer():
            raise QuantityError("cannot convert value to integer")
        return self.value.numerator

    def as_approximate_float(self) -> float:
        try:
            return float(self.value)
        except OverflowError:
            return float("inf") if self.value > 0 else float("-inf")

    def canonical(self) -> str:
        """A string that is equal for equal values (``1Gi`` and ``1024Mi`` give the same)."""
        return str(self.value)

    def __str__(self) -> str:
        return format_quantity(self)


def _scan(text: str) -> tuple[bool, str, str, str]:
    """Split ``text`` into (positive, numerator digits, fraction digits, suffix).

    Mirrors the upstream scanner: sign, leading zeros, integer digits, optional ``.digits``,
    then suffix letters optionally followed by a signed integer (the exponent form).
    """
    end = len(text)
    pos = 0
    positive = True
    if pos < end and text[0] in "+-":
        positive = text[0] == "+"
        pos = 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "", ""
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos] or "0"
    denom = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise QuantityError(f"quantity {text!r} must match '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    return positive, num, denom, text[suffix_start:]


def _interpret(suffix: str, text: str) -> tuple[int, int]:
    """Return (base, exponent) for a suffix; base 2 for binary, 10 otherwise."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix]
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix]
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:]
        body = digits[1:] if digits[:1] in ("+", "-") else digits
        if body and body.isdigit() and body.isascii():
            exponent = int(digits)
            if -_INT32_MAX <= exponent <= _INT32_MAX:
                return 10, exponent
    raise QuantityError(f"unable to parse suffix {suffix!r} of quantity {text!r}")


@functools.lru_cache(maxsize=4096)
def parse_quantity(text: str) -> Quantity:
    """Parse a Kubernetes quantity string exactly; raise ``QuantityError`` if invalid."""
    if not isinstance(text, str):
        raise QuantityError(f"quantity must be a string, not {type(text).__name__}")
    if not text:
        raise QuantityError("quantity must not be empty")
    positive, num, denom, suffix = _scan(text)
    base, exponent = _interpret(suffix, text)
    magnitude = Fraction(int(num + denom), 10 ** len(denom))
    if base == 10:
        magnitude *= Fraction(10) ** exponent
    else:
        magnitude *= 1 << exponent
    if magnitude and magnitude.denominator != 1:
        # Upstream rounds non-zero values up to the nearest nano, away from zero.
        nanos = -((-magnitude) // _NANO)
        magnitude = nanos * _NANO
    binary = base == 2
    if binary and magnitude > INT64_MAX:
        magnitude = Fraction(INT64_MAX)
    return Quantity(magnitude if positive else -magnitude, binary and magnitude >= 1)


def is_quantity(text: object) -> bool:
    if not isinstance(text, str):
        return False
    try:
        parse_quantity(text)
    except QuantityError:
        return False
    return True


def quantity_from_json(value: object) -> Quantity:
    """A quantity as it appears in a JSON object: a string, or an int (int-or-string fields)."""
    if isinstance(value, bool):
        raise QuantityError(f"quantity must be a string or number, not {value!r}")
    if isinstance(value, int):
        return Quantity(Fraction(value))
    if isinstance(value, float):
        return parse_quantity(repr(value)) if value == value else parse_quantity("nan")
    if isinstance(value, str):
        return parse_quantity(value)
    raise QuantityError(f"quantity must be a string or number, not {type(value).__name__}")


def format_quantity(q: Quantity) -> str:
    """A readable, parseable rendering: binary suffix when exact, else decimal SI or plain."""
    value = q.value
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    mag = abs(value)
    if q.binary and mag.denominator == 1:
        for suffix, exp in sorted(_BINARY_SUFFIXES.items(), key=lambda kv: -kv[1]):
            unit = 1 << exp
            if mag.numerator % unit == 0:
                return f"{sign}{mag.numerator // unit}{suffix}"
    for suffix, exp in sorted(_DECIMAL_SUFFIXES.items(), key=lambda kv: -kv[1]):
        scaled = mag / Fraction(10) ** exp
        if scaled.denominator == 1:
            return f"{sign}{scaled.numerator}{suffix}"
    return f"{sign}{float(mag)!r}"  # finer than 1n cannot come from parsing

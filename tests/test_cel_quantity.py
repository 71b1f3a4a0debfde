"""Quantity parsing and arithmetic must match Kubernetes resource.Quantity exactly."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from compiler.cel.quantity import (
    INT64_MAX,
    Quantity,
    QuantityError,
    format_quantity,
    is_quantity,
    parse_quantity,
    quantity_from_json,
)

KI, MI, GI = 1 << 10, 1 << 20, 1 << 30
N = Fraction(1, 10**9)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", 0), ("0n", 0), ("0Ki", 0), ("-0", 0), ("1", 1), ("+1", 1), ("-1", -1),
        ("1Ki", KI), ("7Mi", 7 * MI), ("6Gi", 6 * GI), ("5Ti", 5 << 40), ("4Pi", 4 << 50), ("3Ei", 3 << 60),
        ("5n", 5 * N), ("4u", Fraction(4, 10**6)), ("3m", Fraction(3, 1000)), ("8k", 8000), ("50k", 50000),
        ("7M", 7 * 10**6), ("6G", 6 * 10**9), ("5T", 5 * 10**12), ("2P", 2 * 10**15), ("1E", 10**18),
        ("12E", 12 * 10**18),
        # exponents (E followed by digits is an exponent, a bare E is exa)
        ("1E-3", Fraction(1, 1000)), ("1e3", 1000), ("1.3E+6", 1300000), ("0.5e-2", Fraction(5, 1000)),
        # fractions
        ("0.001", Fraction(1, 1000)), (".001", Fraction(1, 1000)), ("1.", 1), ("1.G", 10**9),
        ("100.035k", 100035), ("10.035M", 10035000), ("6.987654321G", 6987654321), ("0.5Mi", MI // 2),
        ("100.035Ki", Fraction(10243584, 100)), ("-1.5Gi", -3 * GI // 2),
        # below 1n rounds up (away from zero) to the next nano
        ("3.001n", 4 * N), ("1.1E-9", 2 * N), ("0.0000000001", N), ("0.9n", N), ("0.00000012345", 124 * N),
        ("0.000000000001Ki", 2 * N), ("-0.5n", -N),
        # binary quantities are capped at int64
        ("9Ei", INT64_MAX), ("9223372036854775807Ki", INT64_MAX),
        # upstream quirks: a missing number reads as zero
        (".", 0), ("-", 0), ("Mi", 0),
    ],
)
def test_parse_valid(text: str, expected: int | Fraction) -> None:
    assert parse_quantity(text).value == Fraction(expected)
    assert is_quantity(text)


@pytest.mark.parametrize(
    "text",
    ["", "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", "1e4294967297",
     " 1", "1 ", "200K", "1,3G", "Three", "1e", "1e1.5", "1ki", "1KiB", "--1"],
)
def test_parse_invalid(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)
    assert not is_quantity(text)


def test_non_string_is_not_a_quantity() -> None:
    assert not is_quantity(5)
    with pytest.raises(QuantityError):
        parse_quantity(5)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("a", "b", "cmp"),
    [
        ("200M", "0.2G", 0), ("50M", "50Mi", -1), ("50Mi", "50M", 1), ("1Gi", "1024Mi", 0),
        ("10000T", "100Gi", 1), ("100m", "50m", 1), ("1n", "0.5n", 0),
        ("9223372036854775807", "9223372036854775806", 1),  # beyond float precision
        ("1.000000001", "1", 1), ("-1", "0", -1),
    ],
)
def test_compare_is_exact(a: str, b: str, cmp: int) -> None:
    assert parse_quantity(a).compare(parse_quantity(b)) == cmp
    assert parse_quantity(b).compare(parse_quantity(a)) == -cmp


def test_arithmetic_is_exact() -> None:
    tenth, fifth = parse_quantity("100m"), parse_quantity("200m")
    assert tenth.add(fifth) == Quantity(Fraction(3, 10))  # 0.1 + 0.2 == 0.3, unlike floats
    assert parse_quantity("50k").sub(Quantity.of(20000)).as_integer() == 30000
    assert parse_quantity("1Gi").mul(3).value == 3 * GI


def test_integer_conversions() -> None:
    assert parse_quantity("50k").is_integer() and parse_quantity("50k").as_integer() == 50000
    assert parse_quantity("50000000G").is_integer()
    assert not parse_quantity("1.5").is_integer()
    big = parse_quantity("9999999999999999999999999999999999999G")
    assert not big.is_integer()
    with pytest.raises(QuantityError):
        big.as_integer()
    assert parse_quantity("1500m").as_approximate_float() == 1.5
    assert parse_quantity("1e400").as_approximate_float() == float("inf")


def test_sign() -> None:
    assert [parse_quantity(t).sign() for t in ("-1Ki", "0", "1n")] == [-1, 0, 1]


def test_from_json_accepts_int_or_string() -> None:
    assert quantity_from_json(8).value == 8
    assert quantity_from_json("8Gi").value == 8 * GI
    assert quantity_from_json(1.5).value == Fraction(3, 2)
    for bad in (True, None, [1]):
        with pytest.raises(QuantityError):
            quantity_from_json(bad)


@pytest.mark.parametrize(("text", "shown"), [("1024Mi", "1Gi"), ("1000M", "1G"), ("1500m", "1500m"), ("0", "0"),
                                             ("-2Ki", "-2Ki"), ("3n", "3n")])
def test_format(text: str, shown: str) -> None:
    assert format_quantity(parse_quantity(text)) == shown


@given(st.integers(min_value=-(2**40), max_value=2**40), st.sampled_from(["", "Ki", "Mi", "Gi", "m", "k", "M", "n"]))
def test_parse_matches_definition(n: int, suffix: str) -> None:
    factor = {"": 1, "Ki": KI, "Mi": MI, "Gi": GI, "m": Fraction(1, 1000), "k": 1000, "M": 10**6, "n": N}[suffix]
    q = parse_quantity(f"{n}{suffix}")
    exact = n * factor
    if suffix.endswith("i") and abs(exact) > INT64_MAX:  # binary quantities are capped
        exact = INT64_MAX if exact > 0 else -INT64_MAX
    assert q.value == exact
    assert parse_quantity(format_quantity(q)).value == q.value


@given(st.integers(min_value=0, max_value=10**12), st.integers(min_value=0, max_value=10**12))
def test_compare_agrees_with_integers(a: int, b: int) -> None:
    assert parse_quantity(str(a)).compare(parse_quantity(f"{b}")) == (a > b) - (a < b)

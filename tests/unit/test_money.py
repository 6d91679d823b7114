"""Currencies, rate parsing, half-even rounding and repricing (decisions §2)."""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal, localcontext
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.money import (
    Currency,
    parse_rate,
    reprice,
    reprice_exact,
    reprice_fraction,
    round_half_even,
)

EUR = Currency("EUR", Fraction(1), 2)
USD = Currency("USD", parse_rate("1.1"), 2)
JPY = Currency("JPY", parse_rate("160.25"), 0)
KWD = Currency("KWD", parse_rate("0.333"), 3)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1", Fraction(1)),
        ("1.08", Fraction(27, 25)),
        ("0.5", Fraction(1, 2)),
        ("160.25", Fraction(641, 4)),
        ("0.000001", Fraction(1, 1_000_000)),
        ("007.10", Fraction(71, 10)),
        ("123456789.123456789", Fraction(123456789123456789, 10**9)),
    ],
)
def test_parse_rate_is_exact(text: str, expected: Fraction) -> None:
    assert parse_rate(text) == expected
    assert isinstance(parse_rate(text), Fraction)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "0",
        "0.0",
        "000.000",
        "-1",
        "+1",
        "1e5",
        "1E5",
        "nan",
        "NaN",
        "inf",
        "Infinity",
        ".5",
        "5.",
        "1..2",
        "1.2.3",
        " 1",
        "1 ",
        "1\n",
        "1,5",
        "1_000",
        "٣",
        "0x10",
        "1/2",
    ],
)
def test_parse_rate_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_rate(text)


def test_currency_validation() -> None:
    assert Currency("EUR", 1, 2).rate == Fraction(1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Currency("EUR", 1.1, 2)  # type: ignore[arg-type]
    for rate in (Fraction(0), Fraction(-1)):
        with pytest.raises(ValueError):
            Currency("EUR", rate, 2)
    for code in ("eur", "EURO", "E1R", ""):
        with pytest.raises(ValueError):
            Currency(code, Fraction(1), 2)
    with pytest.raises(ValueError):
        Currency("EUR", Fraction(1), -1)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (Fraction(0), 0),
        (Fraction(1, 2), 0),
        (Fraction(3, 2), 2),
        (Fraction(5, 2), 2),
        (Fraction(7, 2), 4),
        (Fraction(-1, 2), 0),
        (Fraction(-3, 2), -2),
        (Fraction(-5, 2), -2),
        (Fraction(7, 3), 2),
        (Fraction(8, 3), 3),
        (Fraction(-7, 3), -2),
        (Fraction(-8, 3), -3),
        (Fraction(1_000_001, 2), 500_000),
        (Fraction(1_000_003, 2), 500_002),
        (Fraction(12), 12),
    ],
)
def test_round_half_even(value: Fraction, expected: int) -> None:
    assert round_half_even(value) == expected
    assert type(round_half_even(value)) is int


@given(st.fractions(max_denominator=10**30))
def test_round_half_even_matches_decimal(value: Fraction) -> None:
    # An exact half is a terminating decimal, computed exactly at this precision; any
    # other value is at least 1/(2*denominator) away from a half, far above 10**-300.
    with localcontext() as ctx:
        ctx.prec = 400
        quotient = Decimal(value.numerator) / Decimal(value.denominator)
        expected = int(quotient.quantize(Decimal(1), rounding=ROUND_HALF_EVEN))
    assert round_half_even(value) == expected
    assert abs(round_half_even(value) - value) <= Fraction(1, 2)


def test_reprice_examples() -> None:
    assert reprice(1000, EUR, EUR) == 1000
    assert reprice(1000, EUR, USD) == 1100
    assert reprice(1234, EUR, JPY) == 1977  # 12.34 * 160.25 = 1977.485
    assert reprice_exact(1234, EUR, JPY) == Fraction(1977485, 1000)
    assert reprice(1, EUR, JPY) == 2  # 1.6025
    assert reprice(1000, EUR, KWD) == 3330  # 10.00 EUR -> 3.330 KWD
    assert reprice(5, EUR, Currency("XTS", Fraction(1, 2), 2)) == 2  # 2.5 -> 2
    assert reprice(7, EUR, Currency("XTS", Fraction(1, 2), 2)) == 4  # 3.5 -> 4
    assert reprice(0, EUR, JPY) == 0


def test_reprice_divides_by_the_base_rate() -> None:
    odd_base = Currency("EUR", Fraction(2), 2)
    assert reprice_exact(1000, odd_base, USD) == Fraction(550)
    assert reprice(1000, odd_base, odd_base) == 1000
    jpy_base = Currency("JPY", Fraction(1), 0)
    eur = Currency("EUR", parse_rate("0.00625"), 2)
    assert reprice(16000, jpy_base, eur) == 10000  # 16000 JPY -> 100.00 EUR
    assert reprice_exact(1, jpy_base, eur) == Fraction(5, 8)


def test_reprice_fraction() -> None:
    assert reprice_fraction(Fraction(1, 2), EUR, EUR) == 0
    assert reprice_fraction(Fraction(3, 2), EUR, EUR) == 2
    assert reprice_fraction(Fraction(900), EUR, USD) == 990
    assert reprice_fraction(Fraction(1977485, 1000) / Fraction(641, 4) * 100, EUR, JPY) == 1977
    with pytest.raises(TypeError):
        reprice_fraction(0.5, EUR, EUR)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        reprice(10.0, EUR, EUR)  # type: ignore[arg-type]


rate_texts = st.builds(
    lambda whole, frac: f"{whole}.{frac}" if frac else str(whole),
    st.integers(min_value=0, max_value=10**6),
    st.one_of(st.just(""), st.from_regex(r"[0-9]{1,8}", fullmatch=True)),
).filter(lambda text: Fraction(text) > 0)


@given(
    amount=st.integers(min_value=-(10**15), max_value=10**15),
    base_rate=st.one_of(st.just("1"), rate_texts),
    target_rate=rate_texts,
    base_exp=st.integers(min_value=0, max_value=4),
    target_exp=st.integers(min_value=0, max_value=4),
)
def test_reprice_matches_decimal_half_even(
    amount: int, base_rate: str, target_rate: str, base_exp: int, target_exp: int
) -> None:
    base = Currency("AAA", parse_rate(base_rate), base_exp)
    target = Currency("BBB", parse_rate(target_rate), target_exp)
    result = reprice(amount, base, target)
    assert type(result) is int
    with localcontext() as ctx:
        ctx.prec = 200
        exact = Decimal(amount) * Decimal(target_rate) / Decimal(base_rate)
        expected = exact.scaleb(target_exp - base_exp).quantize(
            Decimal(1), rounding=ROUND_HALF_EVEN
        )
    assert result == int(expected)
    assert abs(result - reprice_exact(amount, base, target)) <= Fraction(1, 2)


@given(st.integers(min_value=0, max_value=10**12), st.integers(min_value=0, max_value=10**12))
def test_reprice_is_monotone(a: int, b: int) -> None:
    low, high = sorted((a, b))
    assert reprice(low, EUR, JPY) <= reprice(high, EUR, JPY)
    assert reprice(low, EUR, KWD) <= reprice(high, EUR, KWD)

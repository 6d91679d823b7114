"""Money: currencies, exact rates and the one rounding of displayed amounts (decisions §2).

Amounts are integers in minor units. Rates are exact ``Fraction`` values parsed from
decimal strings; nothing here ever touches a float. Repricing a base-currency minor
amount ``a`` into currency C is

    a * rate_C / rate_base * 10^(exp_C - exp_base)

computed exactly, then rounded once, half-even, to an integer (``round_half_even``).
That single rounding is applied to every displayed value: prize values, band bounds,
wager limits and cash-back estimates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

_RATE_TEXT = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_CURRENCY_CODE = re.compile(r"[A-Z]{3}")


@dataclass(frozen=True, slots=True)
class Currency:
    """A configured currency of one operator.

    ``rate`` is the number of major units of this currency per 1 major unit of the
    operator's base currency (so the base currency itself normally has rate 1);
    ``exponent`` is the number of minor digits (EUR 2, JPY 0).
    """

    code: str
    rate: Fraction
    exponent: int

    def __post_init__(self) -> None:
        if not isinstance(self.code, str) or not _CURRENCY_CODE.fullmatch(self.code):
            raise ValueError(f"currency code must be three uppercase letters: {self.code!r}")
        rate = self.rate
        if isinstance(rate, bool) or not isinstance(rate, Fraction | int):
            raise TypeError(f"rate must be a Fraction (never a float): {rate!r}")
        if rate <= 0:
            raise ValueError(f"rate must be positive: {rate}")
        object.__setattr__(self, "rate", Fraction(rate))
        if isinstance(self.exponent, bool) or not isinstance(self.exponent, int):
            raise TypeError(f"exponent must be an int: {self.exponent!r}")
        if not 0 <= self.exponent <= 18:
            raise ValueError(f"exponent out of range: {self.exponent}")


def parse_rate(text: str) -> Fraction:
    """Parse a decimal rate string such as ``"1.08"`` into an exact Fraction.

    Accepted: ASCII digits with at most one ``.`` that has digits on both sides
    (``"1"``, ``"0.5"``, ``"160.25"``). Rejected with ValueError: anything else (signs,
    exponents such as ``"1e5"``, ``"nan"``, ``"inf"``, spaces, ``".5"``, ``"5."``) and any
    value that is not strictly positive.
    """
    if not isinstance(text, str) or not _RATE_TEXT.fullmatch(text):
        raise ValueError(f"not a decimal rate: {text!r}")
    whole, _, frac = text.partition(".")
    value = Fraction(int(whole + frac), 10 ** len(frac))
    if value <= 0:
        raise ValueError(f"rate must be positive: {text!r}")
    return value


def round_half_even(x: Fraction) -> int:
    """Round an exact value to the nearest integer; exact halves go to the even neighbour.

    This is the one rounding of displayed values (banker's rounding, the same as
    ``decimal.ROUND_HALF_EVEN``): 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -1.5 -> -2. It is
    symmetric around zero, so it has no bias in either direction.
    """
    value = Fraction(x)
    floor, remainder = divmod(value.numerator, value.denominator)
    twice = 2 * remainder
    if twice < value.denominator:
        return floor
    if twice > value.denominator:
        return floor + 1
    return floor if floor % 2 == 0 else floor + 1


@lru_cache(maxsize=1024)  # currencies are immutable; a few per operator
def _factor(base: Currency, target: Currency) -> Fraction:
    """Exact multiplier from base-currency minor units to target-currency minor units."""
    scale = Fraction(10) ** (target.exponent - base.exponent)
    return target.rate / base.rate * scale


def reprice_exact(amount_base_minor: int, base: Currency, target: Currency) -> Fraction:
    """``a * rate_C / rate_base * 10^(exp_C - exp_base)``, exact, not rounded."""
    if isinstance(amount_base_minor, bool) or not isinstance(amount_base_minor, int):
        raise TypeError(f"amount must be an int of minor units: {amount_base_minor!r}")
    return amount_base_minor * _factor(base, target)


def reprice(amount_base_minor: int, base: Currency, target: Currency) -> int:
    """A base-currency minor amount as displayed in ``target`` (exact, then half-even)."""
    return round_half_even(reprice_exact(amount_base_minor, base, target))


def reprice_fraction(amount_base_exact: Fraction, base: Currency, target: Currency) -> int:
    """An exact (possibly fractional) base-currency minor amount, displayed in ``target``.

    Used for values that are exact fractions before display (staked-item counting,
    cash-back): the fraction is repriced exactly and rounded half-even once.
    """
    if isinstance(amount_base_exact, float):
        raise TypeError("amounts are never floats")
    return round_half_even(Fraction(amount_base_exact) * _factor(base, target))

"""How a staked item counts, and what cash-back pays (decisions §5, interface 4.6).

With grant value ``G`` (base minor units), current catalogue price ``M`` (``M = G`` for a
non-collectible), cash-back share ``cb`` and Credits share ``s`` (both bps):

    credited          = min(G, M) * cb * s
    priceFallMinor    = max(0, G - M) * cb
    priceRiseMinor    = max(0, M - G) * cb
    creditsShareMinor = min(G, M) * cb * (1 - s)

An item without cash-back counts for ``G``, all in Credits, nothing uncredited. Values
stay exact Fractions in base minor units; they are summed exactly and rounded once, at
display, half-even (``money.reprice_fraction``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

from domain.money import Currency, reprice_fraction

BPS = 10000


@dataclass(frozen=True, slots=True)
class Uncredited:
    """The interface 2.4 object: causes of value not paid in Credits, in minor units."""

    price_fall_minor: int
    price_rise_minor: int
    credits_share_minor: int


@dataclass(frozen=True, slots=True)
class CountedValue:
    """Exact counted value in base minor units.

    ``uncredited_exact`` is (priceFall, priceRise, creditsShare).
    """

    credited_exact: Fraction
    uncredited_exact: tuple[Fraction, Fraction, Fraction]


ZERO = CountedValue(Fraction(0), (Fraction(0), Fraction(0), Fraction(0)))


def count_item(
    grant_value_minor: int,
    current_price_minor: int,
    collectible: bool,
    cashback_bps: int | None,
    credits_share_bps: int,
) -> CountedValue:
    """What one item counts for now (= what its cash-back would pay in Credits)."""
    if grant_value_minor < 0 or current_price_minor < 0:
        raise ValueError("values must not be negative")
    if not 0 <= credits_share_bps <= BPS:
        raise ValueError(f"credits_share_bps out of range: {credits_share_bps}")
    g = Fraction(grant_value_minor)
    if cashback_bps is None:
        return CountedValue(g, ZERO.uncredited_exact)
    if not 0 <= cashback_bps <= BPS:
        raise ValueError(f"cashback_bps out of range: {cashback_bps}")
    m = Fraction(current_price_minor) if collectible else g
    cashback = Fraction(cashback_bps, BPS)
    share = Fraction(credits_share_bps, BPS)
    paid = min(g, m) * cashback
    return CountedValue(
        credited_exact=paid * share,
        uncredited_exact=(
            max(Fraction(0), g - m) * cashback,
            max(Fraction(0), m - g) * cashback,
            paid * (1 - share),
        ),
    )


def sum_counted(values: Iterable[CountedValue]) -> CountedValue:
    """Exact sum of several counted items (a multi-item stake), before any rounding."""
    credited = Fraction(0)
    fall = rise = share = Fraction(0)
    for value in values:
        credited += value.credited_exact
        f, r, s = value.uncredited_exact
        fall, rise, share = fall + f, rise + r, share + s
    return CountedValue(credited, (fall, rise, share))


def displayed(counted: CountedValue, base: Currency, target: Currency) -> tuple[int, Uncredited]:
    """The counted value and its Uncredited object in ``target`` minor units (half-even)."""
    fall, rise, share = counted.uncredited_exact
    return (
        reprice_fraction(counted.credited_exact, base, target),
        Uncredited(
            price_fall_minor=reprice_fraction(fall, base, target),
            price_rise_minor=reprice_fraction(rise, base, target),
            credits_share_minor=reprice_fraction(share, base, target),
        ),
    )

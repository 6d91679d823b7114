"""How a staked item counts (decisions §5, interface 4.6)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.money import Currency, parse_rate
from domain.stake_counting import (
    CountedValue,
    Uncredited,
    count_item,
    displayed,
    sum_counted,
)

EUR = Currency("EUR", Fraction(1), 2)
USD = Currency("USD", parse_rate("1.1"), 2)
F = Fraction


def test_plain_cashback() -> None:
    counted = count_item(1000, 1000, False, 9000, 10000)
    assert counted == CountedValue(F(900), (F(0), F(0), F(0)))
    assert displayed(counted, EUR, EUR) == (900, Uncredited(0, 0, 0))


def test_collectible_price_fall() -> None:
    counted = count_item(1000, 900, True, 8000, 10000)
    assert counted == CountedValue(F(720), (F(80), F(0), F(0)))
    assert displayed(counted, EUR, EUR) == (720, Uncredited(80, 0, 0))


def test_collectible_price_rise() -> None:
    counted = count_item(1000, 1200, True, 8000, 10000)
    assert counted == CountedValue(F(800), (F(0), F(160), F(0)))
    assert displayed(counted, EUR, EUR) == (800, Uncredited(0, 160, 0))


def test_credits_share_below_full() -> None:
    counted = count_item(1000, 1000, False, 9000, 5000)
    assert counted == CountedValue(F(450), (F(0), F(0), F(450)))
    assert displayed(counted, EUR, EUR) == (450, Uncredited(0, 0, 450))


def test_no_cashback_counts_the_whole_grant_value() -> None:
    for collectible, price, share in ((False, 1000, 10000), (True, 400, 5000), (True, 5000, 0)):
        counted = count_item(1000, price, collectible, None, share)
        assert counted == CountedValue(F(1000), (F(0), F(0), F(0)))
        assert displayed(counted, EUR, EUR) == (1000, Uncredited(0, 0, 0))


def test_non_collectible_ignores_the_current_price() -> None:
    assert count_item(1000, 1, False, 9000, 10000) == count_item(1000, 1000, False, 9000, 10000)


def test_exact_fractions_and_half_even_display() -> None:
    counted = count_item(333, 333, False, 5000, 10000)
    assert counted.credited_exact == F(333, 2)
    assert displayed(counted, EUR, EUR)[0] == 166  # 166.5 -> 166
    counted = count_item(1001, 777, True, 3333, 7777)
    assert counted.credited_exact == F(777 * 3333 * 7777, 10**8)
    assert counted.uncredited_exact == (F(224 * 3333, 10**4), F(0), F(777 * 3333 * 2223, 10**8))
    credited, uncredited = displayed(counted, EUR, USD)
    assert credited == 222  # 201.40415757 * 1.1 = 221.5446 -> 222
    assert uncredited == Uncredited(82, 0, 63)


def test_sum_then_round_once() -> None:
    halves = [count_item(333, 333, False, 5000, 10000)] * 3  # 3 * 166.5 = 499.5
    total = sum_counted(halves)
    assert total.credited_exact == F(999, 2)
    assert displayed(total, EUR, EUR)[0] == 500  # not 3 * 166 = 498
    assert sum_counted([]) == CountedValue(F(0), (F(0), F(0), F(0)))


def test_rejects_bad_input() -> None:
    for args in (
        (-1, 0, False, 9000, 10000),
        (1000, -1, True, 9000, 10000),
        (1000, 1000, False, 10001, 10000),
        (1000, 1000, False, -1, 10000),
        (1000, 1000, False, 9000, 10001),
        (1000, 1000, False, 9000, -1),
    ):
        with pytest.raises(ValueError):
            count_item(*args)


@given(
    grant=st.integers(0, 10**9),
    price=st.integers(0, 10**9),
    collectible=st.booleans(),
    cashback=st.integers(0, 10000),
    share=st.integers(0, 10000),
)
def test_parts_add_up_to_the_cashback_of_the_grant_value(
    grant: int, price: int, collectible: bool, cashback: int, share: int
) -> None:
    counted = count_item(grant, price, collectible, cashback, share)
    fall, rise, credits_share = counted.uncredited_exact
    cb = F(cashback, 10000)
    market = price if collectible else grant
    # min(G, M) + |G - M| = max(G, M): paid + lost-to-moves = max(G, M) * cashback
    assert counted.credited_exact + credits_share + fall + rise == max(grant, market) * cb
    assert min(fall, rise) == 0
    assert counted.credited_exact <= grant * cb
    assert all(part >= 0 for part in (counted.credited_exact, fall, rise, credits_share))
    if not collectible:
        assert fall == rise == 0

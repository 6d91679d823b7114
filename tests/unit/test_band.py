"""Target band, chance limits, selector config and the prize list (decisions §2, interface 4.2)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from domain.catalog import CatalogItem, Prize, is_eligible, localised_name, prize_of
from domain.money import Currency, parse_rate
from domain.upgrader_rules import (
    Band,
    UpgraderSettings,
    derive_selector_config,
    max_chance_bps,
    select_prizes,
    target_band,
)

EUR = Currency("EUR", Fraction(1), 2)
USD = Currency("USD", parse_rate("1.1"), 2)
JPY = Currency("JPY", parse_rate("160"), 0)

PLAIN = UpgraderSettings(
    house_edge_bps=500,
    chance_presets_bps=(1000, 2500, 5000, 7500, 9000),
    default_chance_bps=5000,
    max_chance_bps=9500,
    min_wager_minor=100,
    max_wager_minor=100_000,
    balance_mode=True,
    items_mode=False,
)
NO_LOSS = UpgraderSettings(
    house_edge_bps=1000,
    chance_presets_bps=(5000, 8000, 9000),
    default_chance_bps=9000,
    max_chance_bps=9900,
    min_wager_minor=100,
    max_wager_minor=100_000,
    balance_mode=True,
    items_mode=True,
    no_loss=True,
    nuggets_cost_percent=20,
)


@pytest.mark.parametrize(
    ("wager", "chance", "expected"),
    [(1000, 5000, Band(1728, 1900)), (1000, 1000, Band(8637, 9500)), (1000, 9000, Band(960, 1055))],
)
def test_band_examples_eur(wager: int, chance: int, expected: Band) -> None:
    assert target_band(wager, 500, chance, 0, False) == expected


def test_band_in_usd_from_the_usd_wager() -> None:
    assert target_band(1100, 500, 5000, 0, False) == Band(1900, 2090)


def test_no_loss_example() -> None:
    assert max_chance_bps(NO_LOSS) == 8750
    config = derive_selector_config(NO_LOSS, EUR, EUR)
    assert config.chance_presets_bps == (5000, 8000)
    assert config.max_chance_bps == 8750
    assert config.default_chance_bps == 8000  # 9000 is gone: largest offered below it
    assert target_band(1000, 1000, 8000, 20, True) == Band(1000, 1075)


def test_nuggets_cost_only_with_no_loss() -> None:
    assert target_band(1000, 1000, 8000, 20, False) == target_band(1000, 1000, 8000, 0, False)
    assert target_band(1000, 1000, 8000, 0, False) == Band(1023, 1125)
    assert NO_LOSS.nuggets_cost == 20
    off = UpgraderSettings(**{**_fields(NO_LOSS), "no_loss": False})
    assert off.nuggets_cost == 0
    assert max_chance_bps(off) == 9000


def _fields(settings: UpgraderSettings) -> dict[str, object]:
    return {name: getattr(settings, name) for name in UpgraderSettings.__slots__}


def test_band_contains_is_inclusive() -> None:
    band = Band(1728, 1900)
    assert band.contains(1728) and band.contains(1900)
    assert not band.contains(1727) and not band.contains(1901)


def test_band_rejects_bad_input() -> None:
    for args in (
        (1000, 500, 0, 0, False),
        (1000, 500, 10001, 0, False),
        (-1, 500, 5000, 0, False),
        (1000, 500, 5000, 100, True),
        (1000, -1, 5000, 0, False),
    ):
        with pytest.raises(ValueError):
            target_band(*args)


def test_plain_config_eur_and_usd() -> None:
    config = derive_selector_config(PLAIN, EUR, EUR)
    assert config.chance_presets_bps == (1000, 2500, 5000, 7500, 9000)
    assert (config.max_chance_bps, config.default_chance_bps, config.available) == (
        9500,
        5000,
        True,
    )
    assert (config.min_wager_minor, config.max_wager_minor, config.currency) == (
        100,
        100_000,
        "EUR",
    )
    usd = derive_selector_config(PLAIN, EUR, USD)
    assert (usd.min_wager_minor, usd.max_wager_minor, usd.currency) == (110, 110_000, "USD")
    jpy = derive_selector_config(PLAIN, EUR, JPY)
    assert (jpy.min_wager_minor, jpy.max_wager_minor) == (160, 160_000)
    odd = UpgraderSettings(**{**_fields(PLAIN), "min_wager_minor": 5, "max_wager_minor": 15})
    half = Currency("XTS", Fraction(1, 2), 2)
    assert derive_selector_config(odd, EUR, half).min_wager_minor == 2  # 2.5 -> 2
    assert derive_selector_config(odd, EUR, half).max_wager_minor == 8  # 7.5 -> 8


@pytest.mark.parametrize(
    ("presets", "default", "maximum", "expected_presets", "expected_default", "expected_max"),
    [
        ((9000, 1000, 5000, 1000), 5000, 9500, (1000, 5000, 9000), 5000, 9500),
        ((1000, 5000, 9000), 9000, 6000, (1000, 5000), 5000, 6000),
        ((5000, 9000), 1000, 9500, (5000, 9000), 5000, 9500),
        ((9600, 9800), 9600, 9999, (), 0, 0),
        ((1000, 10000), 10000, 10000, (1000,), 1000, 9500),
        ((1000,), 1000, 0, (), 0, 0),
    ],
)
def test_config_presets_default_and_max(
    presets: tuple[int, ...],
    default: int,
    maximum: int,
    expected_presets: tuple[int, ...],
    expected_default: int,
    expected_max: int,
) -> None:
    settings = UpgraderSettings(
        **{
            **_fields(PLAIN),
            "chance_presets_bps": presets,
            "default_chance_bps": default,
            "max_chance_bps": maximum,
        }
    )
    config = derive_selector_config(settings, EUR, EUR)
    assert config.chance_presets_bps == expected_presets
    assert config.default_chance_bps == expected_default
    assert config.max_chance_bps == expected_max
    assert config.available is bool(expected_presets)


def test_no_loss_can_leave_nothing() -> None:
    settings = UpgraderSettings(
        **{**_fields(NO_LOSS), "house_edge_bps": 5000, "nuggets_cost_percent": 60}
    )
    assert max_chance_bps(settings) == 0  # 1 - 0.5 / 0.4 < 0
    config = derive_selector_config(settings, EUR, EUR)
    assert (config.available, config.max_chance_bps, config.chance_presets_bps) == (False, 0, ())
    assert config.default_chance_bps == 0


def test_settings_validation() -> None:
    for change in (
        {"house_edge_bps": 10000},
        {"nuggets_cost_percent": 100},
        {"min_wager_minor": 10, "max_wager_minor": 5},
        {"chance_presets_bps": (0,)},
        {"prize_list_limit": -1},
        {"max_chance_bps": -1},
    ):
        with pytest.raises(ValueError):
            UpgraderSettings(**{**_fields(PLAIN), **change})


edges = st.integers(min_value=0, max_value=9999)
costs = st.integers(min_value=0, max_value=99)
wagers = st.integers(min_value=0, max_value=10**12)


@given(wagers, edges, costs, st.booleans(), st.data())
def test_higher_chance_never_gives_a_higher_band(
    wager: int, e: int, c: int, no_loss: bool, data: st.DataObject
) -> None:
    settings = UpgraderSettings(
        e, (), 1, 9999, 0, 0, True, True, no_loss=no_loss, nuggets_cost_percent=c
    )
    limit = max_chance_bps(settings)  # every chance that can be offered
    assume(limit >= 1)
    p1, p2 = data.draw(st.integers(1, limit)), data.draw(st.integers(1, limit))
    low, high = sorted((p1, p2))
    band_low, band_high = (target_band(wager, e, p, c, no_loss) for p in (low, high))
    assert band_high.upper_minor <= band_low.upper_minor
    assert band_high.lower_minor <= band_low.lower_minor


@given(wagers, edges, costs, st.integers(1, 9999))
def test_operator_keeps_the_edge_on_average(wager: int, e: int, c: int, p: int) -> None:
    band = target_band(wager, e, p, c, True)
    chance, edge, cost = Fraction(p, 10000), Fraction(e, 10000), Fraction(c, 100)
    target = wager * ((1 - edge) - (1 - chance) * cost) / chance
    assert chance * target + (1 - chance) * cost * wager == (1 - edge) * wager
    assert 0 <= target - band.upper_minor < 1
    assert band.lower_minor == max(wager, -((-band.upper_minor * 10) // 11))


@given(wagers, edges, st.integers(1, 9999))
def test_band_without_cost_is_target_over_1_1(wager: int, e: int, p: int) -> None:
    band = target_band(wager, e, p, 0, False)
    target = Fraction(wager * (10000 - e), p)
    assert 0 <= target - band.upper_minor < 1
    assert 0 <= band.lower_minor - Fraction(band.upper_minor, 1) / Fraction(11, 10) < 1


@given(wagers, edges, costs, st.data())
def test_no_loss_offered_chances_are_worth_the_stake(
    wager: int, e: int, c: int, data: st.DataObject
) -> None:
    settings = UpgraderSettings(
        e, (), 1, 9999, 0, 0, True, True, no_loss=True, nuggets_cost_percent=c
    )
    limit = max_chance_bps(settings)
    assume(limit >= 1)
    p = data.draw(st.integers(1, limit))
    band = target_band(wager, e, p, c, True)
    assert band.lower_minor >= wager
    assert band.upper_minor >= wager  # the exact target is worth the stake: band not empty
    assert band.lower_minor <= band.upper_minor
    assert Fraction(limit, 10000) <= 1 - Fraction(e, 10000) / (1 - Fraction(c, 100))
    assert Fraction(limit + 1, 10000) > 1 - Fraction(e, 10000) / (1 - Fraction(c, 100)) or (
        limit == min(9999, 10000 - e)
    )


@given(
    e=edges,
    c=costs,
    no_loss=st.booleans(),
    presets=st.lists(st.integers(1, 10000), max_size=8),
    default=st.integers(1, 10000),
    maximum=st.integers(0, 10000),
    limits=st.tuples(st.integers(0, 10**9), st.integers(0, 10**9)).map(sorted),
)
def test_derived_config_invariants(
    e: int,
    c: int,
    no_loss: bool,
    presets: list[int],
    default: int,
    maximum: int,
    limits: list[int],
) -> None:
    settings = UpgraderSettings(
        e,
        tuple(presets),
        default,
        maximum,
        limits[0],
        limits[1],
        True,
        False,
        no_loss=no_loss,
        nuggets_cost_percent=c,
    )
    config = derive_selector_config(settings, EUR, USD)
    offered = config.chance_presets_bps
    assert list(offered) == sorted(set(offered))
    assert set(offered) == {p for p in presets if p <= max_chance_bps(settings)}
    assert config.available is (len(offered) > 0)
    assert all(1 <= p <= config.max_chance_bps < 10000 for p in offered)
    if config.available:
        assert config.default_chance_bps in offered
        assert config.max_chance_bps == max_chance_bps(settings) <= maximum
        assert config.max_chance_bps <= 10000 - e
        if default in offered:
            assert config.default_chance_bps == default
        elif any(p <= default for p in offered):
            assert config.default_chance_bps == max(p for p in offered if p <= default)
        else:
            assert config.default_chance_bps == offered[0]
    else:
        assert (config.max_chance_bps, config.default_chance_bps) == (0, 0)
    assert config.min_wager_minor <= config.max_wager_minor


def item(item_id: int, value: int, **changes: object) -> CatalogItem:
    fields: dict[str, object] = {
        "item_id": item_id,
        "names": (("de", f"Ding {item_id}"), ("en", f"Thing {item_id}")),
        "value_minor": value,
        "image_url": f"https://img.example/{item_id}.png",
        "active": True,
        "fulfillable": True,
        "cashback_bps": 9000,
        "collectible": False,
    }
    fields.update(changes)
    return CatalogItem(**fields)  # type: ignore[arg-type]


def test_localised_name_fallbacks() -> None:
    names = (
        ("fr", "Billet"),
        ("de", "Goldenes Ticket"),
        ("en", "Golden Ticket"),
        ("pt-BR", "Bilhete"),
    )
    assert localised_name(names, "de") == "Goldenes Ticket"
    assert localised_name(names, "DE") == "Goldenes Ticket"
    assert localised_name(names, "de-AT") == "Goldenes Ticket"
    assert localised_name(names, "de_at") == "Goldenes Ticket"
    assert localised_name(names, "pt_br") == "Bilhete"
    assert localised_name(names, "pt-PT") == "Bilhete"
    assert localised_name(names, "it") == "Golden Ticket"
    assert localised_name(names, None) == "Golden Ticket"
    assert localised_name(names, "") == "Golden Ticket"
    assert localised_name(names, "x-🙂-???") == "Golden Ticket"
    assert localised_name((("fr", "Billet"), ("en-GB", "Ticket")), "es") == "Ticket"
    assert localised_name((("fr", "Billet"), ("nl", "Kaartje")), "es") == "Billet"
    assert localised_name((), "de") == ""
    assert localised_name((("de-AT", "Sackerl"), ("de", "Tüte")), "de-at") == "Sackerl"


def test_prize_of_reprices_and_localises() -> None:
    assert prize_of(item(7, 1234), EUR, USD, "de-CH") == Prize(
        7, "Ding 7", 1357, "USD", "https://img.example/7.png"
    )  # 12.34 EUR * 1.1 = 13.574 USD -> 1357
    assert prize_of(item(8, 1, image_url=None), EUR, JPY, None) == Prize(
        8, "Thing 8", 2, "JPY", None
    )  # 0.01 EUR * 160 = 1.6 JPY


def test_eligibility() -> None:
    assert is_eligible(item(1, 100))
    assert not is_eligible(item(1, 100, active=False))
    assert not is_eligible(item(1, 100, fulfillable=False))


def test_select_prizes_order_band_and_limit() -> None:
    catalog = [
        item(1, 1900),
        item(2, 1728),
        item(3, 1727),
        item(4, 1901),
        item(5, 1800),
        item(6, 1800),
        item(7, 1850, active=False),
        item(8, 1850, fulfillable=False),
        item(9, 1899),
    ]
    band = target_band(1000, 500, 5000, 0, False)
    prizes = select_prizes(reversed(catalog), band, EUR, EUR, "en", 24)
    assert [(p.item_id, p.value_minor) for p in prizes] == [
        (1, 1900),
        (9, 1899),
        (5, 1800),
        (6, 1800),
        (2, 1728),
    ]
    assert [p.item_id for p in select_prizes(catalog, band, EUR, EUR, "en", 3)] == [1, 9, 5]
    assert select_prizes(catalog, band, EUR, EUR, "en", 0) == []
    assert select_prizes(catalog, Band(5000, 6000), EUR, EUR, "en", 24) == []


def test_select_prizes_compares_repriced_values() -> None:
    band = target_band(1100, 500, 5000, 0, False)  # USD [1900, 2090]
    catalog = [item(1, 1727), item(2, 1728), item(3, 1900), item(4, 1901), item(5, 1864)]
    prizes = select_prizes(catalog, band, EUR, USD, "de", 24)
    # 1727 -> 1899.7 -> 1900 (in); 1901 -> 2091.1 -> 2091 (out)
    assert [(p.item_id, p.value_minor, p.currency) for p in prizes] == [
        (3, 2090, "USD"),
        (5, 2050, "USD"),
        (2, 1901, "USD"),
        (1, 1900, "USD"),
    ]
    assert prizes[0].name == "Ding 3"
    half = Currency("XTS", Fraction(1, 2), 2)
    tied = [item(5, 1236), item(4, 1235), item(3, 1237)]  # 618, 617.5 -> 618, 618.5 -> 618
    prizes = select_prizes(tied, Band(600, 700), EUR, half, None, 24)
    assert [(p.item_id, p.value_minor) for p in prizes] == [(3, 618), (4, 618), (5, 618)]

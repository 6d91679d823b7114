"""The Upgrader's play checks as pure functions: a refusal (code and words) or None."""

from __future__ import annotations

from domain.catalog import CatalogItem
from domain.refusals import Refusal
from domain.upgrader_checks import (
    chance_refusal,
    game_refusal,
    mode_refusal,
    target_refusal,
    wager_refusal,
)
from domain.upgrader_rules import Band, derive_selector_config
from tests.unit.test_band import EUR, USD
from tests.unit.test_band import PLAIN as SETTINGS

SELECTOR_USD = derive_selector_config(SETTINGS, EUR, USD)


def _item(value: int, *, active: bool = True, fulfillable: bool = True) -> CatalogItem:
    return CatalogItem(7, (("en", "Seven"),), value, None, active, fulfillable, None, False)


def test_game_refusal_names_the_upgrader_unless_enabled() -> None:
    assert game_refusal(["boxes", "upgrader"]) is None
    assert game_refusal(["boxes"]) == Refusal(
        "GAME_DISABLED", "the Upgrader is not enabled for this operator"
    )


def test_mode_refusal_per_mode_and_for_an_unknown_mode() -> None:
    assert mode_refusal(SETTINGS, "balance") is None
    assert mode_refusal(SETTINGS, "items") == Refusal(
        "UPGRADER_MODE_DISABLED", "the Upgrader's items mode is switched off for this operator"
    )
    assert mode_refusal(SETTINGS, "boxes") == Refusal(
        "UPGRADER_MODE_DISABLED", "the Upgrader's boxes mode is switched off for this operator"
    )


def test_chance_refusal_lists_the_offered_presets() -> None:
    assert chance_refusal(SELECTOR_USD, 2500) is None
    assert chance_refusal(SELECTOR_USD, 2600) == Refusal(
        "UPGRADER_CHANCE_INVALID",
        "chanceBps 2600 is not one of the offered presets [1000, 2500, 5000, 7500, 9000]",
    )


def test_wager_refusal_uses_the_limits_repriced_into_the_currency() -> None:
    assert (SELECTOR_USD.min_wager_minor, SELECTOR_USD.max_wager_minor) == (110, 110_000)
    assert wager_refusal(SELECTOR_USD, 110) is None
    assert wager_refusal(SELECTOR_USD, 110_000) is None
    assert wager_refusal(SELECTOR_USD, 109) == Refusal(
        "UPGRADER_WAGER_OUT_OF_RANGE", "wager 109 is outside 110..110000 USD"
    )
    assert wager_refusal(SELECTOR_USD, 110_001) == Refusal(
        "UPGRADER_WAGER_OUT_OF_RANGE", "wager 110001 is outside 110..110000 USD"
    )


def test_target_refusal_needs_an_eligible_item_in_band_after_repricing() -> None:
    band = Band(1100, 2200)
    # 1000 EUR minor is 1100 USD minor: the band's lower edge
    assert target_refusal(_item(1000), 7, band, EUR, USD) is None
    assert target_refusal(_item(2000), 7, band, EUR, USD) is None
    refused = Refusal(
        "UPGRADER_PRIZE_OUT_OF_RANGE", "item 7 is not an eligible prize in the band 1100..2200 USD"
    )
    assert target_refusal(_item(999), 7, band, EUR, USD) == refused
    assert target_refusal(_item(2001), 7, band, EUR, USD) == refused
    assert target_refusal(_item(1000, active=False), 7, band, EUR, USD) == refused
    assert target_refusal(_item(1000, fulfillable=False), 7, band, EUR, USD) == refused
    assert target_refusal(None, 7, band, EUR, USD) == refused

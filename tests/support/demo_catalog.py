"""The demo configuration (``ops/demo/config.toml``) seen through the platform's own rules:
the bands and prize lists a player meets, for the unit and browser tests of the demo."""

from __future__ import annotations

from pathlib import Path

from application.config.directory import Directory, Operator
from application.config.load import load_config
from application.games.upgrader.quote import upgrader_settings
from domain.money import Currency
from domain.stake_counting import count_item, displayed
from domain.upgrader_rules import Band, PriceIndex, derive_selector_config, target_band

ROOT = Path(__file__).resolve().parents[2]
DEMO = Directory.from_config(load_config(ROOT / "ops" / "demo" / "config.toml", env={}))
OPERATOR: Operator = DEMO.operators["demo"]
BASE: Currency = OPERATOR.base
CONFIG = derive_selector_config(upgrader_settings(OPERATOR), BASE, BASE)
INDEX = PriceIndex(DEMO.catalog.values(), BASE, BASE)


def app_default_wager() -> int:
    """What the game app pre-selects (``upgrader.js`` ``start``): the larger of the minimum
    wager and 10 major units, at most the maximum."""
    return min(max(CONFIG.min_wager_minor, 10 * 10**BASE.exponent), CONFIG.max_wager_minor)


def band_of(stake_minor: int, chance_bps: int) -> Band:
    settings = upgrader_settings(OPERATOR)
    return target_band(
        stake_minor, settings.house_edge_bps, chance_bps, settings.nuggets_cost, settings.no_loss
    )


def prizes_per_preset(stake_minor: int) -> dict[int, list[str]]:
    """The prize names the platform answers for ``stake_minor`` at each offered preset."""
    limit = upgrader_settings(OPERATOR).prize_list_limit
    return {
        chance: [prize.name for prize in INDEX.select(band_of(stake_minor, chance), "en", limit)]
        for chance in CONFIG.chance_presets_bps
    }


def item_id_named(name: str) -> int:
    return next(i for i, item in DEMO.catalog.items() if dict(item.names)["en"] == name)


def counted_stake(item_id: int) -> int:
    """What a freshly won item counts for when staked alone (decisions §5), in EUR minor."""
    item = DEMO.catalog[item_id]
    counted = count_item(
        item.value_minor,
        item.value_minor,
        item.collectible,
        item.cashback_bps,
        OPERATOR.config.credits_share_bps,
    )
    value, _ = displayed(counted, BASE, BASE)
    return value

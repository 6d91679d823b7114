"""The demo catalogue offers several prizes wherever a new player looks first.

A player who opens the demo sees the wager the game app pre-selects (``app.js``: the
larger of the minimum wager and 10 major units, at most the maximum; the browser test
``test_a_phone_player_sees_several_prizes_and_plays_without_sideways_scrolling`` checks
the app shows EUR 10.00) at the default chance, and may click every chance preset. After
a win they may stake the prize in items mode and click every preset again. At each of
those stops the demo must offer several tiles, not one: the bands are computed with the
platform's own rules (``domain.upgrader_rules``, ``domain.stake_counting``) from
``ops/demo/config.toml``, so a change of the demo that empties a band fails here.
"""

from __future__ import annotations

from pathlib import Path

from application.config import load_config
from application.directory import Directory, Operator
from domain.money import Currency
from domain.stake_counting import count_item, displayed
from domain.upgrader_rules import PriceIndex, derive_selector_config, target_band

ROOT = Path(__file__).resolve().parents[2]
DEMO = Directory.from_config(load_config(ROOT / "ops" / "demo" / "config.toml", env={}))
OPERATOR: Operator = DEMO.operators["demo"]
BASE: Currency = OPERATOR.base
CONFIG = derive_selector_config(OPERATOR.settings, BASE, BASE)
INDEX = PriceIndex(DEMO.catalog.values(), BASE, BASE)


def app_default_wager() -> int:
    """What app.js pre-selects: max(minimum, 10 major units), at most the maximum."""
    return min(max(CONFIG.min_wager_minor, 10 * 10**BASE.exponent), CONFIG.max_wager_minor)


def prizes_per_preset(stake_minor: int) -> dict[int, list[str]]:
    """The prize list the platform answers for ``stake_minor`` at each offered preset."""
    settings = OPERATOR.settings
    answer = {}
    for chance in CONFIG.chance_presets_bps:
        band = target_band(
            stake_minor, settings.house_edge_bps, chance, settings.nuggets_cost, settings.no_loss
        )
        prizes = INDEX.select(band, "en", settings.prize_list_limit)
        answer[chance] = [prize.name for prize in prizes]
    return answer


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


def counts(prizes: dict[int, list[str]]) -> dict[int, int]:
    return {chance: len(names) for chance, names in prizes.items()}


def test_the_demo_offers_what_the_app_preselects() -> None:
    assert BASE.code == "EUR"
    assert CONFIG.chance_presets_bps == (1000, 2500, 5000, 7500, 9000)
    assert CONFIG.default_chance_bps == 5000
    assert app_default_wager() == 1000


def test_every_preset_offers_three_prizes_for_the_default_wager() -> None:
    prizes = prizes_per_preset(app_default_wager())
    assert counts(prizes) == {1000: 3, 2500: 3, 5000: 3, 7500: 3, 9000: 3}
    # the prizes a new player can win first (the app pre-selects the first)
    assert prizes[CONFIG.default_chance_bps] == ["Enamel Pin", "Playing Cards", "Keychain"]


def test_every_preset_offers_three_prizes_for_staking_any_first_prize() -> None:
    first_prizes = prizes_per_preset(app_default_wager())[CONFIG.default_chance_bps]
    ids = {dict(DEMO.catalog[i].names)["en"]: i for i in DEMO.catalog}
    stakes = {name: counted_stake(ids[name]) for name in first_prizes}
    assert stakes == {"Enamel Pin": 1710, "Playing Cards": 1710, "Keychain": 1716}
    for name, stake in stakes.items():
        prizes = prizes_per_preset(stake)
        assert counts(prizes) == {1000: 3, 2500: 3, 5000: 3, 7500: 3, 9000: 3}, (name, prizes)


def test_every_demo_item_has_its_own_picture() -> None:
    images = ROOT / "src" / "api" / "static" / "game" / "items"
    urls = [item.image_url for item in DEMO.catalog.values()]
    assert len(set(urls)) == len(urls) == 42
    for item in DEMO.catalog.values():
        assert item.image_url == f"/game/assets/items/{item.item_id}.svg"
        svg = (images / f"{item.item_id}.svg").read_text(encoding="utf-8")
        assert f'aria-label="{dict(item.names)["en"]}"' in svg
    pictures = [(images / f"{item.item_id}.svg").read_bytes() for item in DEMO.catalog.values()]
    assert len(set(pictures)) == len(pictures)

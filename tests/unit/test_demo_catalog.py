"""The demo catalogue offers several prizes wherever a new player looks first.

A player who opens the demo sees the wager the game app pre-selects (EUR 10.00; the
browser test ``tests/e2e/test_game_phone.py`` checks the app shows it and these same
tiles) at the default chance, and may click every chance preset. After a win they may
stake the prize in items mode and click every preset again. At each of those stops the
demo must offer several tiles, not one: the bands are computed with the platform's own
rules (``domain.upgrader_rules``, ``domain.stake_counting``) from ``ops/demo/config.toml``,
so a change of the demo that thins a band out fails here.
"""

from __future__ import annotations

from tests.support.demo_catalog import (
    BASE,
    CONFIG,
    DEMO,
    ROOT,
    app_default_wager,
    counted_stake,
    item_id_named,
    prizes_per_preset,
)

THREE_EVERYWHERE = {1000: 3, 2500: 3, 5000: 3, 7500: 3, 9000: 3}


def counts(prizes: dict[int, list[str]]) -> dict[int, int]:
    return {chance: len(names) for chance, names in prizes.items()}


def test_the_demo_offers_what_the_app_preselects() -> None:
    assert BASE.code == "EUR"
    assert CONFIG.chance_presets_bps == (1000, 2500, 5000, 7500, 9000)
    assert CONFIG.default_chance_bps == 5000
    assert app_default_wager() == 1000


def test_every_preset_offers_three_prizes_for_the_default_wager() -> None:
    prizes = prizes_per_preset(app_default_wager())
    assert counts(prizes) == THREE_EVERYWHERE
    # the prizes a new player can win first (the app pre-selects the first)
    assert prizes[CONFIG.default_chance_bps] == ["Enamel Pin", "Playing Cards", "Keychain"]


def test_every_preset_offers_three_prizes_for_staking_any_first_prize() -> None:
    first_prizes = prizes_per_preset(app_default_wager())[CONFIG.default_chance_bps]
    stakes = {name: counted_stake(item_id_named(name)) for name in first_prizes}
    assert stakes == {"Enamel Pin": 1710, "Playing Cards": 1710, "Keychain": 1716}
    for name, stake in stakes.items():
        prizes = prizes_per_preset(stake)
        assert counts(prizes) == THREE_EVERYWHERE, (name, prizes)


def test_every_demo_item_has_its_own_picture() -> None:
    images = ROOT / "src" / "api" / "static" / "game" / "items"
    urls = [item.image_url for item in DEMO.catalog.values()]
    assert len(set(urls)) == len(urls) == 45  # with the box prizes 300-302
    for item in DEMO.catalog.values():
        assert item.image_url == f"/game/assets/items/{item.item_id}.svg"
        svg = (images / f"{item.item_id}.svg").read_text(encoding="utf-8")
        assert f'aria-label="{dict(item.names)["en"]}"' in svg
    pictures = [(images / f"{item.item_id}.svg").read_bytes() for item in DEMO.catalog.values()]
    assert len(set(pictures)) == len(pictures)

"""The boxes part of the configuration file: ``[[catalog.boxes]]`` versions and
``[operators.boxes]``; each fault is one line naming the key (tests/unit/test_config.py
has the rest of the contract)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import pytest

from api.routes.game import asset_path
from application.config.boxes import box_catalog
from application.config.directory import catalog_item
from application.config.load import load_config, parse_config
from application.config.shape import ConfigError
from tests.support.config import BASE

ROOT = Path(__file__).resolve().parents[2]


def _parse(mutate: Callable[[dict], object]):
    raw = copy.deepcopy(BASE)
    mutate(raw)
    return parse_config(raw, source="cfg.toml", env={})


def _bad(mutate: Callable[[dict], object]) -> str:
    with pytest.raises(ConfigError) as caught:
        _parse(mutate)
    message = str(caught.value)
    assert "\n" not in message
    return message


def _box(raw: dict) -> dict:
    return raw["catalog"]["boxes"][0]


def _add_version(raw: dict, **fields: object) -> None:
    raw["catalog"]["boxes"].append({**copy.deepcopy(_box(raw)), **fields})


def test_boxes_is_a_game_with_its_operator_settings() -> None:
    config = _parse(lambda raw: None)
    op_a = config.operators[0]
    assert op_a.enabled_games == ["upgrader", "boxes"]
    assert op_a.boxes.max_boxes_per_round == 10  # the default
    config = _parse(
        lambda raw: raw["operators"][0].__setitem__("boxes", {"max_boxes_per_round": 100})
    )
    assert config.operators[0].boxes.max_boxes_per_round == 100
    assert _bad(lambda raw: raw["operators"][1].__setitem__("enabled_games", ["roulette"])) == (
        "cfg.toml: operators[1].enabled_games: unknown game 'roulette'"
    )


@pytest.mark.parametrize("count", [0, 101, -1])
def test_max_boxes_per_round_is_1_to_100(count: int) -> None:
    message = _bad(
        lambda raw: raw["operators"][0].__setitem__("boxes", {"max_boxes_per_round": count})
    )
    assert message == "cfg.toml: operators[0].boxes.max_boxes_per_round: must be within 1..100"


def test_an_unknown_key_under_operators_boxes_is_named() -> None:
    message = _bad(lambda raw: raw["operators"][0].__setitem__("boxes", {"max_boxes": 3}))
    assert message == "cfg.toml: operators[0].boxes.max_boxes: unknown key"


def test_a_box_may_list_several_versions_and_active_defaults_to_true() -> None:
    def mutate(raw: dict) -> None:
        _add_version(raw, box_version_id=4, active=False, image_url="/b.svg")

    config = _parse(mutate)
    first, second = config.catalog.boxes
    assert (first.box_version_id, first.active, first.image_url) == (3, True, None)
    assert (second.box_version_id, second.active, second.image_url) == (4, False, "/b.svg")
    catalog = box_catalog(config)
    assert catalog.offered(7) is catalog.version(7, 3)
    assert catalog.version(7, 4) is not None


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda raw: _add_version(raw),
            "catalog.boxes[1].box_version_id: box 7 version 3 is listed twice",
        ),
        (
            lambda raw: _box(raw)["items"][0].__setitem__("weight", 0),
            "catalog.boxes[0].items[0].weight: must be an integer >= 1",
        ),
        (
            lambda raw: _box(raw)["items"][0].__setitem__("weight", -5),
            "catalog.boxes[0].items[0].weight: must be an integer >= 1",
        ),
        (
            lambda raw: _box(raw)["items"][0].__setitem__("weight", 1.5),
            "catalog.boxes[0].items[0].weight: expected `int`, got `float`",
        ),
        (
            lambda raw: _box(raw)["items"][0].__setitem__("weight", True),
            "catalog.boxes[0].items[0].weight: expected `int`, got `bool`",
        ),
        (
            lambda raw: _box(raw).__setitem__(
                "items", [{"item_id": 1, "weight": 2**31}, {"item_id": 2, "weight": 1}]
            ),
            "catalog.boxes[0].items: the weights add up to 2147483649 tickets, above the "
            "2147483648 (2^31) a box may hold",
        ),
        (
            lambda raw: _box(raw)["items"].append({"item_id": 99, "weight": 1}),
            "catalog.boxes[0].items[1].item_id: no catalogue item 99",
        ),
        (
            lambda raw: _box(raw)["items"].append({"item_id": 1, "weight": 4}),
            "catalog.boxes[0].items[1].item_id: item 1 is listed twice in this box",
        ),
        (
            lambda raw: _box(raw).__setitem__("items", []),
            "catalog.boxes[0].items: a box needs at least one item",
        ),
        (
            lambda raw: _box(raw).pop("items"),
            "catalog.boxes[0].items: a box needs at least one item",
        ),
        (
            lambda raw: _box(raw).__setitem__("price_minor", 0),
            "catalog.boxes[0].price_minor: must be within 1..9007199254740991",
        ),
        (
            lambda raw: _box(raw).__setitem__("box_id", 0),
            "catalog.boxes[0].box_id: must be within 1..9007199254740991",
        ),
        (
            lambda raw: _box(raw).__setitem__("box_version_id", 2**53),
            "catalog.boxes[0].box_version_id: must be within 1..9007199254740991",
        ),
        (
            lambda raw: _box(raw).__setitem__("name", {"en": ""}),
            "catalog.boxes[0].name: a box needs a non-empty name",
        ),
        (
            lambda raw: _box(raw).__setitem__("odds", 3),
            "catalog.boxes[0].odds: unknown key",
        ),
        (
            lambda raw: _box(raw)["items"][0].pop("weight"),
            "catalog.boxes[0].items[0].weight: object missing required field `weight`",
        ),
        (
            lambda raw: _box(raw).__setitem__("active", "yes"),
            "catalog.boxes[0].active: expected `bool`, got `str`",
        ),
    ],
)
def test_a_bad_box_names_the_key(mutate: Callable[[dict], object], message: str) -> None:
    assert _bad(mutate) == f"cfg.toml: {message}"


def test_exactly_2_31_tickets_is_allowed() -> None:
    def mutate(raw: dict) -> None:
        _box(raw)["items"] = [{"item_id": 1, "weight": 2**31 - 1}, {"item_id": 2, "weight": 1}]

    assert box_catalog(_parse(mutate)).version(7, 3).total_tickets == 2**31


def test_the_demo_catalogue_offers_three_boxes_with_images() -> None:
    config = load_config(ROOT / "ops" / "demo" / "config.toml", env={})
    assert "boxes" in config.operators[0].enabled_games
    catalog = box_catalog(config)
    items = {item.item_id: catalog_item(item) for item in config.catalog.items}
    offered = catalog.offered_versions()
    assert [v.key for v in offered] == [(1, 2), (2, 1), (3, 1)]
    assert catalog.version(1, 1) is not None and not catalog.version(1, 1).active
    for version in offered:
        assert version.available(items)
        assert 8000 <= version.rtp_bps(items) <= 9000
        urls = [version.image_url, *(items[e.item_id].image_url for e in version.entries)]
        for url in urls:
            assert url is not None and asset_path(url.removeprefix("/game/assets/")), url
    assert {e.item_id for v in offered for e in v.entries} >= {300, 301, 302}

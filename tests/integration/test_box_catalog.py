"""The box catalogue answers (decisions §10) over real HTTP, on SQLite and PostgreSQL.

Every expected number is worked out here from the decisions text: ticket ranges from the
weights, ``probabilityBps = floor(10000 x weight / totalTickets)``, ``rtpBps`` from the
cash-back values, prices and values repriced exactly then half-even, and each ``oddsHash``
as the SHA-256 of the compact JSON written out below.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from application.clock import ManualClock
from application.platform import Platform
from entrypoints.app import create_app
from tests.support.config import make_config, raw_config
from tests.support.live import Api, LiveServer

KEY_B = {"key_id": "key-b", "secret": "secret-b-1"}
KEY_I = {"key_id": "key-i", "secret": "secret-i-1"}
LUCKY = {"en": "Lucky box", "de": "Glücksbox"}


def _raw(database_url: str) -> dict[str, Any]:
    raw = raw_config(database_url)
    op_a, op_b = raw["operators"][0], raw["operators"][1]
    op_a["currencies"].append({"code": "JPY", "rate": "162.5", "exponent": 0})
    op_b["keys"][0]["catalog_access"] = True  # op-b may read catalogues, offers no boxes
    raw["catalog"]["items"] += [
        {"item_id": 20, "name": {"en": "Sticker", "de": "Aufkleber"}, "value_minor": 4},
        {
            "item_id": 21,
            "name": {"en": "Pin", "de": "Anstecker"},
            "value_minor": 12,
            "cashback_bps": 9000,
            "image_url": "/game/assets/items/21.svg",
        },
    ]
    raw["catalog"]["boxes"] += [
        {"box_id": 40, "box_version_id": 1, "name": LUCKY, "price_minor": 250, "items": [_e(1, 5)]},
        {
            "box_id": 40,
            "box_version_id": 2,
            "name": LUCKY,
            "image_url": "/game/assets/boxes/40.svg",
            "price_minor": 1235,
            "items": [_e(9, 1), _e(2, 2), _e(21, 4), _e(20, 2)],
        },
        {
            "box_id": 40,
            "box_version_id": 5,
            "name": LUCKY,
            "price_minor": 999,
            "active": False,
            "items": [_e(3, 1)],
        },
        {
            "box_id": 41,
            "box_version_id": 1,
            "name": {"en": "Retro box"},
            "price_minor": 100,
            "items": [_e(12, 1), _e(1, 1)],
        },
        {
            "box_id": 42,
            "box_version_id": 1,
            "name": {"en": "Vault"},
            "price_minor": 400,
            "active": False,
            "items": [_e(11, 1), _e(1, 3)],
        },
    ]
    return raw


def _e(item_id: int, weight: int) -> dict[str, int]:
    return {"item_id": item_id, "weight": weight}


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("ascii")).hexdigest()


H7 = _hash('{"boxId":7,"boxVersionId":3,"priceMinor":300,"items":[[1,1]]}')
H40_1 = _hash('{"boxId":40,"boxVersionId":1,"priceMinor":250,"items":[[1,5]]}')
H40_2 = _hash('{"boxId":40,"boxVersionId":2,"priceMinor":1235,"items":[[9,1],[2,2],[21,4],[20,2]]}')
H40_5 = _hash('{"boxId":40,"boxVersionId":5,"priceMinor":999,"items":[[3,1]]}')
H41 = _hash('{"boxId":41,"boxVersionId":1,"priceMinor":100,"items":[[12,1],[1,1]]}')
H42 = _hash('{"boxId":42,"boxVersionId":1,"priceMinor":400,"items":[[11,1],[1,3]]}')


def _item(
    item_id: int, name: str, value: int, weight: int, first: int, last: int, bps: int
) -> dict[str, Any]:
    image = "/game/assets/items/21.svg" if item_id == 21 else None
    return {
        "itemId": item_id,
        "name": name,
        "valueMinor": value,
        "imageUrl": image,
        "weight": weight,
        "ticketFrom": first,
        "ticketTo": last,
        "probabilityBps": bps,
    }


def _lucky_v2(currency: str, price: int, names: list[str], values: list[int]) -> dict[str, Any]:
    """Box 40 version 2: 9 tickets (1 + 2 + 4 + 2). rtpBps = floor((1 x 9000 x 9000 +
    2 x 960 x 9000 + 4 x 12 x 9000 + 2 x 4 x 0) / (9 x 1235)) = floor(98712000 / 11115) =
    8880 (88.80 %), in every currency."""
    return {
        "boxId": 40,
        "boxVersionId": 2,
        "name": names[0],
        "imageUrl": "/game/assets/boxes/40.svg",
        "priceMinor": price,
        "currency": currency,
        "oddsHash": H40_2,
        "totalTickets": 9,
        "rtpBps": 8880,
        "available": True,
        "offered": True,
        "items": [
            _item(9, names[1], values[0], 1, 0, 0, 1111),  # floor(10000 / 9)
            _item(2, names[2], values[1], 2, 1, 2, 2222),
            _item(21, names[3], values[2], 4, 3, 6, 4444),
            _item(20, names[4], values[3], 2, 7, 8, 2222),
        ],
    }


EN = ["Lucky box", "Item 9", "Item 2", "Pin", "Sticker"]
DE = ["Glücksbox", "Ding 9", "Ding 2", "Anstecker", "Aufkleber"]
# EUR as configured; USD at 1.1: 1235 -> 1358.5 -> 1358 (half-even), 12 -> 13.2 -> 13;
# JPY at 162.5 with no minor digits (x 1.625): 1235 -> 2006.875 -> 2007, 12 -> 19.5 -> 20
# (half-even, up to the even neighbour), 4 -> 6.5 -> 6 (down to the even neighbour).
LUCKY_EUR = _lucky_v2("EUR", 1235, EN, [9000, 960, 12, 4])
LUCKY_USD_DE = _lucky_v2("USD", 1358, DE, [9900, 1056, 13, 4])
LUCKY_JPY_DE = _lucky_v2("JPY", 2007, DE, [14625, 1560, 20, 6])

BOX_7 = {
    "boxId": 7,
    "boxVersionId": 3,
    "name": "Box",
    "imageUrl": None,
    "priceMinor": 300,
    "currency": "EUR",
    "oddsHash": H7,
    "totalTickets": 1,
    "rtpBps": 15000,  # 500 x 9000 / (1 x 300)
    "available": True,
    "offered": True,
    "items": [_item(1, "Item 1", 500, 1, 0, 0, 10000)],
}
RETRO = {
    "boxId": 41,
    "boxVersionId": 1,
    "name": "Retro box",
    "imageUrl": None,
    "priceMinor": 100,
    "currency": "EUR",
    "oddsHash": H41,
    "totalTickets": 2,
    "rtpBps": 22500,  # (1 x 1850 x 0 + 1 x 500 x 9000) / (2 x 100)
    "available": False,  # item 12 is no longer active
    "offered": True,
    "items": [_item(12, "Retired", 1850, 1, 0, 0, 5000), _item(1, "Item 1", 500, 1, 1, 1, 5000)],
}


@pytest.fixture
def api(database_url: str) -> Iterator[Api]:
    clock = ManualClock(start=1_767_225_600.0)
    platform = Platform(make_config(database_url, _raw(database_url)), clock=clock)
    platform.record_configuration()
    with LiveServer(create_app(platform, workers=False)) as server:
        client = Api(server.url, clock)
        yield client
        client.close()
    platform.close()


def _session(api: Api, **key: str) -> str:
    body = json.dumps({"playerExternalId": "p-1", "gameKey": "upgrader", "target": {}}).encode()
    launch = api.s2s("POST", "/api/s2s/launches", body, **key)
    assert launch.status_code == 200, launch.text
    init = api.http.post(
        "/api/play/session/init", json={"launchToken": launch.json()["launchToken"]}
    )
    assert init.status_code == 200, init.text
    return init.json()["sessionToken"]


def _error(response: httpx.Response) -> tuple[int, str]:
    return response.status_code, response.json()["error"]["code"]


def test_the_offered_versions_in_the_base_currency(api: Api) -> None:
    answer = api.s2s("GET", "/api/s2s/boxes")
    assert answer.status_code == 200
    # box 40: versions 1 and 2 active, 5 inactive: 2 is offered; box 42 has no active version
    assert answer.json() == {"boxes": [BOX_7, LUCKY_EUR, RETRO]}
    token = _session(api)
    assert api.play("GET", "/api/play/boxes", token).content == answer.content


@pytest.mark.parametrize(
    ("currency", "locale", "expected"),
    [("USD", "de", LUCKY_USD_DE), ("JPY", "de-AT", LUCKY_JPY_DE), ("EUR", "fr", LUCKY_EUR)],
)
def test_repriced_and_localised(api: Api, currency: str, locale: str, expected: dict) -> None:
    query = {"currency": currency, "locale": locale}
    listed = api.s2s("GET", "/api/s2s/boxes", params=query).json()["boxes"]
    assert listed[1] == expected
    assert [b["currency"] for b in listed] == [currency] * 3
    one = api.s2s("GET", "/api/s2s/boxes/40/versions/2", params=query)
    assert one.json() == expected
    token = _session(api)
    assert api.play("GET", "/api/play/boxes/40/versions/2", token, params=query).json() == (
        expected
    )
    assert api.play("GET", "/api/play/boxes", token, params=query).json()["boxes"] == listed


def test_versions_that_are_not_offered_are_readable_by_id(api: Api) -> None:
    token = _session(api)
    for path in ("/api/s2s/boxes/40/versions/5", "/api/play/boxes/40/versions/5"):
        answer = api.s2s("GET", path) if "s2s" in path else api.play("GET", path, token)
        assert answer.json() == {
            "boxId": 40,
            "boxVersionId": 5,
            "name": "Lucky box",
            "imageUrl": None,
            "priceMinor": 999,
            "currency": "EUR",
            "oddsHash": H40_5,
            "totalTickets": 1,
            "rtpBps": 9009,  # 1000 x 9000 / (1 x 999) = 9009.009...
            "available": True,
            "offered": False,  # inactive
            "items": [_item(3, "Item 3", 1000, 1, 0, 0, 10000)],
        }
    active_but_older = api.s2s("GET", "/api/s2s/boxes/40/versions/1").json()
    assert (active_but_older["oddsHash"], active_but_older["offered"]) == (H40_1, False)
    assert active_but_older["rtpBps"] == 18000  # 5 x 500 x 9000 / (5 x 250)
    vault = api.s2s("GET", "/api/s2s/boxes/42/versions/1", params={"currency": "USD"}).json()
    assert (vault["oddsHash"], vault["offered"], vault["priceMinor"]) == (H42, False, 440)
    assert [(i["ticketFrom"], i["ticketTo"], i["probabilityBps"]) for i in vault["items"]] == [
        (0, 0, 2500),
        (1, 3, 7500),
    ]


def test_refusals(api: Api) -> None:
    token = _session(api)
    for path in ("/api/s2s/boxes/40/versions/3", "/api/s2s/boxes/99/versions/1"):
        assert _error(api.s2s("GET", path)) == (404, "BOX_NOT_FOUND")
    assert api.s2s("GET", "/api/s2s/boxes/40/versions/3").json()["error"]["message"] == (
        "box 40 version 3 not found"
    )
    huge = api.s2s("GET", f"/api/s2s/boxes/{'9' * 300}/versions/1").json()  # not echoed
    assert huge == {"error": {"code": "BOX_NOT_FOUND", "message": "no such box"}}
    assert _error(api.s2s("GET", "/api/s2s/boxes/x/versions/1")) == (404, "NOT_FOUND")
    assert _error(api.play("GET", "/api/play/boxes/40/versions/4", token)) == (
        404,
        "BOX_NOT_FOUND",
    )
    for path in ("/api/s2s/boxes", "/api/s2s/boxes/40/versions/2"):
        unsupported = api.s2s("GET", path, params={"currency": "GBP"})
        assert _error(unsupported) == (422, "UNSUPPORTED_CURRENCY")
        assert _error(api.s2s("GET", path, **KEY_I)) == (403, "CATALOG_ACCESS_DENIED")
        # on S2S the key's catalogue access decides, not the operator's games: op-b may
        # read the catalogue (priced in its own currencies) before it offers boxes
        assert api.s2s("GET", path, **KEY_B).status_code == 200
    # an unknown currency for an unknown version: the currency is checked first
    mixed = api.s2s("GET", "/api/s2s/boxes/99/versions/1", params={"currency": "GBP"})
    assert _error(mixed) == (422, "UNSUPPORTED_CURRENCY")
    assert api.s2s("GET", "/api/s2s/boxes", **KEY_B).json() == {
        "boxes": [BOX_7, LUCKY_EUR, RETRO]  # op-b's base currency is EUR too
    }
    op_b = _session(api, **KEY_B)
    for path in ("/api/play/boxes", "/api/play/boxes/40/versions/2"):
        disabled = api.play("GET", path, op_b)
        assert _error(disabled) == (403, "GAME_DISABLED")
        assert disabled.json()["error"]["message"] == (
            "the game 'boxes' is unknown or not enabled for this operator"
        )
        assert _error(api.play("GET", path, "not-a-session")) == (401, "SESSION_INVALID")
        assert _error(api.play("GET", path, token, params={"currency": "GBP"})) == (
            422,
            "UNSUPPORTED_CURRENCY",
        )

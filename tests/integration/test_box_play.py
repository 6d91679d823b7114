"""Buying and opening boxes (decisions §10) over real HTTP, on SQLite and PostgreSQL,
against the real reference wallet on loopback.

Every expected value is worked out here from the decisions text: the price (one box
repriced exactly, rounded half-even once, then multiplied), each reel's ticket from the
revealed server seed after a rotation (HMAC-SHA256 with hmac/struct, rejection sampling
over ``totalTickets``), the item whose ticket range holds it, the inventory item ids
(``inventory_item_number``'s SHA-256 written again), the values and cash-back estimates
(exact fractions, half-even). After every test the wallet's net debits equal the bets of
settled rounds and no rollback is owed.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import struct
import threading
import time
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import httpx
import pytest

from application.clock import ManualClock
from application.platform import Platform
from ops.reference_operator.wallet import ThreadedWalletServer
from tests.support.config import make_config, raw_config
from tests.support.ledger import open_uncertain_attempts, settled_balance_bets
from tests.support.live import Api
from tests.support.waiting import wait_until

OP = "op-a"
PURCHASE = "/api/s2s/purchase"
OPEN = "/api/play/rounds/open"
KEY_B = {"key_id": "key-b", "secret": "secret-b-1"}
KEY_OFF = {"key_id": "key-off", "secret": "secret-off-1"}
LUCKY = {"en": "Lucky box", "de": "Glücksbox"}
# box 50 version 2, the offered one: 9 tickets; (item, weight), values in EUR minor units
TABLE = [(9, 1), (2, 2), (21, 4), (20, 2)]
VALUES = {9: 9000, 2: 960, 21: 12, 20: 4}
NAMES = {
    "en": {9: "Item 9", 2: "Item 2", 21: "Pin", 20: "Sticker"},
    "de": {9: "Ding 9", 2: "Ding 2", 21: "Anstecker", 20: "Sticker"},  # 20: only in English
}
CASHBACK = {9: 9000, 2: 9000, 21: 9000, 20: None}
RATES = {"EUR": (Fraction(1), 2), "USD": (Fraction(11, 10), 2), "JPY": (Fraction(1625, 10), 0)}
CREDITS_SHARE = Fraction(8000, 10000)
PRICE = 1235
ODDS = '{"boxId":50,"boxVersionId":2,"priceMinor":1235,"items":[[9,1],[2,2],[21,4],[20,2]]}'
ODDS_HASH = hashlib.sha256(ODDS.encode("ascii")).hexdigest()
MAX_BOXES = 5


def _e(item_id: int, weight: int) -> dict[str, int]:
    return {"item_id": item_id, "weight": weight}


def _raw(database_url: str) -> dict[str, Any]:
    raw = raw_config(database_url)
    op_a = raw["operators"][0]
    op_a["currencies"].append({"code": "JPY", "rate": "162.5", "exponent": 0})
    op_a["credits_share_bps"] = 8000
    op_a["boxes"] = {"max_boxes_per_round": MAX_BOXES}
    raw["catalog"]["items"] += [
        {"item_id": 20, "name": {"en": "Sticker"}, "value_minor": 4},
        {
            "item_id": 21,
            "name": {"en": "Pin", "de": "Anstecker"},
            "value_minor": 12,
            "cashback_bps": 9000,
            "image_url": "/game/assets/items/21.svg",
        },
    ]
    raw["catalog"]["boxes"] += [
        {"box_id": 50, "box_version_id": 1, "name": LUCKY, "price_minor": 1000,
         "items": [_e(1, 1)]},
        {
            "box_id": 50,
            "box_version_id": 2,
            "name": LUCKY,
            "price_minor": PRICE,
            "items": [_e(i, w) for i, w in TABLE],
        },
        {"box_id": 51, "box_version_id": 1, "name": {"en": "Retro"}, "price_minor": 100,
         "items": [_e(12, 1), _e(1, 1)]},  # item 12 is inactive: unavailable
        {"box_id": 52, "box_version_id": 1, "name": {"en": "Vault"}, "price_minor": 400,
         "active": False, "items": [_e(11, 1)]},  # no active version
    ]  # fmt: skip
    return raw


@pytest.fixture
def platform(
    database_url: str, clock: ManualClock, wallet: ThreadedWalletServer
) -> Iterator[Platform]:
    config = make_config(
        database_url,
        _raw(database_url),
        wallet_url=wallet.url,
        wallet_timeout_seconds=1,
        uncertain_debit_grace_seconds=30,
        max_plays_in_flight=64,  # 20 copies of one purchase at once are all admitted
    )
    platform = Platform(config, clock=clock)
    platform.record_configuration()
    yield platform
    platform.close()


@pytest.fixture(autouse=True)
def money_invariant(platform: Platform, wallet: ThreadedWalletServer, api: Api) -> Iterator[None]:
    yield
    wait_until(lambda: open_uncertain_attempts(platform) == 0, timeout=15, what="no open rollbacks")
    assert wallet.ledger.net_debits(OP) == settled_balance_bets(platform, OP)


# -- what the decisions say, written again ------------------------------------------------


def _reprice(amount: Fraction | int, currency: str) -> int:
    """Base minor units (EUR, 2 digits) into ``currency``: exact, then half-even."""
    rate, exponent = RATES[currency]
    return round(Fraction(amount) * rate * Fraction(10) ** (exponent - 2))


def _ticket(server_seed: str, client_seed: str, nonce: int, space: int) -> int:
    bound = (2**32 // space) * space
    cursor = 0
    while True:
        message = f"{client_seed}:{nonce}:{cursor}".encode("ascii")
        digest = hmac.new(server_seed.encode("ascii"), message, hashlib.sha256).digest()
        for word in struct.unpack(">8I", digest):
            if word < bound:
                return word % space
        cursor += 1


def _item_for(ticket: int) -> int:
    end = 0
    for item_id, weight in TABLE:
        end += weight
        if ticket < end:
            return item_id
    raise AssertionError(ticket)


def _inventory_id(public_id: str, k: int) -> int:
    digest = hashlib.sha256(f"inventory:{public_id[2:]}:{k}".encode()).digest()
    return (int.from_bytes(digest[:7], "big") >> 4) or 1


def _won(public_id: str, k: int, item_id: int, currency: str, locale: str) -> dict[str, Any]:
    value = VALUES[item_id]
    cashback, uncredited = None, {"priceFallMinor": 0, "priceRiseMinor": 0, "creditsShareMinor": 0}
    if CASHBACK[item_id] is not None:
        paid = Fraction(value * CASHBACK[item_id], 10000)
        cashback = _reprice(paid * CREDITS_SHARE, currency)
        uncredited["creditsShareMinor"] = _reprice(paid * (1 - CREDITS_SHARE), currency)
    return {
        "inventoryItemId": _inventory_id(public_id, k),
        "itemId": item_id,
        "name": NAMES[locale][item_id],
        "valueMinor": _reprice(value, currency),
        "imageUrl": "/game/assets/items/21.svg" if item_id == 21 else None,
        "cashbackMinor": cashback,
        "cashbackUncredited": uncredited,
        "currency": currency,
        "state": "unresolved",
    }


def _expected(
    answer: dict[str, Any],
    seeds: dict[str, Any],
    currency: str,
    count: int,
    settled: float,
    locale: str = "en",
) -> dict[str, Any]:
    """The whole answer of a purchase, from the revealed seeds and the decisions text;
    only the round's id and the wallet's balance are taken from the answer."""
    public_id = answer["round"]["publicId"]
    first = answer["round"]["fairness"]["nonce"]
    nonces = list(range(first, first + count))
    tickets = [_ticket(seeds["serverSeed"], seeds["clientSeed"], n, 9) for n in nonces]
    items = [_item_for(t) for t in tickets]
    won = [_won(public_id, k, item, currency, locale) for k, item in enumerate(items)]
    bet = count * _reprice(PRICE, currency)
    return {
        "round": {
            "publicId": public_id,
            "status": "settled",
            "game": "boxes",
            "betMinor": bet,
            "payoutMinor": sum(w["valueMinor"] for w in won),
            "currency": currency,
            "box": {
                "boxId": 50,
                "boxVersionId": 2,
                "count": count,
                "oddsHash": ODDS_HASH,
                "totalTickets": 9,
            },
            "fairness": {
                "serverSeedHash": seeds["serverSeedHash"],
                "clientSeed": seeds["clientSeed"],
                "nonce": first,
                "algorithmKey": "hmac_sha256_v1",
            },
            "settledAt": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(settled)),
        },
        "wonItems": won,
        "balanceAfterMinor": answer["balanceAfterMinor"],
        "facts": {
            "currency": currency,
            "reels": [
                {
                    "boxId": 50,
                    "boxVersionId": 2,
                    "nonce": n,
                    "ticket": t,
                    "totalTickets": 9,
                    "itemId": i,
                }
                for n, t, i in zip(nonces, tickets, items, strict=True)
            ],
            "deal": {"stakeCountedMinor": bet},
        },
    }


# -- helpers --------------------------------------------------------------------------------


def _body(player: str | None, action: str, **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"clientActionId": action, "boxId": 50, "boxVersionId": 2}
    if player is not None:
        body["playerExternalId"] = player
    return {**body, **fields}


def _purchase(api: Api, body: dict[str, Any], **key: str) -> httpx.Response:
    return api.s2s("POST", PURCHASE, json.dumps(body).encode(), **key)


def _error(response: httpx.Response) -> tuple[int, str]:
    return response.status_code, response.json()["error"]["code"]


def _launch(api: Api, player: str, target: Any, game: str = "boxes", **key: str):
    body = {"playerExternalId": player, "gameKey": game, "target": target}
    return api.s2s("POST", "/api/s2s/launches", json.dumps(body).encode(), **key)


def _session(api: Api, player: str) -> tuple[str, dict[str, Any]]:
    launch = _launch(api, player, {"boxId": 50})
    assert launch.status_code == 200, launch.text
    token = launch.json()["launchToken"]
    init = api.http.post("/api/play/session/init", json={"launchToken": token})
    assert init.status_code == 200, init.text
    return init.json()["sessionToken"], init.json()


def _debits(wallet: ThreadedWalletServer) -> list[Any]:
    return wallet.ledger.requests_of("wallet.debit")


# -- purchases ------------------------------------------------------------------------------


def test_purchases_debit_the_price_and_grant_the_items_their_tickets_name(
    api: Api, wallet: ThreadedWalletServer, clock: ManualClock
) -> None:
    player = "p-1"
    for currency in ("EUR", "USD", "JPY"):
        wallet.ledger.fund(OP, player, currency, 1_000_000)
    token, _ = _session(api, player)
    one = _purchase(api, _body(player, "eur-1"))
    assert one.status_code == 200, one.text
    clock.advance(2)
    three = api.play("POST", OPEN, token, json=_body(None, "usd-3", count=3, currency="USD"))
    assert three.status_code == 200, three.text
    two = _purchase(api, _body(player, "jpy-2", count=2, currency="JPY", locale="de"))
    assert two.status_code == 200, two.text
    answers = [one.json(), three.json(), two.json()]
    assert [a["round"]["fairness"]["nonce"] for a in answers] == [0, 1, 4]

    # the price: 12.35 EUR; 13.585 USD -> 13.58 (half-even) x 3 = 40.74, not 40.76;
    # 2006.875 JPY -> 2007 x 2
    debits = _debits(wallet)
    assert [(d.body["amountMinor"], d.body["currency"]) for d in debits] == [
        (1235, "EUR"),
        (4074, "USD"),
        (4014, "JPY"),
    ]
    for debit, answer in zip(debits, answers, strict=True):
        assert debit.body["reason"] == "boxes.purchase"
        assert debit.body["roundId"] == answer["round"]["publicId"]
        assert debit.idempotency_key == f"{answer['round']['publicId']}:1"
    assert [a["balanceAfterMinor"] for a in answers] == [
        1_000_000 - 1235,
        1_000_000 - 4074,
        1_000_000 - 4014,
    ]

    # the draws, recomputed from the revealed seed
    rotated = api.s2s(
        "POST",
        "/api/s2s/fairness/rotate",
        json.dumps({"playerExternalId": player}).encode(),
    )
    seeds = rotated.json()["previous"]
    assert seeds["lastNonce"] == 5
    assert hashlib.sha256(seeds["serverSeed"].encode()).hexdigest() == seeds["serverSeedHash"]
    started = clock.now() - 2
    expected = [
        _expected(answers[0], seeds, "EUR", 1, started),
        _expected(answers[1], seeds, "USD", 3, clock.now()),
        _expected(answers[2], seeds, "JPY", 2, clock.now(), locale="de"),
    ]
    assert answers == expected

    # the items are in the inventory, unresolved
    listed = api.s2s("GET", "/api/s2s/inventory", params={"playerExternalId": player}).json()
    granted = [w for a in answers for w in a["wonItems"]]
    assert sorted((i["inventoryItemId"], i["itemId"], i["state"]) for i in listed["items"]) == (
        sorted((w["inventoryItemId"], w["itemId"], "unresolved") for w in granted)
    )

    # history (both APIs) and one round by id show the answers' rounds, then their reels
    # and won items, newest first
    def history_round(answer: dict) -> dict:
        return {
            **answer["round"],
            "reels": answer["facts"]["reels"],
            "wonItems": answer["wonItems"],
        }

    rounds = [history_round(a) for a in reversed(answers)]
    page = api.s2s("GET", "/api/s2s/rounds", params={"playerExternalId": player}).json()
    assert page == {"rounds": rounds, "nextCursor": None}
    assert list(page["rounds"][0]) == [*answers[-1]["round"], "reels", "wonItems"]
    assert api.play("GET", "/api/play/rounds", token).json() == page
    by_id = api.s2s("GET", f"/api/s2s/rounds/{answers[1]['round']['publicId']}")
    assert by_id.json() == history_round(answers[1])

    # one round_settled webhook per round, its data the answer's (no balance)
    hooks = wait_until(
        lambda: len(wallet.ledger.received_webhooks) == 3 and wallet.ledger.received_webhooks,
        what="three webhooks",
    )
    assert [h["data"] for h in hooks] == [
        {"round": a["round"], "wonItems": a["wonItems"], "facts": a["facts"]} for a in answers
    ]
    assert [h["type"] for h in hooks] == ["round_settled"] * 3
    assert {(h["operatorId"], h["playerExternalId"]) for h in hooks} == {(OP, player)}


# -- refusals -------------------------------------------------------------------------------


def test_every_check_answers_in_the_decisions_order_before_any_wallet_call(
    api: Api, wallet: ThreadedWalletServer
) -> None:
    player = "checked"
    wallet.ledger.fund(OP, player, "EUR", 1_000_000)
    b = _body
    cases: list[tuple[dict[str, Any], dict[str, str], int, str, str]] = [
        # the body's shape, count within 1..max_boxes_per_round included
        (b(player, "s-1", count=0), {}, 422, "VALIDATION_ERROR", "count"),
        (b(player, "s-2", count=MAX_BOXES + 1), {}, 422, "VALIDATION_ERROR", "count"),
        (b(player, "s-3", count=101), {}, 422, "VALIDATION_ERROR", "count"),
        (b(player, "s-4", count="2"), {}, 422, "VALIDATION_ERROR", "count"),
        (b(player, "s-5", count=1.0), {}, 422, "VALIDATION_ERROR", "count"),
        (b(player, "s-6", boxId=0), {}, 422, "VALIDATION_ERROR", "boxId"),
        (b(player, "s-7", boxVersionId=None), {}, 422, "VALIDATION_ERROR", "boxVersionId"),
        (b(player, "s-8", extra=1), {}, 422, "VALIDATION_ERROR", "extra"),
        ({"playerExternalId": player, "clientActionId": "s-9", "boxId": 50}, {}, 422,
         "VALIDATION_ERROR", "boxVersionId"),
        # then (the action being new) the game, the currency, the box, its version, its items
        (b(player, "c-1"), KEY_OFF, 403, "GAME_DISABLED", "the game 'boxes'"),
        (b(player, "c-2"), KEY_B, 403, "GAME_DISABLED", "the game 'boxes'"),
        (b(player, "c-3", currency="GBP"), {}, 422, "UNSUPPORTED_CURRENCY", "'GBP'"),
        (b(player, "c-4", boxId=99), {}, 404, "BOX_NOT_FOUND", "box 99 version 2 not found"),
        (b(player, "c-5", boxVersionId=3), {}, 404, "BOX_NOT_FOUND", "box 50 version 3"),
        (b(player, "c-6", boxVersionId=1), {}, 409, "BOX_VERSION_CHANGED", "now (2)"),
        (b(player, "c-7", boxId=52, boxVersionId=1), {}, 409, "BOX_VERSION_CHANGED", "now"),
        (b(player, "c-8", boxId=51, boxVersionId=1), {}, 422, "BOX_UNAVAILABLE", "box 51"),
        # the first failing check answers
        (b(player, "o-1", count=11, currency="GBP", boxId=99), KEY_OFF, 422, "VALIDATION_ERROR",
         "count"),
        (b(player, "o-2", currency="GBP", boxId=99), KEY_OFF, 403, "GAME_DISABLED", "boxes"),
        (b(player, "o-3", currency="GBP", boxId=99), {}, 422, "UNSUPPORTED_CURRENCY", "GBP"),
        (b(player, "o-4", boxVersionId=9, currency="USD"), {}, 404, "BOX_NOT_FOUND", "50"),
        (b(player, "o-5", boxId=51, boxVersionId=2), {}, 404, "BOX_NOT_FOUND", "box 51"),
    ]  # fmt: skip
    for body, key, status, code, words in cases:
        answer = _purchase(api, body, **key)
        assert _error(answer) == (status, code), (body, answer.text)
        assert words in answer.json()["error"]["message"], (body, answer.text)
    changed = _purchase(api, _body(player, "c-6", boxVersionId=1)).json()
    assert changed["currentBoxVersionId"] == 2
    assert _purchase(api, _body(player, "c-7", boxId=52, boxVersionId=1)).json() == {
        "error": {
            "code": "BOX_VERSION_CHANGED",
            "message": "box 52 version 1 is not the version offered now",
        },
        "currentBoxVersionId": None,
    }
    token, _ = _session(api, player)
    assert _error(api.play("POST", OPEN, token, json=_body(None, "p-1", boxVersionId=1))) == (
        409,
        "BOX_VERSION_CHANGED",
    )
    assert _error(api.play("POST", OPEN, token, json=_body(player, "p-2"))) == (
        422,
        "VALIDATION_ERROR",  # the player API names no player
    )
    # no wallet call but session/init's balance read
    assert [r.type for r in wallet.ledger.requests] == ["wallet.balance"]
    assert api.s2s("GET", "/api/s2s/rounds", params={"playerExternalId": player}).json() == {
        "rounds": [],
        "nextCursor": None,
    }
    # a known action answers before the checks after the body: a copy of it with another
    # body is a conflict, whatever that body would have failed
    assert _purchase(api, _body(player, "done")).status_code == 200
    assert _error(_purchase(api, _body(player, "done", currency="GBP"))) == (
        409,
        "IDEMPOTENCY_CONFLICT",
    )
    assert _error(_purchase(api, _body(player, "done", count=9))) == (422, "VALIDATION_ERROR")
    assert len(_debits(wallet)) == 1


# -- one action, one effect -------------------------------------------------------------------


def test_copies_answer_the_same_bytes_and_one_debit_whatever_the_wallet_said(
    api: Api, wallet: ThreadedWalletServer
) -> None:
    player = "copies"
    wallet.ledger.fund(OP, player, "EUR", 100_000)
    first = _purchase(api, _body(player, "a-1", count=2))
    assert first.status_code == 200, first.text
    token, _ = _session(api, player)
    copies = [
        _purchase(api, _body(player, "a-1", count=2)),
        api.play("POST", OPEN, token, json=_body(None, "a-1", count=2)),  # the same player
    ]
    assert [c.content for c in copies] == [first.content] * 2
    for other in (
        _body(player, "a-1", count=3),
        _body(player, "a-1", count=2, currency="USD"),
        _body(player, "a-1", count=2, boxVersionId=1),
        _body(player, "a-1", count=2, boxId=7, boxVersionId=3),
    ):
        assert _error(_purchase(api, other)) == (409, "IDEMPOTENCY_CONFLICT"), other
    upgrader = {"playerExternalId": player, "clientActionId": "a-1", "wagerMinor": 1000}
    upgrader.update(chanceBps=5000, targetItemId=7)  # one clientActionId across games
    conflict = api.s2s("POST", "/api/s2s/upgrader/play", json.dumps(upgrader).encode())
    assert _error(conflict) == (409, "IDEMPOTENCY_CONFLICT")
    assert [d.body["amountMinor"] for d in _debits(wallet)] == [2470]

    # 20 copies at once: one debit, one answer
    wallet.faults.configure(stall_seconds=0.3, only_types={"wallet.debit"}, times=1)
    results: list[httpx.Response | None] = [None] * 20
    barrier = threading.Barrier(20)

    def copy(index: int) -> None:
        client = Api(str(api.http.base_url).rstrip("/"), api.clock)
        barrier.wait()
        results[index] = _purchase(client, _body(player, "race", count=MAX_BOXES))
        client.close()

    threads = [threading.Thread(target=copy, args=(i,)) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert {r.status_code for r in results if r is not None} == {200}
    assert len({r.content for r in results if r is not None}) == 1
    race = results[0].json() if results[0] is not None else {}
    assert len(race["wonItems"]) == MAX_BOXES
    assert [d.body["amountMinor"] for d in _debits(wallet)] == [2470, MAX_BOXES * PRICE]
    assert wallet.ledger.balance(OP, player, "EUR") == 100_000 - 2470 - MAX_BOXES * PRICE

    # refused: voided with the wallet's code and an integer balance, its copy the same bytes
    broke = _purchase(api, _body("broke", "b-1"))
    assert broke.status_code == 422
    voided = broke.json()["round"]
    assert broke.json() == {
        "error": {"code": "INSUFFICIENT_FUNDS", "message": "the wallet refused the debit"},
        "round": {"publicId": voided["publicId"], "status": "voided"},
        "balanceAfterMinor": 0,
    }
    assert _purchase(api, _body("broke", "b-1")).content == broke.content
    wallet.ledger.fund(OP, "blocked", "EUR", 5000)
    wallet.ledger.block(OP, "blocked")
    blocked = _purchase(api, _body("blocked", "b-2"))
    assert (_error(blocked), blocked.json()["balanceAfterMinor"]) == ((403, "PLAYER_BLOCKED"), 5000)
    history = api.s2s("GET", "/api/s2s/rounds", params={"playerExternalId": "broke"}).json()
    assert history["rounds"] == [voided]

    # uncertain: 503 now, the debit rolled back; a retry plays with the next key
    wallet.faults.configure(only_types={"wallet.debit"}, times=1, status_5xx=503)
    unsure = _purchase(api, _body(player, "u-1"))
    assert _error(unsure) == (503, "WALLET_UNAVAILABLE")
    key = _debits(wallet)[-1].idempotency_key
    wait_until(lambda: key in wallet.ledger.rolled_back_keys(OP), what="the rollback")
    # until the platform has recorded the wallet's answer, a copy is 409 ACTION_IN_PROGRESS
    tries: list[httpx.Response] = []

    def retried() -> bool:
        tries.append(_purchase(api, _body(player, "u-1")))
        return tries[-1].status_code != 409

    wait_until(retried, what="a retry past the recorded rollback")
    *waiting, again = tries
    assert {_error(w) for w in waiting} <= {(409, "ACTION_IN_PROGRESS")}
    assert again.status_code == 200, again.text
    public_id = again.json()["round"]["publicId"]
    assert key == f"{public_id}:1"
    assert _debits(wallet)[-1].idempotency_key == f"{public_id}:2"
    assert _purchase(api, _body(player, "u-1")).content == again.content


# -- launches -------------------------------------------------------------------------------


def test_a_box_launch_boots_the_box_game_on_its_offered_version(api: Api) -> None:
    launch = _launch(api, "p-1", {"boxId": 50})
    assert launch.status_code == 200, launch.text
    url = launch.json()["launchUrl"]
    assert url.startswith("http://127.0.0.1:8000/game/boxes?launchToken=")
    page = api.http.get("/game/boxes", params={"launchToken": launch.json()["launchToken"]})
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert page.content == api.http.get("/game/upgrader").content  # one app for both games
    init = api.http.post(
        "/api/play/session/init", json={"launchToken": launch.json()["launchToken"]}
    )
    assert init.status_code == 200, init.text
    game = init.json()["game"]
    token = init.json()["sessionToken"]
    offered = api.play("GET", "/api/play/boxes/50/versions/2", token).json()
    assert game == {"key": "boxes", "box": offered, "maxBoxesPerRound": MAX_BOXES}
    assert (offered["priceMinor"], offered["currency"], offered["oddsHash"]) == (
        PRICE,
        "EUR",
        ODDS_HASH,
    )
    upgrader = _launch(api, "p-1", {}, game="upgrader")
    assert upgrader.json()["launchUrl"].startswith("http://127.0.0.1:8000/game/upgrader?")
    init = api.http.post(
        "/api/play/session/init", json={"launchToken": upgrader.json()["launchToken"]}
    )
    assert set(init.json()["game"]) == {"key", "config"}  # the Upgrader's answer as before
    assert init.json()["game"]["key"] == "upgrader"

    for target, status, code in [
        ({}, 422, "LAUNCH_TARGET_INVALID"),
        ({"boxId": "50"}, 422, "LAUNCH_TARGET_INVALID"),
        ({"boxId": 50.0}, 422, "LAUNCH_TARGET_INVALID"),
        ({"boxId": True}, 422, "LAUNCH_TARGET_INVALID"),
        ({"boxId": 50, "boxVersionId": 2}, 422, "LAUNCH_TARGET_INVALID"),
        ({"box": 50}, 422, "LAUNCH_TARGET_INVALID"),
        ({"boxId": 99}, 404, "BOX_NOT_FOUND"),
        ({"boxId": 52}, 404, "BOX_NOT_FOUND"),  # no active version
        ({"boxId": 2**80}, 404, "BOX_NOT_FOUND"),
    ]:
        assert _error(_launch(api, "p-1", target)) == (status, code), target
    assert _launch(api, "p-1", {"boxId": 99}).json()["error"]["message"] == "box 99 not found"
    # the game is checked first; an Upgrader launch still refuses a box
    for key in (KEY_B, KEY_OFF):
        assert _error(_launch(api, "p-1", {}, **key)) == (403, "GAME_DISABLED")
    assert _error(_launch(api, "p-1", {"boxId": 50}, game="upgrader")) == (
        422,
        "LAUNCH_TARGET_INVALID",
    )
    # a box that is offered but holds an unavailable item launches; an open is refused
    retro = _launch(api, "p-1", {"boxId": 51}).json()["launchToken"]
    init = api.http.post("/api/play/session/init", json={"launchToken": retro})
    assert init.json()["game"]["box"]["available"] is False

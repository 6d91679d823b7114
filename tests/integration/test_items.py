"""Inventory, items mode, cash-back, shipping and Nuggets over real HTTP.

Runs on SQLite and, when UPGRADER_TEST_POSTGRES_URL is set, on PostgreSQL, against the
real reference wallet on loopback, on the catalogue variant of ``tests/support/items.py``.
Items are obtained by balance plays at chance 9000 (a bounded loop until enough wins).
After every test: the wallet's net debits equal the bets of settled balance rounds, and
its net credits equal both the ``creditedMinor`` of the cash-back answers and the
cash-backs the event log records credited.
"""

from __future__ import annotations

import copy
import re
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction
from typing import Any

import httpx
import pytest

from application.clock import ManualClock
from domain.config_history import CatalogItemRecord
from ops.reference_operator.wallet import ThreadedWalletServer
from tests.support.items import (
    COLLECTIBLE,
    KEY_B,
    KEY_ITEMS_ONLY,
    KEY_NO_ITEMS,
    KEY_NUGGETS,
    KEY_OPERATOR,
    NAMES,
    NO_CASHBACK,
    PLAIN,
    SOON_DIGITAL,
    T450,
    T740,
    T800,
    T900,
    T1400,
    T1500,
    ItemsEnv,
    band,
    catalog_entry,
    checked_env,
    error_of,
    item_moves,
    launch_session,
    operator_entry,
    post,
    variant_raw,
    win_items,
)
from tests.support.live import Api
from tests.support.waiting import wait_until

INVENTORY = "/api/s2s/inventory"
BY_ITEMS = "/api/s2s/upgrader/prizes-by-items"
PLAY_ITEMS = "/api/s2s/upgrader/play-with-items"
CASHOUT = "/api/s2s/cashout"
SHIPPING = "/api/s2s/shipping"
ADDRESS = {"name": "A. Player", "line1": "1 Test Street", "city": "Testville", "country": "DE"}
ISO_MS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
ZERO = {"priceFallMinor": 0, "priceRiseMinor": 0, "creditsShareMinor": 0}
CATALOG = {i["item_id"]: i for i in variant_raw("sqlite:///unused")["catalog"]["items"]}
WALLET_TIMEOUT = 1.0  # wallet_timeout_seconds of the ItemsEnv platforms
RACES = 20


@pytest.fixture
def env(database_url: str, clock: ManualClock, wallet: ThreadedWalletServer) -> Iterator[ItemsEnv]:
    yield from checked_env(database_url, clock, wallet)


# -- helpers -----------------------------------------------------------------------------------


def _operator(key: dict[str, str]) -> str:
    return KEY_OPERATOR[key.get("key_id", "key-a")]


def _inventory(env: ItemsEnv, player: str, state: str | None = None, **key: str) -> list[dict]:
    params = {"playerExternalId": player, **({"state": state} if state else {})}
    response = env.api.s2s("GET", INVENTORY, params=params, **key)
    assert response.status_code == 200, response.text
    return response.json()["items"]


def _row(env: ItemsEnv, player: str, number: int, **key: str) -> dict[str, Any]:
    return next(i for i in _inventory(env, player, **key) if i["inventoryItemId"] == number)


def _rounds(env: ItemsEnv, player: str) -> list[dict[str, Any]]:
    query = {"playerExternalId": player, "limit": 100}
    response = env.api.s2s("GET", "/api/s2s/rounds", params=query)
    assert response.status_code == 200, response.text
    return response.json()["rounds"]


def _by_items(
    env: ItemsEnv, player: str, ids: list[int], chance: int = 9000, **key: str
) -> httpx.Response:
    params = [("playerExternalId", player), ("chanceBps", chance)]
    params += [("stakeItemIds", i) for i in ids]
    return env.api.s2s("GET", BY_ITEMS, params=params, **key)


def _stake(
    env: ItemsEnv,
    player: str,
    action: str,
    ids: list[int],
    target: int,
    chance: int = 9000,
    via: Api | None = None,
    **key: str,
) -> httpx.Response:
    body = {
        "playerExternalId": player,
        "clientActionId": action,
        "stakeItemIds": ids,
        "chanceBps": chance,
        "targetItemId": target,
    }
    return post(via or env.api, PLAY_ITEMS, body, **key)


def _record_credit(env: ItemsEnv, operator: str, player: str, action: str, response) -> None:
    if response.status_code == 200:
        env.credited[(operator, player, action)] = response.json()["creditedMinor"]


def _cash_out(
    env: ItemsEnv,
    player: str,
    action: str,
    ids: list[int],
    via: Api | None = None,
    **extra: Any,
) -> httpx.Response:
    key = {k: extra.pop(k) for k in ("key_id", "secret") if k in extra}
    body = {"playerExternalId": player, "clientActionId": action, "inventoryItemIds": ids}
    response = post(via or env.api, CASHOUT, {**body, **extra}, **key)
    _record_credit(env, _operator(key), player, action, response)
    return response


def _ship(
    env: ItemsEnv, player: str, action: str, ids: list[int], address: dict | None = None, **key
) -> httpx.Response:
    body = {
        "playerExternalId": player,
        "clientActionId": action,
        "inventoryItemIds": ids,
        "address": ADDRESS if address is None else address,
    }
    return post(env.api, SHIPPING, body, **key)


def _value(item_id: int) -> int:
    return CATALOG[item_id]["value_minor"]


def _prize(item_id: int) -> dict[str, Any]:
    return {
        "itemId": item_id,
        "name": NAMES.get(item_id, f"Item {item_id}"),
        "valueMinor": _value(item_id),
        "currency": "EUR",
        "imageUrl": None,
    }


def _cashback_of(item_id: int, share_bps: int = 10000) -> tuple[int | None, dict[str, int]]:
    """decisions §5 for a freshly granted non-collectible: (cashbackMinor, Uncredited)."""
    cashback = CATALOG[item_id].get("cashback_bps")
    if cashback is None:
        return None, ZERO
    paid = Fraction(_value(item_id) * cashback, 10000)
    share = Fraction(share_bps, 10000)
    return round(paid * share), {**ZERO, "creditsShareMinor": round(paid * (1 - share))}


def _assert_items_round(
    answer: dict[str, Any],
    *,
    stake: list[tuple[int, int, int]],
    chance: int,
    target: int,
    uncredited: dict[str, int] = ZERO,
    fee: int = 500,
    no_loss: bool = False,
    share_bps: int = 10000,
) -> None:
    """A settled play-with-items answer; ``stake`` is [(inventoryItemId, itemId, counted)]."""
    total = sum(counted for _, _, counted in stake)
    round_ = answer["round"]
    won = round_["isWin"]
    assert won is (round_["rolledBps"] < chance)
    nuggets = total if no_loss and not won else 0
    assert list(round_)[:3] == ["publicId", "status", "game"]
    assert round_ == {
        **round_,
        "status": "settled",
        "game": "upgrader",
        "mode": "items",
        "betMinor": total,
        "payoutMinor": _value(target) if won else 0,
        "currency": "EUR",
        "chanceBps": chance,
        "feeBps": fee,
        "target": _prize(target),
        "nuggetsAwardedMinor": nuggets,
    }
    assert re.fullmatch(r"r_[0-9a-f]{32}", round_["publicId"])
    assert answer["stake"] == {
        "currency": "EUR",
        "totalMinor": total,
        "items": [
            {
                "inventoryItemId": number,
                "itemId": item_id,
                "name": NAMES[item_id],
                "valueMinor": counted,
                "currency": "EUR",
                "state": "consumed",
            }
            for number, item_id, counted in stake
        ],
    }
    assert "balanceAfterMinor" in answer
    assert answer["balanceAfterMinor"] is None
    assert answer["facts"] == {
        "currency": "EUR",
        "reels": [],
        "deal": {
            "stakeCountedMinor": total,
            "stakeUncredited": uncredited,
            "nuggetsAwardedMinor": nuggets,
        },
    }
    if not won:
        assert answer["wonItem"] is None
        return
    cashback, parts = _cashback_of(target, share_bps)
    assert answer["wonItem"] == {
        "inventoryItemId": answer["wonItem"]["inventoryItemId"],
        "itemId": target,
        "name": NAMES.get(target, f"Item {target}"),
        "cashbackMinor": cashback,
        "cashbackUncredited": parts,
        "currency": "EUR",
        "state": "unresolved",
    }


def _assert_counted(
    env: ItemsEnv,
    player: str,
    number: int,
    item_id: int,
    counted: int,
    uncredited: dict[str, int],
    target: int,
    action: str,
    share_bps: int = 10000,
) -> dict[str, Any]:
    """The item counts ``counted`` on prizes-by-items, on its inventory row (what cashing
    it back would pay) and on play-with-items (which makes no wallet call)."""
    response = _by_items(env, player, [number])
    assert response.status_code == 200, response.text
    quoted = response.json()
    assert quoted["wagerMinor"] == counted
    assert quoted["stake"] == {
        "currency": "EUR",
        "totalMinor": counted,
        "items": [
            {
                "inventoryItemId": number,
                "itemId": item_id,
                "name": NAMES[item_id],
                "valueMinor": counted,
                "currency": "EUR",
            }
        ],
    }
    assert quoted["targetBand"] == band(counted, 500, 9000)
    assert _prize(target) in quoted["prizes"]
    row = _row(env, player, number)
    cashable = CATALOG[item_id].get("cashback_bps") is not None
    assert row["cashbackMinor"] == (counted if cashable else None)
    assert row["cashbackUncredited"] == uncredited
    assert row["valueMinor"] == 1000  # the grant value

    wallet_calls = len(env.wallet.ledger.requests)
    played = _stake(env, player, action, [number], target)
    assert played.status_code == 200, played.text
    answer = played.json()
    _assert_items_round(
        answer,
        stake=[(number, item_id, counted)],
        chance=9000,
        target=target,
        uncredited=uncredited,
        share_bps=share_bps,
    )
    assert answer["stake"]["totalMinor"] == quoted["wagerMinor"]
    assert len(env.wallet.ledger.requests) == wallet_calls  # no wallet call in items mode
    assert _row(env, player, number)["state"] == "consumed"
    assert item_moves(env.platform, number)["ItemConsumed"] == 1
    return answer


def _race(
    clients: list[Api],
    pool: ThreadPoolExecutor,
    calls: list[Callable],
    offsets: tuple[float, ...] = (),
) -> list:
    """Run the calls at once (one client each), released together by a barrier; call i
    then starts ``offsets[i]`` seconds late (a stagger: not a wait for anything)."""
    barrier = threading.Barrier(len(calls))

    def run(index: int) -> httpx.Response:
        barrier.wait(timeout=10)
        if index < len(offsets) and offsets[index] > 0:
            time.sleep(offsets[index])
        return calls[index](clients[index])

    return list(pool.map(run, range(len(calls))))


# -- 1. how a staked item is counted (interface 4.6, decisions §5) -----------------------------


def test_a_staked_item_counts_what_cashing_it_back_would_pay_now(env: ItemsEnv) -> None:
    player = "count-1"
    plain = win_items(env, player, PLAIN, 2, "w-plain")
    collectible = win_items(env, player, COLLECTIBLE, 3, "w-coll")
    (no_cashback,) = win_items(env, player, NO_CASHBACK, 1, "w-none")

    # a stake of several items counts each; the total is the wager and sizes the band
    several = _by_items(env, player, [plain[0], collectible[0], no_cashback])
    assert several.status_code == 200, several.text
    quoted = several.json()
    assert quoted["wagerMinor"] == 2700
    assert quoted["stake"]["totalMinor"] == 2700
    assert [i["valueMinor"] for i in quoted["stake"]["items"]] == [900, 800, 1000]
    assert quoted["targetBand"] == band(2700, 500, 9000)
    assert (quoted["chanceBps"], quoted["feeBps"], quoted["currency"]) == (9000, 500, "EUR")

    # cash-back 90% of a 1000 grant: counts 900, nothing uncredited
    _assert_counted(env, player, plain[0], PLAIN, 900, ZERO, T900, "s-plain")
    # no cash-back: counts its grant value, all in Credits
    _assert_counted(env, player, no_cashback, NO_CASHBACK, 1000, ZERO, PLAIN, "s-none")

    # the collectible's price falls to 900 (a recorded configuration change)
    raw = copy.deepcopy(env.raw)
    catalog_entry(raw, COLLECTIBLE)["value_minor"] = 900
    assert env.restart(raw) == 1
    assert env.last_topics(1)[0].endswith("CatalogItemRecord.Priced")
    record = env.platform.events.repository.get(CatalogItemRecord.create_id(COLLECTIBLE))
    assert record.item["value_minor"] == 900
    fell = {**ZERO, "priceFallMinor": 80}
    _assert_counted(env, player, collectible[0], COLLECTIBLE, 720, fell, T740, "s-fall")

    # ... and rises to 1200: min(G, M) = 1000 counts, the rise is not paid in Credits
    catalog_entry(raw, COLLECTIBLE)["value_minor"] = 1200
    assert env.restart(raw) == 1
    assert env.last_topics(1)[0].endswith("CatalogItemRecord.Priced")
    rose = {**ZERO, "priceRiseMinor": 160}
    _assert_counted(env, player, collectible[1], COLLECTIBLE, 800, rose, T800, "s-rise")
    # staking it and cashing it back first are worth the same
    cashed = _cash_out(env, player, "cash-rise", [collectible[2]])
    assert cashed.status_code == 200, cashed.text
    assert cashed.json()["creditedMinor"] == 800
    assert cashed.json()["items"][0]["cashbackUncredited"] == rose

    # the operator pays 50% of cash-back in Credits
    operator_entry(raw, "op-a")["credits_share_bps"] = 5000
    assert env.restart(raw) == 1
    assert env.last_topics(1)[0].endswith("OperatorProfile.SettingsChanged")
    halved = {**ZERO, "creditsShareMinor": 450}
    _assert_counted(env, player, plain[1], PLAIN, 450, halved, T450, "s-share", share_bps=5000)


# -- 2. refused stakes -------------------------------------------------------------------------


def test_an_unavailable_or_foreign_stake_is_refused_and_changes_nothing(
    env: ItemsEnv, wallet: ThreadedWalletServer, clock: ManualClock
) -> None:
    player, other = "ref-1", "ref-2"
    consumed, cashed, shipped, held, open_ = win_items(env, player, PLAIN, 5, "w")
    (others,) = win_items(env, other, PLAIN, 1, "w")
    (foreign,) = win_items(env, player, PLAIN, 1, "w-b", **KEY_B)  # op-b, same player name
    assert _stake(env, player, "spend", [consumed], T900).status_code == 200
    assert _cash_out(env, player, "cash", [cashed]).status_code == 200
    assert _ship(env, player, "ship", [shipped]).status_code == 200
    wallet.faults.configure(status_5xx=503, only_types={"wallet.credit"})
    assert error_of(_cash_out(env, player, "pending", [held])) == (503, "OUTCOME_UNKNOWN")
    held_row = _row(env, player, held)
    assert (held_row["state"], held_row["held"], held_row["cashbackMinor"]) == (
        "unresolved",
        True,
        None,
    )
    unknown = 2**52 + 12345

    def snapshot() -> tuple:
        recorder = env.platform.events.recorder
        return (
            _inventory(env, player),
            _inventory(env, other),
            _inventory(env, player, **KEY_B),
            _rounds(env, player),
            recorder.max_notification_id(),
            len(wallet.ledger.requests_of("wallet.debit")),
        )

    before = snapshot()
    refused = {
        "consumed": consumed,
        "cashed back": cashed,
        "shipping requested": shipped,
        "held by a pending cash-back": held,
        "someone else's": others,
        "another operator's": foreign,
        "unknown": unknown,
    }
    for label, number in refused.items():
        for stake in ([number], [open_, number]):
            quoted = _by_items(env, player, stake)
            assert error_of(quoted) == (422, "UPGRADER_ITEM_NOT_OWNED"), label
            # the items are checked before the target (decisions §7): T1500 is out of band
            played = _stake(env, player, f"bad-{len(stake)}", stake, T1500)
            assert error_of(played) == (422, "UPGRADER_ITEM_NOT_OWNED"), label
            assert str(number) in played.json()["error"]["message"]
        cash = _cash_out(env, player, f"bad-cash-{label}", [number])
        assert error_of(cash) == (422, "ITEM_NOT_AVAILABLE"), label
        ship = _ship(env, player, f"bad-ship-{label}", [number])
        assert error_of(ship) == (422, "ITEM_NOT_AVAILABLE"), label
    # the same item ids staked by their owner's own operator are fine (not a global refusal)
    assert _by_items(env, player, [foreign], **KEY_B).status_code == 200
    assert _by_items(env, other, [others]).status_code == 200

    # malformed stakes: duplicates, more than 20, none
    for ids in ([open_, open_], [unknown + n for n in range(21)], []):
        assert error_of(_by_items(env, player, ids)) == (422, "VALIDATION_ERROR"), len(ids)
        played = _stake(env, player, "malformed", ids, T900)
        assert error_of(played) == (422, "VALIDATION_ERROR"), len(ids)
        assert "stakeItemIds" in played.json()["error"]["message"]
    assert error_of(_cash_out(env, player, "dup", [open_, open_])) == (422, "VALIDATION_ERROR")
    twenty = _by_items(env, player, [unknown + n for n in range(20)])
    assert error_of(twenty) == (422, "UPGRADER_ITEM_NOT_OWNED")  # 20 ids is allowed
    assert error_of(_by_items(env, player, ["one"])) == (422, "VALIDATION_ERROR")
    # malformed input is answered first (decisions §7): before idempotency, game and mode
    key_off = {"key_id": "key-off", "secret": "secret-off-1"}
    for key in ({}, KEY_NO_ITEMS, key_off):
        for ids in ([open_, open_], []):
            quoted = _by_items(env, player, ids, **key)
            assert error_of(quoted) == (422, "VALIDATION_ERROR"), (key, ids)
        played = _stake(env, player, "spend", [open_, open_], T900, **key)
        assert error_of(played) == (422, "VALIDATION_ERROR"), key
    # then the chance (before the items), the items, and the target
    assert error_of(_by_items(env, player, [open_], 5001)) == (422, "VALIDATION_ERROR")
    for ids in ([open_], [consumed]):
        played = _stake(env, player, "order", ids, T900, 5001)
        assert error_of(played) == (422, "UPGRADER_CHANCE_INVALID"), ids
    played = _stake(env, player, "order", [open_], 7)
    assert error_of(played) == (422, "UPGRADER_PRIZE_OUT_OF_RANGE")

    # items mode off; balance-only off; the game off
    for key, expected in (
        (KEY_NO_ITEMS, (403, "UPGRADER_MODE_DISABLED")),
        (KEY_ITEMS_ONLY, (422, "UPGRADER_ITEM_NOT_OWNED")),  # items mode on there
        ({"key_id": "key-off", "secret": "secret-off-1"}, (403, "GAME_DISABLED")),
    ):
        assert error_of(_by_items(env, player, [open_], **key)) == expected, key
        assert error_of(_stake(env, player, "m", [open_], T900, **key)) == expected, key
    assert snapshot() == before

    # a refused action left nothing behind: its clientActionId plays normally afterwards
    answer = _stake(env, player, "bad-1", [open_], T900)
    assert answer.status_code == 200, answer.text
    _assert_items_round(answer.json(), stake=[(open_, PLAIN, 900)], chance=9000, target=T900)

    # the pending cash-back completes once the wallet answers again
    wallet.faults.configure()
    wait_until(
        lambda: _row(env, player, held)["state"] == "cashed_back",
        tick=lambda: clock.advance(61),
        what="the held item cashed back",
    )
    assert _cash_out(env, player, "pending", [held]).json()["creditedMinor"] == 900


# -- 3. races ----------------------------------------------------------------------------------


def test_an_item_raced_by_two_plays_or_by_a_play_and_a_cashback_is_spent_once(
    env: ItemsEnv,
) -> None:
    player = "race-1"
    items = win_items(env, player, PLAIN, 2 * RACES, "w")
    clients = [Api(env.live.url, env.clock) for _ in range(2)]
    outcomes = {"play": 0, "cash-back": 0}
    try:
        with ThreadPoolExecutor(2) as pool:
            for n, number in enumerate(items[:RACES]):
                results = _race(
                    clients,
                    pool,
                    [
                        lambda c, n=n, i=number: _stake(env, player, f"a{n}", [i], T900, via=c),
                        lambda c, n=n, i=number: _stake(env, player, f"b{n}", [i], T900, via=c),
                    ],
                )
                assert sorted(r.status_code for r in results) == [200, 422], n
                loser = next(r for r in results if r.status_code == 422)
                assert error_of(loser) == (422, "UPGRADER_ITEM_NOT_OWNED")
                moves = item_moves(env.platform, number)
                assert (moves["ItemConsumed"], moves["ItemCashedBack"]) == (1, 0), n

            for n, number in enumerate(items[RACES:]):
                play, cash = _race(
                    clients,
                    pool,
                    [
                        lambda c, n=n, i=number: _stake(env, player, f"c{n}", [i], T900, via=c),
                        lambda c, n=n, i=number: _cash_out(env, player, f"d{n}", [i], via=c),
                    ],
                    # a cash-back does less before its commit than a play: staggering it
                    # 0..38 ms across the races lets either win, at the check or the commit
                    offsets=(0.0, 0.002 * n),
                )
                moves = item_moves(env.platform, number)
                if play.status_code == 200:
                    outcomes["play"] += 1
                    assert error_of(cash) == (422, "ITEM_NOT_AVAILABLE"), n
                    assert (moves["ItemConsumed"], moves["ItemCashedBack"]) == (1, 0), n
                else:
                    outcomes["cash-back"] += 1
                    assert error_of(play) in {
                        (422, "UPGRADER_ITEM_NOT_OWNED"),
                        (422, "ITEM_NOT_AVAILABLE"),
                    }, n
                    assert cash.status_code == 200, cash.text
                    assert cash.json()["creditedMinor"] == 900
                    assert (moves["ItemConsumed"], moves["ItemCashedBack"]) == (0, 1), n
    finally:
        for client in clients:
            client.close()
    states = {i["inventoryItemId"]: i["state"] for i in _inventory(env, player)}
    assert all(states[n] == "consumed" for n in items[:RACES])
    spent = [states[n] for n in items[RACES:]]
    assert spent.count("consumed") == outcomes["play"]
    assert spent.count("cashed_back") == outcomes["cash-back"]
    assert env.wallet.ledger.net_credits("op-a") == 900 * outcomes["cash-back"]


# -- 4. idempotency ----------------------------------------------------------------------------


def test_a_retried_items_play_returns_the_same_bytes_and_consumes_once(env: ItemsEnv) -> None:
    player = "idem-1"
    first, second, third = win_items(env, player, PLAIN, 3, "w")
    # W = 900 + 900 = 1800 at chance 9000: band [1728, 1900]
    played = _stake(env, player, "x", [first, second], 7)
    assert played.status_code == 200, played.text
    answer = played.json()
    _assert_items_round(
        answer, stake=[(first, PLAIN, 900), (second, PLAIN, 900)], chance=9000, target=7
    )
    for ids in ([first, second], [second, first]):  # the same stake, in any order
        again = _stake(env, player, "x", ids, 7)
        assert (again.status_code, again.content) == (200, played.content)
    # the same action from the player's session is the same action of the same player
    token = launch_session(env.api, player)
    body = {"clientActionId": "x", "stakeItemIds": [first, second], "chanceBps": 9000}
    session = env.api.play(
        "POST", "/api/play/upgrader/play-with-items", token, {**body, "targetItemId": 7}
    )
    assert (session.status_code, session.content) == (200, played.content)
    for conflict in (
        {"ids": [first], "target": 7},
        {"ids": [first, third], "target": 7},
        {"ids": [first, second], "target": 6},
    ):
        response = _stake(env, player, "x", conflict["ids"], conflict["target"])
        assert error_of(response) == (409, "IDEMPOTENCY_CONFLICT"), conflict
    assert [r["publicId"] for r in _rounds(env, player)].count(answer["round"]["publicId"]) == 1
    assert item_moves(env.platform, first)["ItemConsumed"] == 1
    assert item_moves(env.platform, second)["ItemConsumed"] == 1
    assert item_moves(env.platform, third)["ItemConsumed"] == 0
    assert _row(env, player, third)["state"] == "unresolved"


# -- 5. object level authorisation -------------------------------------------------------------


def test_players_and_operators_see_and_touch_only_their_own_items(
    env: ItemsEnv, wallet: ThreadedWalletServer
) -> None:
    mine, theirs = "bola-1", "bola-2"
    own = win_items(env, mine, PLAIN, 2, "w")
    (other,) = win_items(env, theirs, PLAIN, 1, "w")
    (b_item,) = win_items(env, "bola-b", PLAIN, 1, "w", **KEY_B)
    token = launch_session(env.api, mine)
    other_token = launch_session(env.api, theirs)
    b_token = launch_session(env.api, mine, **KEY_B)  # the same name under op-b

    listed = env.api.play("GET", "/api/play/inventory", token)
    assert listed.status_code == 200, listed.text
    assert listed.json()["items"] == _inventory(env, mine)
    assert {i["inventoryItemId"] for i in listed.json()["items"]} == set(own)
    theirs_listed = env.api.play("GET", "/api/play/inventory", other_token).json()["items"]
    assert [i["inventoryItemId"] for i in theirs_listed] == [other]
    assert env.api.play("GET", "/api/play/inventory", b_token).json() == {"items": []}
    assert _inventory(env, mine, **KEY_B) == []
    assert [i["inventoryItemId"] for i in _inventory(env, "bola-b", **KEY_B)] == [b_item]
    assert _inventory(env, "bola-b") == []

    before = (_inventory(env, theirs), _inventory(env, "bola-b", **KEY_B))
    for number in (other, b_item):
        query = {"stakeItemIds": [number], "chanceBps": 9000}
        quoted = env.api.play("GET", "/api/play/upgrader/prizes-by-items", token, params=query)
        assert error_of(quoted) == (422, "UPGRADER_ITEM_NOT_OWNED")
        body = {"clientActionId": f"steal-{number}", "stakeItemIds": [number]}
        played = env.api.play(
            "POST",
            "/api/play/upgrader/play-with-items",
            token,
            {**body, "chanceBps": 9000, "targetItemId": T900},
        )
        assert error_of(played) == (422, "UPGRADER_ITEM_NOT_OWNED")
        cash = env.api.play(
            "POST",
            "/api/play/cashout",
            token,
            {"clientActionId": f"steal-{number}", "inventoryItemIds": [number]},
        )
        assert error_of(cash) == (422, "ITEM_NOT_AVAILABLE")
    # a session cannot name another player
    naming = env.api.play(
        "POST",
        "/api/play/cashout",
        token,
        {"clientActionId": "n", "inventoryItemIds": [other], "playerExternalId": theirs},
    )
    assert error_of(naming) == (422, "VALIDATION_ERROR")
    assert (_inventory(env, theirs), _inventory(env, "bola-b", **KEY_B)) == before
    assert wallet.ledger.requests_of("wallet.credit") == []

    # its own items it may stake and cash back
    query = {"stakeItemIds": [own[0]], "chanceBps": 9000}
    quoted = env.api.play("GET", "/api/play/upgrader/prizes-by-items", token, params=query)
    assert quoted.status_code == 200, quoted.text
    assert quoted.json()["stake"]["totalMinor"] == 900
    body = {"clientActionId": "p-1", "stakeItemIds": [own[0]], "chanceBps": 9000}
    played = env.api.play(
        "POST", "/api/play/upgrader/play-with-items", token, {**body, "targetItemId": T900}
    )
    assert played.status_code == 200, played.text
    _assert_items_round(played.json(), stake=[(own[0], PLAIN, 900)], chance=9000, target=T900)
    cash = env.api.play(
        "POST", "/api/play/cashout", token, {"clientActionId": "c-1", "inventoryItemIds": [own[1]]}
    )
    assert cash.status_code == 200, cash.text
    _record_credit(env, "op-a", mine, "c-1", cash)
    assert cash.json()["creditedMinor"] == 900
    (credit,) = wallet.ledger.requests_of("wallet.credit")
    assert credit.body["playerExternalId"] == mine
    consumed = env.api.play("GET", "/api/play/inventory", token, params={"state": "consumed"})
    assert [i["inventoryItemId"] for i in consumed.json()["items"]] == [own[0]]
    bogus = env.api.play("GET", "/api/play/inventory", token, params={"state": "lost"})
    assert error_of(bogus) == (422, "VALIDATION_ERROR")


# -- 6. cash-back against the real wallet ------------------------------------------------------


def test_a_cashback_credits_the_exact_counted_value_once(
    env: ItemsEnv, wallet: ThreadedWalletServer, clock: ManualClock
) -> None:
    player, other = "cash-1", "cash-2"
    plain = win_items(env, player, PLAIN, 3, "w-plain")
    (collectible,) = win_items(env, player, COLLECTIBLE, 1, "w-coll")
    (no_cashback,) = win_items(env, player, NO_CASHBACK, 1, "w-none")
    (others,) = win_items(env, other, PLAIN, 1, "w")
    balance = wallet.ledger.balance("op-a", player, "EUR")
    listed = _inventory(env, player)
    # newest first, each row as decisions §8 lists it (plus ``held``)
    order = [no_cashback, collectible, plain[2], plain[1], plain[0]]
    assert [i["inventoryItemId"] for i in listed] == order
    assert re.fullmatch(r"r_[0-9a-f]{32}", listed[0]["roundPublicId"])
    assert ISO_MS.fullmatch(listed[0]["grantedAt"])
    assert listed[0] == {
        "inventoryItemId": no_cashback,
        "itemId": NO_CASHBACK,
        "name": NAMES[NO_CASHBACK],
        "valueMinor": 1000,
        "currency": "EUR",
        "cashbackMinor": None,
        "cashbackUncredited": ZERO,
        "state": "unresolved",
        "roundPublicId": listed[0]["roundPublicId"],
        "grantedAt": listed[0]["grantedAt"],
        "held": False,
    }
    assert [(i["itemId"], i["cashbackMinor"]) for i in listed[1:]] == [
        (COLLECTIBLE, 800),
        (PLAIN, 900),
        (PLAIN, 900),
        (PLAIN, 900),
    ]
    rows = {i["inventoryItemId"]: i for i in listed}

    ids = [plain[0], plain[1], collectible]
    response = _cash_out(env, player, "c-1", ids)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert {k: v for k, v in answer.items() if k != "items"} == {
        "creditedMinor": 900 + 900 + 800,
        "currency": "EUR",
        "balanceAfterMinor": balance + 2600,
    }
    # each item as listed, now cashed back, with what it credited
    assert [{k: v for k, v in i.items() if k != "held"} for i in answer["items"]] == [
        {
            **{k: v for k, v in rows[n].items() if k != "held"},
            "state": "cashed_back",
            "cashbackMinor": counted,
        }
        for n, counted in zip(ids, (900, 900, 800), strict=True)
    ]
    assert wallet.ledger.balance("op-a", player, "EUR") == balance + 2600
    (credit,) = wallet.ledger.requests_of("wallet.credit")
    assert credit.http_status == 200  # the wallet refuses a missing or different header
    assert credit.idempotency_key == credit.body["idempotencyKey"]
    assert re.fullmatch(r"c_[0-9a-f]{32}:1", credit.idempotency_key)
    assert {k: v for k, v in credit.body.items() if k not in ("requestedAt", "idempotencyKey")} == {
        "type": "wallet.credit",
        "operatorId": "op-a",
        "playerExternalId": player,
        "amountMinor": 2600,
        "currency": "EUR",
        "reason": "cashout",
        "inventoryItemIds": ids,
    }
    for number in ids:
        row = _row(env, player, number)
        assert (row["state"], row["held"], row["cashbackMinor"]) == ("cashed_back", False, None)
        assert item_moves(env.platform, number)["ItemCashedBack"] == 1
    assert sorted(i["inventoryItemId"] for i in _inventory(env, player, "cashed_back")) == sorted(
        ids
    )

    # a retry is the same answer and moves nothing; another body is a conflict
    again = _cash_out(env, player, "c-1", list(reversed(ids)))
    assert (again.status_code, again.content) == (200, response.content)
    assert error_of(_cash_out(env, player, "c-1", [plain[2]])) == (409, "IDEMPOTENCY_CONFLICT")
    assert len(wallet.ledger.requests_of("wallet.credit")) == 1

    # no cash-back of its own; already cashed back; consumed; another player's
    assert error_of(_cash_out(env, player, "c-2", [no_cashback])) == (422, "ITEM_NOT_CASHABLE")
    assert error_of(_cash_out(env, player, "c-3", [plain[0]])) == (422, "ITEM_NOT_AVAILABLE")
    assert _stake(env, player, "spend", [no_cashback], PLAIN).status_code == 200
    assert error_of(_cash_out(env, player, "c-4", [no_cashback])) == (422, "ITEM_NOT_AVAILABLE")
    assert error_of(_cash_out(env, player, "c-5", [others])) == (422, "ITEM_NOT_AVAILABLE")
    assert error_of(_cash_out(env, player, "c-6", [plain[2], others])) == (
        422,
        "ITEM_NOT_AVAILABLE",
    )
    assert len(wallet.ledger.requests_of("wallet.credit")) == 1
    assert _row(env, player, plain[2])["state"] == "unresolved"
    assert _row(env, other, others)["state"] == "unresolved"

    # in another currency: repriced at the claim-time rate (EUR 9.00 = USD 9.90)
    usd = _cash_out(env, player, "c-usd", [plain[2]], currency="USD")
    assert usd.status_code == 200, usd.text
    assert (usd.json()["creditedMinor"], usd.json()["currency"]) == (990, "USD")
    assert usd.json()["balanceAfterMinor"] == wallet.ledger.balance("op-a", player, "USD") == 990
    last = wallet.ledger.requests_of("wallet.credit")[-1]
    assert (last.body["amountMinor"], last.body["currency"]) == (990, "USD")


def test_a_refused_credit_releases_the_item_and_a_retry_credits_once(
    env: ItemsEnv, wallet: ThreadedWalletServer
) -> None:
    player = "refuse-1"
    (item,) = win_items(env, player, PLAIN, 1, "w")
    balance = wallet.ledger.balance("op-a", player, "EUR")
    wallet.faults.configure(refuse_with="DAILY_LIMIT", only_types={"wallet.credit"})
    refused = _cash_out(env, player, "c-1", [item])
    assert error_of(refused) == (422, "DAILY_LIMIT")
    assert "DAILY_LIMIT" in refused.json()["error"]["message"]
    assert refused.json()["balanceAfterMinor"] == balance
    row = _row(env, player, item)
    assert (row["state"], row["held"], row["cashbackMinor"]) == ("unresolved", False, 900)
    assert _by_items(env, player, [item]).status_code == 200  # stakeable again
    assert wallet.ledger.net_credits("op-a") == 0
    # while refusing, a retry is refused again (a fresh attempt each time)
    assert error_of(_cash_out(env, player, "c-1", [item])) == (422, "DAILY_LIMIT")

    wallet.faults.configure()
    credited = _cash_out(env, player, "c-1", [item])
    assert credited.status_code == 200, credited.text
    assert credited.json()["creditedMinor"] == 900
    assert credited.json()["balanceAfterMinor"] == balance + 900
    keys = [r.idempotency_key for r in wallet.ledger.requests_of("wallet.credit")]
    public_id = keys[0].rsplit(":", 1)[0]
    assert keys == [f"{public_id}:1", f"{public_id}:2", f"{public_id}:3"]
    assert _cash_out(env, player, "c-1", [item]).content == credited.content
    assert len(wallet.ledger.requests_of("wallet.credit")) == 3
    assert wallet.ledger.net_credits("op-a") == 900
    assert wallet.ledger.balance("op-a", player, "EUR") == balance + 900
    assert _row(env, player, item)["state"] == "cashed_back"
    assert item_moves(env.platform, item)["ItemCashedBack"] == 1


@pytest.mark.parametrize("api_kind", ["s2s", "player"])
def test_a_refused_credit_answers_the_wallets_own_code_and_the_balance_read(
    env: ItemsEnv, wallet: ThreadedWalletServer, api_kind: str
) -> None:
    """Decisions 4 for cash-back: the wallet's code (malformed ones not echoed), and a
    refusal of exactly {accepted, errorCode} gets its balance from one wallet.balance."""
    player = f"credit-codes-{api_kind}"
    (item,) = win_items(env, player, PLAIN, 1, "w")
    token = launch_session(env.api, player) if api_kind == "player" else None
    balance = wallet.ledger.balance("op-a", player, "EUR")

    def cash_out(action: str) -> httpx.Response:
        if token is None:
            return _cash_out(env, player, action, [item])
        body = {"clientActionId": action, "inventoryItemIds": [item]}
        response = env.api.play("POST", "/api/play/cashout", token, body)
        _record_credit(env, "op-a", player, action, response)
        return response

    cases = [
        ("LIMIT_REACHED", 422, "LIMIT_REACHED"),
        ("PLAYER_BLOCKED", 403, "PLAYER_BLOCKED"),
        ("INSUFFICIENT_FUNDS", 422, "INSUFFICIENT_FUNDS"),
        ("limit reached!", 422, "WALLET_REFUSED"),
    ]
    for n, (wallet_code, status, code) in enumerate(cases):
        wallet.faults.configure(refuse_with=wallet_code, only_types={"wallet.credit"})
        reads = len(wallet.ledger.requests_of("wallet.balance"))
        refused = cash_out(f"c-{n}")
        message = refused.json()["error"]["message"]
        assert (refused.status_code, refused.json()) == (
            status,
            {"error": {"code": code, "message": message}, "balanceAfterMinor": balance},
        )
        assert wallet_code not in message or code != "WALLET_REFUSED"
        credit = wallet.ledger.requests_of("wallet.credit")[-1]
        assert credit.answer == {"accepted": False, "errorCode": wallet_code}
        (read,) = wallet.ledger.requests_of("wallet.balance")[reads:]
        assert (read.body["playerExternalId"], read.body["currency"]) == (player, "EUR")
        assert _row(env, player, item)["held"] is False
    wallet.faults.configure()
    credited = cash_out("c-ok")
    assert credited.status_code == 200, credited.text
    (entry,) = credited.json()["items"]
    assert (entry["state"], entry["held"]) == ("cashed_back", False)
    assert set(entry) == set(_row(env, player, item))  # the fields inventory items carry
    assert wallet.ledger.net_credits("op-a") == 900


@pytest.mark.parametrize(
    "fault",
    [
        {"stall_seconds": 1.6},
        {"stall_seconds": 1.6, "stall_after_apply": True},
        {"status_5xx": 503},
        {"status_5xx": 500, "error_after_apply": True},
    ],
    ids=["stall", "stall-applied", "503", "500-applied"],
)
def test_an_uncertain_credit_holds_the_item_and_is_resent_with_the_same_key(
    env: ItemsEnv, wallet: ThreadedWalletServer, clock: ManualClock, fault: dict
) -> None:
    player = "unsure-1"
    (item,) = win_items(env, player, PLAIN, 1, "w")
    balance = wallet.ledger.balance("op-a", player, "EUR")
    wallet.faults.configure(only_types={"wallet.credit"}, **fault)
    started = time.monotonic()
    response = _cash_out(env, player, "c-1", [item])
    # money may have moved: not "nothing happened", and the words say what goes on
    assert error_of(response) == (503, "OUTCOME_UNKNOWN")
    assert response.json()["error"]["message"] == (
        "the credit is being confirmed with the wallet and the items stay held; the outcome "
        "is not known yet: retry with the same clientActionId to learn it"
    )
    assert time.monotonic() - started < WALLET_TIMEOUT + 1.0

    # held: not stakeable, not cashable by another action, shown as held
    row = _row(env, player, item)
    assert (row["state"], row["held"]) == ("unresolved", True)
    assert error_of(_stake(env, player, "s-1", [item], T900)) == (422, "UPGRADER_ITEM_NOT_OWNED")
    assert error_of(_by_items(env, player, [item])) == (422, "UPGRADER_ITEM_NOT_OWNED")
    assert error_of(_cash_out(env, player, "c-2", [item])) == (422, "ITEM_NOT_AVAILABLE")
    # the service re-sends while the wallet keeps failing
    wait_until(
        lambda: len(wallet.ledger.requests_of("wallet.credit")) >= 2,
        timeout=15,
        tick=lambda: clock.advance(61),
        what="re-sent credits",
    )
    assert _row(env, player, item)["state"] == "unresolved"

    wallet.faults.configure()
    wait_until(
        lambda: _row(env, player, item)["state"] == "cashed_back",
        timeout=15,
        tick=lambda: clock.advance(61),
        what="the credit acknowledged",
    )
    credits = wallet.ledger.requests_of("wallet.credit")
    assert len({r.idempotency_key for r in credits}) == 1
    assert credits[0].idempotency_key.endswith(":1")
    assert {r.body["amountMinor"] for r in credits} == {900}
    assert wallet.ledger.net_credits("op-a") == 900
    assert wallet.ledger.balance("op-a", player, "EUR") == balance + 900
    assert item_moves(env.platform, item)["ItemCashedBack"] == 1
    sent = len(credits)
    # a retry of the action now answers the credited cash-back and sends nothing
    answer = _cash_out(env, player, "c-1", [item])
    assert answer.status_code == 200, answer.text
    assert answer.json()["creditedMinor"] == 900
    assert answer.json()["balanceAfterMinor"] == balance + 900
    assert answer.json()["items"][0]["state"] == "cashed_back"
    assert len(wallet.ledger.requests_of("wallet.credit")) == sent
    assert error_of(_stake(env, player, "s-2", [item], T900)) == (422, "UPGRADER_ITEM_NOT_OWNED")


# -- 7. shipping -------------------------------------------------------------------------------


def test_shipping_requests_fulfillable_items_once(
    env: ItemsEnv, wallet: ThreadedWalletServer
) -> None:
    player = "ship-1"
    first, second = win_items(env, player, PLAIN, 2, "w")
    (digital,) = win_items(env, player, SOON_DIGITAL, 1, "w-digital")
    (others,) = win_items(env, "ship-2", PLAIN, 1, "w")
    rows = {i["inventoryItemId"]: i for i in _inventory(env, player)}

    response = _ship(env, player, "s-1", [first])
    assert response.status_code == 200, response.text
    answer = response.json()
    assert re.fullmatch(r"s_[0-9a-f]{32}", answer["shipmentId"])
    assert answer["items"] == [
        {
            **rows[first],
            "state": "shipping_requested",
            "cashbackMinor": None,
            "cashbackUncredited": ZERO,
        }
    ]
    assert _row(env, player, first)["state"] == "shipping_requested"
    assert [i["inventoryItemId"] for i in _inventory(env, player, "shipping_requested")] == [first]
    again = _ship(env, player, "s-1", [first])
    assert (again.status_code, again.content) == (200, response.content)
    other_address = {**ADDRESS, "city": "Elsewhere"}
    conflict = _ship(env, player, "s-1", [first], other_address)
    assert error_of(conflict) == (409, "IDEMPOTENCY_CONFLICT")
    assert item_moves(env.platform, first)["ItemShippingRequested"] == 1

    # a shipped item can no longer be staked, cashed back or shipped again
    assert error_of(_stake(env, player, "p-1", [first], T900)) == (422, "UPGRADER_ITEM_NOT_OWNED")
    assert error_of(_cash_out(env, player, "c-1", [first])) == (422, "ITEM_NOT_AVAILABLE")
    assert error_of(_ship(env, player, "s-2", [first])) == (422, "ITEM_NOT_AVAILABLE")
    assert error_of(_ship(env, player, "s-3", [others])) == (422, "ITEM_NOT_AVAILABLE")
    assert error_of(_ship(env, player, "s-4", [second], {})) == (422, "VALIDATION_ERROR")

    # the catalogue stops fulfilling an item the player holds: it cannot be shipped
    raw = copy.deepcopy(env.raw)
    catalog_entry(raw, SOON_DIGITAL)["fulfillable"] = False
    assert env.restart(raw) == 1
    assert env.last_topics(1)[0].endswith("CatalogItemRecord.Changed")
    refused = _ship(env, player, "s-5", [second, digital])
    assert error_of(refused) == (422, "ITEM_NOT_SHIPPABLE")
    assert str(digital) in refused.json()["error"]["message"]
    for number in (second, digital):
        row = _row(env, player, number)
        assert (row["state"], row["held"], row["cashbackMinor"]) == ("unresolved", False, 900)
    # ... but it can still be cashed back
    cashed = _cash_out(env, player, "c-2", [digital])
    assert cashed.status_code == 200, cashed.text
    assert cashed.json()["creditedMinor"] == 900
    assert wallet.ledger.requests_of("wallet.credit")[-1].body["inventoryItemIds"] == [digital]


# -- 8. Nuggets (no-loss) ----------------------------------------------------------------------


def _until(outcome: bool, play: Callable[[int], dict[str, Any]], tries: int = 40) -> dict:
    for n in range(tries):
        answer = play(n)
        if answer["round"]["isWin"] is outcome:
            return answer
    pytest.fail(f"no {'win' if outcome else 'loss'} in {tries} rounds")


def test_a_lost_no_loss_round_awards_nuggets_worth_the_stake(
    env: ItemsEnv, wallet: ThreadedWalletServer
) -> None:
    player = "nug-1"
    prizes = env.api.s2s(
        "GET",
        "/api/s2s/upgrader/prizes",
        params={"playerExternalId": player, "wagerMinor": 1000, "chanceBps": 8000},
        **KEY_NUGGETS,
    )
    assert prizes.status_code == 200, prizes.text
    body = prizes.json()
    assert body["targetBand"] == {"lowerMinor": 1000, "upperMinor": 1075}
    assert body["targetBand"] == band(1000, 1000, 8000, 20, no_loss=True)
    config = body["config"]
    assert (config["chancePresetsBps"], config["maxChanceBps"]) == ([5000, 8000], 8750)
    assert (config["defaultChanceBps"], config["houseEdgeBps"]) == (8000, 1000)
    refused = env.api.s2s(
        "GET",
        "/api/s2s/upgrader/prizes",
        params={"playerExternalId": player, "wagerMinor": 1000, "chanceBps": 9000},
        **KEY_NUGGETS,
    )
    assert error_of(refused) == (422, "VALIDATION_ERROR")
    wallet.ledger.fund("op-nuggets", player, "EUR", 100_000)

    def balance_play(chance: int, target: int, prefix: str) -> Callable[[int], dict]:
        def play(n: int) -> dict[str, Any]:
            request = {
                "playerExternalId": player,
                "clientActionId": f"{prefix}-{n}",
                "wagerMinor": 1000,
                "chanceBps": chance,
                "targetItemId": target,
            }
            response = post(env.api, "/api/s2s/upgrader/play", request, **KEY_NUGGETS)
            assert response.status_code == 200, response.text
            return response.json()

        return play

    # balance mode: W=1000; a loss at 5000 (band [1455, 1600]), a win at 8000
    lost = _until(False, balance_play(5000, T1500, "b-lose"))
    assert lost["round"]["betMinor"] == 1000
    assert lost["round"]["nuggetsAwardedMinor"] == 1000
    assert lost["facts"]["deal"]["nuggetsAwardedMinor"] == 1000
    assert lost["wonItem"] is None
    won = _until(True, balance_play(8000, PLAIN, "b-win"))
    assert won["round"]["nuggetsAwardedMinor"] == 0
    assert won["facts"]["deal"]["nuggetsAwardedMinor"] == 0
    assert won["round"]["payoutMinor"] == 1000

    # items mode: a plain item counts 900; a loss at 5000 ([1310, 1440]), a win at 8000
    def items_play(chance: int, target: int, prefix: str) -> Callable[[int], dict]:
        def play(n: int) -> dict[str, Any]:
            (item,) = win_items(env, player, PLAIN, 1, f"{prefix}-w{n}", chance=8000, **KEY_NUGGETS)
            quoted = _by_items(env, player, [item], chance, **KEY_NUGGETS).json()
            assert quoted["targetBand"] == band(900, 1000, chance, 20, no_loss=True)
            response = _stake(env, player, f"{prefix}-{n}", [item], target, chance, **KEY_NUGGETS)
            assert response.status_code == 200, response.text
            answer = response.json()
            _assert_items_round(
                answer,
                stake=[(item, PLAIN, 900)],
                chance=chance,
                target=target,
                fee=1000,
                no_loss=True,
            )
            return answer

        return play

    lost_items = _until(False, items_play(5000, T1400, "i-lose"))
    assert lost_items["round"]["nuggetsAwardedMinor"] == lost_items["round"]["betMinor"] == 900
    assert lost_items["facts"]["deal"]["nuggetsAwardedMinor"] == 900
    won_items = _until(True, items_play(8000, T900, "i-win"))
    assert won_items["round"]["nuggetsAwardedMinor"] == 0
    assert won_items["facts"]["deal"]["nuggetsAwardedMinor"] == 0
    # crediting Nuggets is the operator's business: no wallet call for them
    assert wallet.ledger.requests_of("wallet.credit") == []

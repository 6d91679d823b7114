"""Copies of one action (issue 19): every copy answers the original bytes, another body 409.

Each state-changing action (balance play, items play, cash-back, shipping, seed rotation)
is sent as 16 copies at once, over real HTTP, 20 times (20 fresh actions), on SQLite and
PostgreSQL. Half the copies go through a second API front on the same store (its own
``Platform`` and server, as a second process would be), so the in-process per-action
locks cannot hide a race: the store's uniqueness constraints must settle it. Every answer
must equal the first byte for byte, and the action must have happened once. Copies with
another body under the same ``clientActionId`` race the original ones: exactly one body
wins, its copies get its answer, the others 409 ``IDEMPOTENCY_CONFLICT``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from application.clock import ManualClock
from application.platform import Platform
from application.store import calls as store_calls
from entrypoints.app import create_app
from ops.reference_operator.wallet import ThreadedWalletServer
from tests.support.items import (
    PLAIN,
    T900,
    ItemsEnv,
    checked_env,
    item_moves,
    launch_session,
    win_items,
)
from tests.support.live import Api, LiveServer
from tests.support.signing import signed_headers

COPIES = 16
RACES = 20
MIXED_RACES = 3
ADDRESS = {"name": "A. Player", "line1": "1 Test Street", "city": "Testville", "country": "DE"}
PLAY = "/api/s2s/upgrader/play"
PLAY_ITEMS = "/api/s2s/upgrader/play-with-items"
CASHOUT = "/api/s2s/cashout"
SHIPPING = "/api/s2s/shipping"
ROTATE = "/api/s2s/fairness/rotate"

Send = Callable[[Api, int], httpx.Response]


@pytest.fixture(autouse=True)
def patient_store(monkeypatch: pytest.MonkeyPatch) -> None:
    """A store deadline a busy test machine cannot reach: these tests are about copies,
    and a store call slower than 3 s under the whole suite's load must not turn one into
    a 503 (what a 503 says is tested in tests/integration/outcomes/)."""
    monkeypatch.setattr(store_calls, "STORE_DEADLINE_SECONDS", 30.0)
    monkeypatch.setattr(store_calls, "FINISH_DEADLINE_SECONDS", 30.0)


@pytest.fixture
def env(database_url: str, clock: ManualClock, wallet: ThreadedWalletServer) -> Iterator[ItemsEnv]:
    yield from checked_env(database_url, clock, wallet)


@pytest.fixture
def clients(env: ItemsEnv) -> Iterator[list[Api]]:
    """16 clients: 8 on the environment's front, 8 on a second front on the same store
    (no background loops there: the first front runs them)."""
    second = Platform(env.platform.config, clock=env.clock)
    server = LiveServer(create_app(second, workers=False)).__enter__()
    apis = [Api(url, env.clock) for url in [env.live.url, server.url] * (COPIES // 2)]
    try:
        yield apis
    finally:
        for api in apis:
            api.close()
        server.__exit__(None, None, None)
        second.close()


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(COPIES) as executor:
        yield executor


def _race(pool: ThreadPoolExecutor, clients: list[Api], send: Send) -> list[httpx.Response]:
    """Every client sends at once (released together by a barrier)."""
    barrier = threading.Barrier(len(clients))

    def run(index: int) -> httpx.Response:
        barrier.wait(timeout=10)
        return send(clients[index], index)

    return list(pool.map(run, range(len(clients))))


def _post(api: Api, path: str, body: dict[str, Any]) -> httpx.Response:
    return api.s2s("POST", path, json.dumps(body).encode())


def _copies(
    pool: ThreadPoolExecutor, clients: list[Api], path: str, body: dict[str, Any]
) -> httpx.Response:
    """16 identical copies at once; all answer the first's bytes, which are returned."""
    return _assert_copies(_race(pool, clients, lambda api, _: _post(api, path, body)))


def _assert_copies(responses: list[httpx.Response], status: int = 200) -> httpx.Response:
    """Every copy answered the first copy's status and bytes."""
    first = responses[0]
    assert first.status_code == status, first.text
    for response in responses[1:]:
        assert (response.status_code, response.content) == (status, first.content)
    return first


def _assert_one_body_won(
    responses: list[httpx.Response], first_body: Callable[[int], bool]
) -> tuple[bool, httpx.Response]:
    """Copies of two bodies raced: all of one body's copies got one 200 answer, byte for
    byte, and all of the other body's copies 409 IDEMPOTENCY_CONFLICT. Returns (whether
    the first body won, the winners' answer)."""
    ours = [r for i, r in enumerate(responses) if first_body(i)]
    theirs = [r for i, r in enumerate(responses) if not first_body(i)]
    won, lost = (ours, theirs) if ours[0].status_code == 200 else (theirs, ours)
    answer = _assert_copies(won)
    for response in lost:
        assert response.status_code == 409, response.text
        assert response.json()["error"]["code"] == "IDEMPOTENCY_CONFLICT"
    return won is ours, answer


def _even(index: int) -> bool:
    return index % 2 == 0


def _mixed(
    pool: ThreadPoolExecutor,
    clients: list[Api],
    path: str,
    first: dict[str, Any],
    second: dict[str, Any],
) -> tuple[bool, httpx.Response]:
    """Copies of two bodies under one clientActionId, alternating, at once: one body
    won (see ``_assert_one_body_won``). Returns (whether ``first`` won, its answer)."""

    def send(api: Api, index: int) -> httpx.Response:
        return _post(api, path, first if _even(index) else second)

    return _assert_one_body_won(_race(pool, clients, send), _even)


# -- balance play -----------------------------------------------------------------------------


def _play_body(player: str, action: str, wager: int = 1000) -> dict[str, Any]:
    return {
        "playerExternalId": player,
        "clientActionId": action,
        "wagerMinor": wager,
        "chanceBps": 9000,
        "targetItemId": PLAIN,
    }


def _debits_of(env: ItemsEnv, public_id: str) -> list[str]:
    """The distinct keys of the debits the wallet applied for one round."""
    requests = env.wallet.ledger.requests_of("wallet.debit")
    keys = {r.idempotency_key for r in requests if r.body["roundId"] == public_id}
    return sorted(keys & env.wallet.ledger.applied_debit_keys("op-a"))


def test_copies_of_a_balance_play_answer_its_bytes_and_debit_once(
    env: ItemsEnv, clients: list[Api], pool: ThreadPoolExecutor
) -> None:
    player = "copy-bal"
    env.wallet.ledger.fund("op-a", player, "EUR", 1_000_000)
    for race in range(RACES):
        body = _play_body(player, f"bal-{race}")
        answer = _copies(pool, clients, PLAY, body)
        public_id = answer.json()["round"]["publicId"]
        assert _debits_of(env, public_id) == [f"{public_id}:1"]
        assert _post(env.api, PLAY, body).content == answer.content  # a later copy too

    for race in range(MIXED_RACES):
        action = f"bal-mixed-{race}"
        first_won, answer = _mixed(
            pool, clients, PLAY, _play_body(player, action), _play_body(player, action, 950)
        )
        assert answer.json()["round"]["betMinor"] == (1000 if first_won else 950)
        public_id = answer.json()["round"]["publicId"]
        assert _debits_of(env, public_id) == [f"{public_id}:1"]


# -- items play, cash-back, shipping: an action on one item -----------------------------------


def _item_races(
    env: ItemsEnv,
    pool: ThreadPoolExecutor,
    clients: list[Api],
    path: str,
    body_of: Callable[[str, int], dict[str, Any]],
    moved: str,
) -> list[tuple[str, int, httpx.Response]]:
    """RACES races of identical copies of an action on one won item, then MIXED_RACES
    races of two bodies (two items) under one id. The winning item moved (``moved``, an
    InventoryItem event) once, the losing body's item never. Returns (action, item,
    answer) of each race."""
    won = win_items(env, body_of("", 0)["playerExternalId"], PLAIN, RACES + 2 * MIXED_RACES, "w")
    done = []
    for race in range(RACES):
        body = body_of(f"same-{race}", won[race])
        answer = _copies(pool, clients, path, body)
        assert item_moves(env.platform, won[race])[moved] == 1
        assert _post(env.api, path, body).content == answer.content  # a later copy too
        done.append((body["clientActionId"], won[race], answer))
    for race in range(MIXED_RACES):
        ours, theirs = won[RACES + 2 * race], won[RACES + 2 * race + 1]
        action = f"mixed-{race}"
        first_won, answer = _mixed(
            pool, clients, path, body_of(action, ours), body_of(action, theirs)
        )
        spent, kept = (ours, theirs) if first_won else (theirs, ours)
        assert item_moves(env.platform, spent)[moved] == 1
        assert sum(item_moves(env.platform, kept).values()) == 1  # granted, nothing since
        done.append((action, spent, answer))
    return done


def test_copies_of_an_items_play_answer_its_bytes_and_consume_once(
    env: ItemsEnv, clients: list[Api], pool: ThreadPoolExecutor
) -> None:
    def body_of(action: str, item: int) -> dict[str, Any]:
        return {
            "playerExternalId": "copy-items",
            "clientActionId": action,
            "stakeItemIds": [item],
            "chanceBps": 9000,
            "targetItemId": T900,
        }

    for _, item, answer in _item_races(env, pool, clients, PLAY_ITEMS, body_of, "ItemConsumed"):
        assert [i["inventoryItemId"] for i in answer.json()["stake"]["items"]] == [item]


def test_copies_of_a_cashback_answer_its_bytes_and_credit_once(
    env: ItemsEnv, clients: list[Api], pool: ThreadPoolExecutor
) -> None:
    player = "copy-cash"

    def body_of(action: str, item: int) -> dict[str, Any]:
        return {"playerExternalId": player, "clientActionId": action, "inventoryItemIds": [item]}

    races = _item_races(env, pool, clients, CASHOUT, body_of, "ItemCashedBack")
    for action, item, answer in races:
        env.credited[("op-a", player, action)] = answer.json()["creditedMinor"]
        assert answer.json()["creditedMinor"] == 900
        assert [i["inventoryItemId"] for i in answer.json()["items"]] == [item]
    # one credit key per action, whatever its copies did
    credits = env.wallet.ledger.requests_of("wallet.credit")
    assert len({r.idempotency_key for r in credits}) == len(races)
    assert env.wallet.ledger.net_credits("op-a") == 900 * len(races)


def test_copies_of_a_shipping_request_answer_its_bytes_and_ship_once(
    env: ItemsEnv, clients: list[Api], pool: ThreadPoolExecutor
) -> None:
    def body_of(action: str, item: int) -> dict[str, Any]:
        return {
            "playerExternalId": "copy-ship",
            "clientActionId": action,
            "inventoryItemIds": [item],
            "address": ADDRESS,
        }

    races = _item_races(env, pool, clients, SHIPPING, body_of, "ItemShippingRequested")
    for _, item, answer in races:
        assert [i["inventoryItemId"] for i in answer.json()["items"]] == [item]


# -- seed rotation ----------------------------------------------------------------------------


def _revealed(env: ItemsEnv, player: str) -> list[dict[str, Any]]:
    response = env.api.s2s("GET", "/api/s2s/fairness", params={"playerExternalId": player})
    assert response.status_code == 200, response.text
    return response.json()["revealed"]


def test_copies_of_a_rotation_answer_its_bytes_and_rotate_once(
    env: ItemsEnv, clients: list[Api], pool: ThreadPoolExecutor
) -> None:
    player = "copy-rotate"
    for race in range(RACES):
        body = {"playerExternalId": player, "clientActionId": f"rot-{race}"}
        answer = _copies(pool, clients, ROTATE, body)
        revealed = _revealed(env, player)
        assert len(revealed) == race + 1
        assert revealed[0]["serverSeed"] == answer.json()["previous"]["serverSeed"]
        assert answer.json()["active"]["nonce"] == 0
        assert _post(env.api, ROTATE, body).content == answer.content

    for race in range(MIXED_RACES):
        body = {"playerExternalId": player, "clientActionId": f"rot-mixed-{race}"}
        first, second = {**body, "clientSeed": "seed-a"}, {**body, "clientSeed": "seed-b"}
        first_won, answer = _mixed(pool, clients, ROTATE, first, second)
        expected = "seed-a" if first_won else "seed-b"
        assert answer.json()["active"]["clientSeed"] == expected
        assert len(_revealed(env, player)) == RACES + race + 1


def test_a_replayed_signed_rotation_rotates_once(
    env: ItemsEnv, clients: list[Api], pool: ThreadPoolExecutor, clock: ManualClock
) -> None:
    """Without a clientActionId the signed request is the action: 50 replays of its bytes
    within the skew window (at once, and later) answer the one rotation it made; a new
    signature (a later timestamp) is a new rotation."""
    player = "replay-rotate"
    body = json.dumps({"playerExternalId": player}).encode()
    headers = signed_headers("key-a", "secret-a-1", int(clock.now()), "POST", ROTATE, body)

    def replay(api: Api, _: int) -> httpx.Response:
        return api.http.post(ROTATE, content=body, headers=headers)

    answer = _assert_copies(_race(pool, clients, replay) + _race(pool, clients, replay))
    clock.advance(250)  # still within the 300 s window of the timestamp signed
    later = [replay(env.api, 0) for _ in range(50 - 2 * COPIES)]
    _assert_copies([answer, *later])
    assert len(_revealed(env, player)) == 1

    again = env.api.s2s("POST", ROTATE, body)  # signed now: another request
    assert again.status_code == 200, again.text
    assert again.json()["previous"]["serverSeedHash"] == answer.json()["active"]["serverSeedHash"]
    assert len(_revealed(env, player)) == 2


def test_player_rotations_take_a_client_action_id(env: ItemsEnv) -> None:
    player = "player-rotate"
    token = launch_session(env.api, player)
    path = "/api/play/fairness/rotate"
    first = env.api.play("POST", path, token, json={"clientActionId": "r-1"})
    assert first.status_code == 200, first.text
    copy = env.api.play("POST", path, token, json={"clientActionId": "r-1"})
    assert copy.content == first.content
    other = env.api.play("POST", path, token, json={"clientActionId": "r-1", "clientSeed": "x"})
    assert (other.status_code, other.json()["error"]["code"]) == (409, "IDEMPOTENCY_CONFLICT")
    # the action is the player's, whichever API names it
    s2s = _post(env.api, ROTATE, {"playerExternalId": player, "clientActionId": "r-1"})
    assert s2s.content == first.content
    # without one, each request is a rotation of its own (the session is the player's)
    for _ in range(2):
        assert env.api.play("POST", path, token, json={}).status_code == 200
    assert len(_revealed(env, player)) == 3

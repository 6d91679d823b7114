"""Cancels and held rounds (decisions §11) over real HTTP, on SQLite and PostgreSQL, against
the real reference wallet on loopback (its fault knobs make the refusals, exactly
``{accepted: false, errorCode}``, and the uncertain answers).

After every test (``checked_env``): the wallet's net debits equal the bets of the settled
balance rounds (a cancelled round was settled and debited), its cancel credits are
exactly one credit of each cancelled round's bet, its other credits the cash-backs the
log records, nothing is left waiting for the wallet; and the audit of the whole log finds
nothing and counts the cancelled rounds.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from uuid import UUID, uuid5

import httpx
import pytest

from application.audit.auditor import audit
from application.clock import ManualClock, iso_utc
from application.platform import Platform
from entrypoints.cli_ops import pending_wallet_operations
from entrypoints.runtime import Runtime
from ops.reference_operator.wallet import ThreadedWalletServer
from projections.hash_chain import HashChain
from projections.runner import ProjectionRunner
from tests.integration.test_projection_batches import _check_every_way
from tests.support.config import make_config
from tests.support.items import (
    KEY_B,
    OPERATORS,
    PLAIN,
    T900,
    ItemsEnv,
    checked_env,
    error_of,
    item_moves,
    post,
    win_items,
)
from tests.support.ledger import cancel_credits, open_cancel_credits
from tests.support.waiting import wait_until

PLAY = "/api/s2s/upgrader/play"
WALLET_TIMEOUT = 1.0  # wallet_timeout_seconds of the ItemsEnv platforms
RACERS = 8


def cancel_path(public_id: str) -> str:
    return f"/api/s2s/rounds/{public_id}/cancel"


@pytest.fixture
def env(database_url: str, clock: ManualClock, wallet: ThreadedWalletServer) -> Iterator[ItemsEnv]:
    """``checked_env`` (the money after the test, cancel credits included), then the
    audit of the whole log: no violation, and the cancelled rounds counted."""
    checked = checked_env(database_url, clock, wallet)
    items_env = next(checked)
    try:
        yield items_env
        platform = items_env.platform
        wait_until(lambda: open_cancel_credits(platform) == 0, timeout=15, what="cancels")
        runner = ProjectionRunner(
            platform.events, platform.db, [HashChain(platform.events.recorder)]
        )
        runner.catch_up()
        report = audit(platform.events, platform.db)
        assert report.violations == []
        cancelled = sum(len(cancel_credits(wallet.ledger, op)) for op in OPERATORS)
        assert (report.rounds_cancelled, report.open_cancel_credits) == (cancelled, [])
        assert report.rounds_held == len(report.held_rounds)
        next(checked, None)  # the money checks, then the platform stops
    finally:
        checked.close()  # stops the platform when a check above failed


# -- helpers ------------------------------------------------------------------------------------


def _cancel(
    env: ItemsEnv, public_id: str, player: str, action: str, reason: str | None = None
) -> httpx.Response:
    body = {"playerExternalId": player, "clientActionId": action}
    if reason is not None:
        body["reason"] = reason
    return post(env.api, cancel_path(public_id), body)


def _round_of(env: ItemsEnv, player: str, number: int) -> str:
    """The publicId of the round that granted ``player``'s inventory item ``number``."""
    return _item(env, player, number)["roundPublicId"]


def _round(env: ItemsEnv, public_id: str, **key: str) -> httpx.Response:
    return env.api.s2s("GET", f"/api/s2s/rounds/{public_id}", **key)


def _item(env: ItemsEnv, player: str, number: int) -> dict[str, Any]:
    items = env.api.s2s("GET", "/api/s2s/inventory", params={"playerExternalId": player})
    return next(i for i in items.json()["items"] if i["inventoryItemId"] == number)


def _listed(env: ItemsEnv, **params: Any) -> list[str]:
    response = env.api.s2s("GET", "/api/s2s/rounds", params={"limit": 100, **params})
    assert response.status_code == 200, response.text
    return [r["publicId"] for r in response.json()["rounds"]]


def _credits(wallet: ThreadedWalletServer, public_id: str) -> list[Any]:
    return [
        r for r in wallet.ledger.requests_of("wallet.credit") if r.body.get("roundId") == public_id
    ]


def _won_round(env: ItemsEnv, player: str, prefix: str) -> tuple[dict[str, Any], int]:
    """A balance win of PLAIN (W=1000 EUR at 90 %): (its play answer, its item)."""
    (item,) = win_items(env, player, PLAIN, 1, prefix)
    public_id = _round_of(env, player, item)
    view = _round(env, public_id).json()
    assert view["status"] == "settled" and view["isWin"] is True
    return view, item


def _lost_round(env: ItemsEnv, player: str) -> dict[str, Any]:
    """A balance loss (W=1000 EUR at 10 %, target item 9): its round view."""
    env.wallet.ledger.fund("op-a", player, "EUR", 60_000)
    for n in range(50):
        body = {
            "playerExternalId": player,
            "clientActionId": f"lose-{n}",
            "wagerMinor": 1000,
            "chanceBps": 1000,
            "targetItemId": 9,
        }
        answer = post(env.api, PLAY, body).json()
        if not answer["round"]["isWin"]:
            assert answer["wonItem"] is None
            return answer["round"]
    pytest.fail("no loss in 50 plays at 10 %")


def _hook(wallet: ThreadedWalletServer, kind: str, public_id: str) -> dict[str, Any]:
    return wait_until(
        lambda: next(
            (
                h
                for h in list(wallet.ledger.received_webhooks)
                if h["type"] == kind and h["data"]["round"]["publicId"] == public_id
            ),
            None,
        ),
        timeout=15,
        what=f"the {kind} webhook",
    )


def _pending(env: ItemsEnv) -> list[list[Any]]:
    runtime = Runtime(env.platform, workers=())
    return [row for row in pending_wallet_operations(runtime) if row[0] == "cancel"]


# -- accepted -----------------------------------------------------------------------------------


def test_an_accepted_cancel_credits_the_bet_and_cancels_the_items(
    env: ItemsEnv, wallet: ThreadedWalletServer, clock: ManualClock
) -> None:
    player = "cancel-ok"
    settled, item = _won_round(env, player, "w")
    public_id = settled["publicId"]
    balance = wallet.ledger.balance("op-a", player, "EUR")
    response = _cancel(env, public_id, player, "k-1", reason="game fault")
    assert response.status_code == 200, response.text
    cancelled = {**settled, "status": "cancelled"}
    assert response.json() == {
        "round": cancelled,
        "creditedMinor": 1000,
        "currency": "EUR",
        "balanceAfterMinor": balance + 1000,
    }
    assert wallet.ledger.balance("op-a", player, "EUR") == balance + 1000
    (credit,) = _credits(wallet, public_id)
    assert credit.idempotency_key == f"{public_id}:cancel:1"
    expected = {
        "type": "wallet.credit",
        "operatorId": "op-a",
        "playerExternalId": player,
        "amountMinor": 1000,
        "currency": "EUR",
        "idempotencyKey": f"{public_id}:cancel:1",
        "reason": "cancel",
        "roundId": public_id,
    }
    assert {k: credit.body[k] for k in expected} == expected
    assert "inventoryItemIds" not in credit.body

    # the round and its item, everywhere they are shown
    assert _round(env, public_id).json() == cancelled
    assert public_id in _listed(env, playerExternalId=player)
    assert _listed(env, status="cancelled") == [public_id]
    assert _listed(env, playerExternalId=player, status="cancelled") == [public_id]
    assert _listed(env, status="held") == []
    row = _item(env, player, item)
    assert (row["state"], row["held"], row["cashbackMinor"]) == ("cancelled", False, None)
    cancelled_items = env.api.s2s(
        "GET", "/api/s2s/inventory", params={"playerExternalId": player, "state": "cancelled"}
    ).json()["items"]
    assert [i["inventoryItemId"] for i in cancelled_items] == [item]
    assert item_moves(env.platform, item)["ItemCancelled"] == 1
    # no longer stakeable, cashable or shippable
    stake = {
        "playerExternalId": player,
        "clientActionId": "s-1",
        "stakeItemIds": [item],
        "chanceBps": 9000,
        "targetItemId": T900,
    }
    assert error_of(post(env.api, "/api/s2s/upgrader/play-with-items", stake)) == (
        422,
        "UPGRADER_ITEM_NOT_OWNED",
    )
    cash = {"playerExternalId": player, "clientActionId": "c-1", "inventoryItemIds": [item]}
    assert error_of(post(env.api, "/api/s2s/cashout", cash)) == (422, "ITEM_NOT_AVAILABLE")
    ship = {**cash, "clientActionId": "sh-1", "address": {"name": "A"}}
    assert error_of(post(env.api, "/api/s2s/shipping", ship)) == (422, "ITEM_NOT_AVAILABLE")

    # a copy answers the same bytes and credits nothing; another body is a conflict
    again = _cancel(env, public_id, player, "k-1", reason="game fault")
    assert (again.status_code, again.content) == (200, response.content)
    assert error_of(_cancel(env, public_id, player, "k-1")) == (409, "IDEMPOTENCY_CONFLICT")
    other, _ = _won_round(env, player, "w2")
    assert error_of(_cancel(env, other["publicId"], player, "k-1", reason="game fault")) == (
        409,
        "IDEMPOTENCY_CONFLICT",
    )
    # a new cancel of a cancelled round
    assert error_of(_cancel(env, public_id, player, "k-2")) == (422, "ROUND_NOT_CANCELLABLE")
    assert len(_credits(wallet, public_id)) == 1

    # the round_cancelled webhook, after the round's round_settled
    hook = _hook(wallet, "round_cancelled", public_id)
    settled_hook = _hook(wallet, "round_settled", public_id)
    rid = UUID(hex=public_id[2:])
    with env.platform.db.transaction() as cur:
        cur.execute(
            "SELECT created_at FROM webhook_outbox WHERE round_id = ?",
            (f"{rid.hex}:round_cancelled",),
        )
        (created,) = cur.fetchone()
    assert hook == {
        "id": str(uuid5(rid, "round_cancelled")),
        "type": "round_cancelled",
        "createdAt": iso_utc(created),
        "operatorId": "op-a",
        "playerExternalId": player,
        "data": {"round": cancelled, "creditedMinor": 1000},
    }
    assert settled_hook["data"]["round"] == settled
    received = [h["id"] for h in wallet.ledger.received_webhooks]
    assert received.index(settled_hook["id"]) < received.index(hook["id"])


def test_a_lost_round_is_cancelled_with_nothing_to_take(
    env: ItemsEnv, wallet: ThreadedWalletServer
) -> None:
    player = "cancel-lost"
    lost = _lost_round(env, player)
    balance = wallet.ledger.balance("op-a", player, "EUR")
    response = _cancel(env, lost["publicId"], player, "k-1")
    assert response.status_code == 200, response.text
    assert response.json() == {
        "round": {**lost, "status": "cancelled"},
        "creditedMinor": 1000,
        "currency": "EUR",
        "balanceAfterMinor": balance + 1000,
    }


# -- refused -------------------------------------------------------------------------------------


def test_a_refused_credit_leaves_the_round_held_until_a_new_cancel(
    env: ItemsEnv, wallet: ThreadedWalletServer
) -> None:
    player = "cancel-refused"
    settled, item = _won_round(env, player, "w")
    public_id = settled["publicId"]
    balance = wallet.ledger.balance("op-a", player, "EUR")
    held = {**settled, "status": "held"}
    wallet.faults.configure(refuse_with="LIMIT_REACHED", only_types={"wallet.credit"})
    refused = _cancel(env, public_id, player, "k-1")
    message = refused.json()["error"]["message"]
    assert (refused.status_code, refused.json()) == (
        422,
        {
            "error": {"code": "LIMIT_REACHED", "message": message},
            "round": held,
            "balanceAfterMinor": balance,  # read with wallet.balance: the refusal has none
        },
    )
    (credit,) = _credits(wallet, public_id)
    assert credit.answer == {"accepted": False, "errorCode": "LIMIT_REACHED"}
    # held: the item is cancelled, the round listed as held, shown by wallet pending
    assert _item(env, player, item)["state"] == "cancelled"
    assert _round(env, public_id).json() == held
    assert _listed(env, status="held") == [public_id]
    ((kind, key, amount, currency, state, _, _, last_error, _),) = _pending(env)
    assert (kind, key, amount, currency, state, last_error) == (
        "cancel",
        f"{public_id}:cancel:1",
        1000,
        "EUR",
        "refused",
        "LIMIT_REACHED",
    )
    # a copy of the refused action answers the same refusal and sends nothing
    copy = _cancel(env, public_id, player, "k-1")
    assert (copy.status_code, copy.content) == (422, refused.content)
    assert len(_credits(wallet, public_id)) == 1
    # a blocked player: 403 with the wallet's code, the next attempt
    wallet.faults.configure(refuse_with="PLAYER_BLOCKED", only_types={"wallet.credit"})
    assert error_of(_cancel(env, public_id, player, "k-2")) == (403, "PLAYER_BLOCKED")
    wallet.faults.configure(refuse_with="no such thing", only_types={"wallet.credit"})
    assert error_of(_cancel(env, public_id, player, "k-3")) == (422, "WALLET_REFUSED")

    wallet.faults.configure()
    done = _cancel(env, public_id, player, "k-4")
    assert done.status_code == 200, done.text
    assert done.json() == {
        "round": {**settled, "status": "cancelled"},
        "creditedMinor": 1000,
        "currency": "EUR",
        "balanceAfterMinor": balance + 1000,
    }
    keys = [r.idempotency_key for r in _credits(wallet, public_id)]
    assert keys == [f"{public_id}:cancel:{n}" for n in (1, 2, 3, 4)]
    assert cancel_credits(wallet.ledger, "op-a") == {f"{public_id}:cancel:4": 1000}
    assert wallet.ledger.balance("op-a", player, "EUR") == balance + 1000
    # the refused action still answers its refusal, byte for byte
    assert _cancel(env, public_id, player, "k-1").content == refused.content
    assert _listed(env, status="held") == [] and _pending(env) == []


# -- uncertain ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fault",
    [{"status_5xx": 503}, {"stall_seconds": 1.6, "stall_after_apply": True}],
    ids=["503", "stall-applied"],
)
def test_an_uncertain_credit_is_resent_with_the_same_key_until_answered(
    env: ItemsEnv, wallet: ThreadedWalletServer, clock: ManualClock, fault: dict[str, Any]
) -> None:
    player = "cancel-unsure"
    settled, item = _won_round(env, player, "w")
    public_id = settled["publicId"]
    balance = wallet.ledger.balance("op-a", player, "EUR")
    wallet.faults.configure(only_types={"wallet.credit"}, **fault)
    started = time.monotonic()
    response = _cancel(env, public_id, player, "k-1")
    assert error_of(response) == (503, "OUTCOME_UNKNOWN")
    assert response.json()["error"]["message"] == (
        "the cancel credit is being confirmed with the wallet and the round stays held; the "
        "outcome is not known yet: retry with the same clientActionId to learn it"
    )
    assert time.monotonic() - started < WALLET_TIMEOUT + 1.0
    assert _round(env, public_id).json() == {**settled, "status": "held"}
    assert _item(env, player, item)["state"] == "cancelled"
    assert _listed(env, status="held") == [public_id]
    # held with its credit under way: no other cancel
    assert error_of(_cancel(env, public_id, player, "k-2")) == (422, "ROUND_NOT_CANCELLABLE")
    wait_until(
        lambda: len(_credits(wallet, public_id)) >= 2,
        timeout=15,
        tick=lambda: clock.advance(61),
        what="re-sent credits",
    )
    wallet.faults.configure()
    wait_until(
        lambda: _round(env, public_id).json()["status"] == "cancelled",
        timeout=15,
        tick=lambda: clock.advance(61),
        what="the cancel completed by the service",
    )
    credits = _credits(wallet, public_id)
    assert {r.idempotency_key for r in credits} == {f"{public_id}:cancel:1"}
    assert {r.body["amountMinor"] for r in credits} == {1000}
    assert cancel_credits(wallet.ledger, "op-a") == {f"{public_id}:cancel:1": 1000}
    assert wallet.ledger.balance("op-a", player, "EUR") == balance + 1000
    sent = len(credits)
    answer = _cancel(env, public_id, player, "k-1")
    assert answer.status_code == 200, answer.text
    assert answer.json() == {
        "round": {**settled, "status": "cancelled"},
        "creditedMinor": 1000,
        "currency": "EUR",
        "balanceAfterMinor": balance + 1000,
    }
    assert len(_credits(wallet, public_id)) == sent
    assert _hook(wallet, "round_cancelled", public_id)["data"]["creditedMinor"] == 1000


# -- not cancellable ----------------------------------------------------------------------------


def test_rounds_that_cannot_be_cancelled(env: ItemsEnv, wallet: ThreadedWalletServer) -> None:
    player = "cancel-no"
    won = win_items(env, player, PLAIN, 3, "w")
    cashed, staked, kept = won
    # an item cashed back
    cash = {"playerExternalId": player, "clientActionId": "c-1", "inventoryItemIds": [cashed]}
    answer = post(env.api, "/api/s2s/cashout", cash)
    assert answer.status_code == 200, answer.text
    env.credited[("op-a", player, "c-1")] = answer.json()["creditedMinor"]
    refusal = _cancel(env, _round_of(env, player, cashed), player, "k-1")
    assert error_of(refusal) == (422, "ROUND_NOT_CANCELLABLE")
    assert refusal.json()["error"]["message"] == (
        f"the round cannot be cancelled: its item {cashed} is cashed_back"
    )
    # an item staked in an items play, and that items-mode round itself
    stake = {
        "playerExternalId": player,
        "clientActionId": "s-1",
        "stakeItemIds": [staked],
        "chanceBps": 9000,
        "targetItemId": T900,
    }
    played = post(env.api, "/api/s2s/upgrader/play-with-items", stake)
    assert played.status_code == 200, played.text
    assert error_of(_cancel(env, _round_of(env, player, staked), player, "k-2")) == (
        422,
        "ROUND_NOT_CANCELLABLE",
    )
    items_round = played.json()["round"]["publicId"]
    assert error_of(_cancel(env, items_round, player, "k-3")) == (422, "ROUND_NOT_CANCELLABLE")
    # a voided round (the wallet refused its debit)
    broke = {
        "playerExternalId": "cancel-broke",
        "clientActionId": "p-1",
        "wagerMinor": 1000,
        "chanceBps": 9000,
        "targetItemId": PLAIN,
    }
    voided = post(env.api, PLAY, broke)
    assert error_of(voided) == (422, "INSUFFICIENT_FUNDS")
    voided_id = voided.json()["round"]["publicId"]
    assert error_of(_cancel(env, voided_id, "cancel-broke", "k-4")) == (
        422,
        "ROUND_NOT_CANCELLABLE",
    )
    # an open round (its debit uncertain, rolled back)
    wallet.faults.configure(status_5xx=503, only_types={"wallet.debit"}, times=1)
    unsure = {**broke, "playerExternalId": player, "clientActionId": "p-2"}
    assert error_of(post(env.api, PLAY, unsure)) == (503, "WALLET_UNAVAILABLE")
    wallet.faults.configure()
    from domain.ids import round_id, round_public_id

    open_id = round_public_id(round_id("op-a", player, "p-2"))
    assert error_of(_cancel(env, open_id, player, "k-5")) == (422, "ROUND_NOT_CANCELLABLE")
    # nothing was held, taken or credited by any of these
    assert [
        r for r in wallet.ledger.requests_of("wallet.credit") if r.body["reason"] == "cancel"
    ] == []
    assert _item(env, player, kept)["state"] == "unresolved"
    assert _listed(env, status="held") == []


def test_another_operators_or_players_round_is_not_found(
    env: ItemsEnv, wallet: ThreadedWalletServer
) -> None:
    player = "cancel-owner"
    settled, item = _won_round(env, player, "w")
    public_id = settled["publicId"]
    for path_id, who, key in [
        (public_id, player, KEY_B),  # another operator's key
        (public_id, "someone-else", {}),  # this operator, another player
        ("r_" + "0" * 32, player, {}),  # no such round
        ("not-a-round", player, {}),
    ]:
        body = {"playerExternalId": who, "clientActionId": f"k-{len(who)}-{path_id[:4]}"}
        response = post(env.api, cancel_path(path_id), body, **key)
        assert error_of(response) == (404, "NOT_FOUND"), (path_id, who, key)
    assert _item(env, player, item)["state"] == "unresolved"
    assert _round(env, public_id).json() == settled
    assert error_of(env.api.s2s("GET", "/api/s2s/rounds")) == (422, "VALIDATION_ERROR")
    bad = env.api.s2s("GET", "/api/s2s/rounds", params={"status": "lost"})
    assert error_of(bad) == (422, "VALIDATION_ERROR")
    malformed = post(env.api, cancel_path(public_id), {"playerExternalId": player})
    assert error_of(malformed) == (422, "VALIDATION_ERROR")
    too_long = {"playerExternalId": player, "clientActionId": "k", "reason": "x" * 201}
    assert error_of(post(env.api, cancel_path(public_id), too_long)) == (422, "VALIDATION_ERROR")
    assert json.loads(_round(env, public_id).content)["status"] == "settled"


# -- races ----------------------------------------------------------------------------------------


def test_racing_copies_and_racing_cancels_credit_once(
    env: ItemsEnv, wallet: ThreadedWalletServer
) -> None:
    player = "cancel-race"
    first, _ = _won_round(env, player, "w1")
    second, _ = _won_round(env, player, "w2")
    third, item = _won_round(env, player, "w3")
    with ThreadPoolExecutor(max_workers=RACERS) as pool:
        # copies of one action: one credit, every copy the same bytes
        copies = list(
            pool.map(lambda _: _cancel(env, first["publicId"], player, "same"), range(RACERS))
        )
        # different actions on one round: one cancels it, the others find it held or done
        rivals = list(
            pool.map(lambda n: _cancel(env, second["publicId"], player, f"r-{n}"), range(RACERS))
        )
        # a cancel against a cash-back of its item: exactly one of them takes the item
        cash = {"playerExternalId": player, "clientActionId": "c-race", "inventoryItemIds": [item]}
        raced = list(
            pool.map(
                lambda f: f(),
                [
                    lambda: _cancel(env, third["publicId"], player, "k-race"),
                    lambda: post(env.api, "/api/s2s/cashout", cash),
                ],
            )
        )
    assert {(r.status_code, r.content) for r in copies} == {(200, copies[0].content)}
    assert len(_credits(wallet, first["publicId"])) == 1
    assert sorted(r.status_code for r in rivals) == [200] + [422] * (RACERS - 1)
    assert {error_of(r) for r in rivals if r.status_code != 200} == {(422, "ROUND_NOT_CANCELLABLE")}
    assert len(_credits(wallet, second["publicId"])) == 1
    cancelled, cashed = raced
    assert sorted([cancelled.status_code, cashed.status_code]) == [200, 422]
    if cashed.status_code == 200:
        env.credited[("op-a", player, "c-race")] = cashed.json()["creditedMinor"]
        assert error_of(cancelled) == (422, "ROUND_NOT_CANCELLABLE")
        assert _item(env, player, item)["state"] == "cashed_back"
    else:
        assert error_of(cashed) == (422, "ITEM_NOT_AVAILABLE")
        assert _item(env, player, item)["state"] == "cancelled"


# -- the read models ---------------------------------------------------------------------------


def test_a_log_with_cancels_projects_to_the_same_rows_in_batches(
    env: ItemsEnv, wallet: ThreadedWalletServer, clock: ManualClock
) -> None:
    """Accepted, refused-then-accepted and still-held cancels (of wins, a loss and a box
    round):
    every projection gives the same rows event by event, in batches of 500 and of 7
    (a settle and its cancel now in one batch, now in two), racing, and rewound."""
    player = "cancel-rows"
    wins = [_won_round(env, player, f"w{n}")[0]["publicId"] for n in range(3)]
    lost = _lost_round(env, player)["publicId"]
    assert _cancel(env, wins[0], player, "k-0").status_code == 200
    wallet.faults.configure(refuse_with="LIMIT_REACHED", only_types={"wallet.credit"}, times=2)
    assert error_of(_cancel(env, wins[1], player, "k-1")) == (422, "LIMIT_REACHED")
    assert error_of(_cancel(env, wins[2], player, "k-2")) == (422, "LIMIT_REACHED")
    assert _cancel(env, wins[1], player, "k-3").status_code == 200
    assert _cancel(env, lost, player, "k-4").status_code == 200
    buy = {"playerExternalId": player, "clientActionId": "buy", "boxId": 7, "boxVersionId": 3}
    box_round = post(env.api, "/api/s2s/purchase", {**buy, "count": 2}).json()["round"]
    assert _cancel(env, box_round["publicId"], player, "k-5").status_code == 200
    database_url, raw = env.database_url, env.raw
    env.stop()  # no live projection loop while the runners below rewind the tables
    platform = Platform(make_config(database_url, raw, wallet_url=wallet.url), clock=clock)
    try:
        rows = _check_every_way(platform)
    finally:
        platform.close()
        env.start(raw)
    statuses = {r[1]: r[5] for r in rows["round_history"] if r[1] in (*wins, lost)}
    assert statuses == {
        wins[0]: "cancelled",
        wins[1]: "cancelled",
        wins[2]: "held",
        lost: "cancelled",
    }
    facts = {r[1] for r in rows["analytics_rounds"]}
    assert wins[2] in facts and not facts & {wins[0], wins[1], lost}
    flows = [r for r in rows["analytics_item_flows"] if r[6] == "cancelled"]
    # every item taken with its round, the held round's too (a box round: both items)
    assert sorted(r[13] for r in flows) == sorted([*wins, *[box_round["publicId"]] * 2])
    credits = {r[0]: r[5] for r in rows["wallet_cancel_credits"]}
    assert credits == {
        f"{wins[0]}:cancel:1": "credited",
        f"{wins[1]}:cancel:1": "refused",
        f"{wins[1]}:cancel:2": "credited",
        f"{wins[2]}:cancel:1": "refused",
        f"{lost}:cancel:1": "credited",
        f"{box_round['publicId']}:cancel:1": "credited",
    }
    hooks = [r for r in rows["webhook_outbox"] if r[1].endswith(":round_cancelled")]
    assert sorted(json.loads(r[6])["data"]["round"]["publicId"] for r in hooks) == sorted(
        [wins[0], wins[1], lost, box_round["publicId"]]
    )
    # the box round taken back: no fact, and its daily rows (it was the only one) gone
    assert rows["analytics_box_rounds"] == [] and rows["analytics_box_daily"] == []
    assert [r for r in rows["analytics_game_daily"] if r[3] == "boxes"] == []
    # the Upgrader's game row counts the two rounds that stand: the held win and one more
    upgrader = [r for r in rows["analytics_game_daily"] if r[3] == "upgrader"]
    assert sum(r[6] for r in upgrader) == len(rows["analytics_rounds"])


# -- box rounds ------------------------------------------------------------------------------------


def test_a_box_round_is_cancelled_with_all_its_items(
    env: ItemsEnv, wallet: ThreadedWalletServer
) -> None:
    """A purchase of three boxes of box 7 (version 3: 3.00 EUR, one item, item 1): its bet
    of 9.00 EUR comes back and its three items are cancelled together."""
    player = "cancel-boxes"
    wallet.ledger.fund("op-a", player, "EUR", 10_000)
    body = {
        "playerExternalId": player,
        "clientActionId": "buy-1",
        "boxId": 7,
        "boxVersionId": 3,
        "count": 3,
    }
    bought = post(env.api, "/api/s2s/purchase", body)
    assert bought.status_code == 200, bought.text
    public_id = bought.json()["round"]["publicId"]
    items = [won["inventoryItemId"] for won in bought.json()["wonItems"]]
    assert len(items) == 3 and bought.json()["round"]["betMinor"] == 900
    settled = _round(env, public_id).json()
    assert settled["game"] == "boxes"
    balance = wallet.ledger.balance("op-a", player, "EUR")
    assert balance == 10_000 - 900
    response = _cancel(env, public_id, player, "k-1")
    assert response.status_code == 200, response.text
    assert response.json() == {
        "round": {**settled, "status": "cancelled"},
        "creditedMinor": 900,
        "currency": "EUR",
        "balanceAfterMinor": 10_000,
    }
    (credit,) = _credits(wallet, public_id)
    assert (credit.idempotency_key, credit.body["amountMinor"], credit.body["reason"]) == (
        f"{public_id}:cancel:1",
        900,
        "cancel",
    )
    assert [_item(env, player, n)["state"] for n in items] == ["cancelled"] * 3
    # the webhook's round is its round_settled's (the answer's round: a box round's history
    # row adds its reels and won items)
    hook = _hook(wallet, "round_cancelled", public_id)
    answered = _hook(wallet, "round_settled", public_id)["data"]["round"]
    assert answered == bought.json()["round"]
    assert hook["data"] == {"round": {**answered, "status": "cancelled"}, "creditedMinor": 900}
    # a box round with one item cashed back is not cancellable
    again = post(env.api, "/api/s2s/purchase", {**body, "clientActionId": "buy-2", "count": 2})
    assert again.status_code == 200, again.text
    first, second = (won["inventoryItemId"] for won in again.json()["wonItems"])
    cash = {"playerExternalId": player, "clientActionId": "c-1", "inventoryItemIds": [first]}
    cashed = post(env.api, "/api/s2s/cashout", cash)
    assert cashed.status_code == 200, cashed.text
    env.credited[("op-a", player, "c-1")] = cashed.json()["creditedMinor"]
    refusal = _cancel(env, again.json()["round"]["publicId"], player, "k-2")
    assert error_of(refusal) == (422, "ROUND_NOT_CANCELLABLE")
    assert _item(env, player, second)["state"] == "unresolved"

"""``round_settled`` webhooks (decisions §9) over real HTTP to the real reference receiver.

Runs on SQLite and, when UPGRADER_TEST_POSTGRES_URL is set, on PostgreSQL. The receiver
verifies every signature and stores only the deliveries it accepts; a spy on its ledger
also records the refused attempts. Backoff delays are passed by advancing the manual
clock inside the wait loops, never by sleeping.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from application.clock import ManualClock
from application.platform import Platform
from domain.round import Round
from domain.signing import verify_outbound
from entrypoints import cli
from entrypoints.app import create_app
from ops.reference_operator.wallet import ThreadedWalletServer
from projections.dispatcher import DEAD_AFTER_SECONDS, WebhookDispatcher, signed_request
from projections.outbox import reset_projection, webhook_id
from projections.runner import ProjectionRunner
from tests.support.config import OUTBOUND, make_config, raw_config
from tests.support.live import Api, LiveServer
from tests.support.waiting import wait_until

OP = "op-a"
PLAY = "/api/s2s/upgrader/play"
BACKOFF_STEP = 601.0  # past the 600 s backoff cap: every retry is due at the next poll


def _play(api: Api, action: str, player: str = "p-1", wager: int = 1000) -> Any:
    body = {
        "playerExternalId": player,
        "clientActionId": action,
        "wagerMinor": wager,
        "chanceBps": 5000,
        "targetItemId": 7,
    }
    return api.s2s("POST", PLAY, json.dumps(body).encode())


def _settled(api: Api, action: str, player: str = "p-1") -> dict[str, Any]:
    response = _play(api, action, player)
    assert response.status_code == 200, response.text
    return response.json()


def _rows(platform: Platform, sql: str, params: tuple = ()) -> list[tuple]:
    with platform.db.transaction() as cur:
        cur.execute(sql, params)
        return [tuple(row) for row in cur.fetchall()]


def _outbox(platform: Platform) -> list[tuple]:
    return _rows(platform, "SELECT * FROM webhook_outbox ORDER BY webhook_id")


def _delivery(platform: Platform, hook_id: str) -> dict[str, Any] | None:
    rows = _rows(
        platform,
        "SELECT state, attempts, last_error FROM webhook_deliveries WHERE webhook_id = ?",
        (hook_id,),
    )
    return dict(zip(("state", "attempts", "last_error"), rows[0], strict=True)) if rows else None


def _hook_id(action: str, player: str = "p-1") -> str:
    opening = {"operator_id": OP, "player_external_id": player, "client_action_id": action}
    return webhook_id(Round.create_id(opening))


def _runner(live: LiveServer) -> ProjectionRunner:
    """The server's own runner (a second runner's DDL would race the server's steps)."""
    return live.server.config.app.state.runtime.runner


def _received_ids(wallet: ThreadedWalletServer) -> list[str]:
    return [hook["id"] for hook in list(wallet.ledger.received_webhooks)]


@pytest.fixture
def attempts(wallet: ThreadedWalletServer) -> Iterator[list[tuple[dict[str, Any], bool]]]:
    """Every authenticated delivery the receiver saw: (body, stored)."""
    seen: list[tuple[dict[str, Any], bool]] = []
    original = wallet.ledger.record_webhook

    def spy(body: dict[str, Any], *, stored: bool) -> None:
        seen.append((body, stored))
        original(body, stored=stored)

    wallet.ledger.record_webhook = spy  # type: ignore[method-assign]
    yield seen


def test_a_settled_round_sends_one_signed_webhook_equal_to_the_play_answer(
    api: Api, wallet: ThreadedWalletServer, platform: Platform, attempts: list
) -> None:
    wallet.ledger.fund(OP, "p-1", "EUR", 100_000)
    answer = _settled(api, "a-1")
    hooks = wait_until(lambda: list(wallet.ledger.received_webhooks), what="the webhook")
    assert len(hooks) == 1
    hook = hooks[0]
    assert set(hook) == {"id", "type", "createdAt", "operatorId", "playerExternalId", "data"}
    assert hook["type"] == "round_settled"
    assert hook["operatorId"] == OP
    assert hook["playerExternalId"] == "p-1"
    assert hook["id"] == _hook_id("a-1")
    assert hook["createdAt"] == answer["round"]["settledAt"]
    assert hook["data"] == {
        "round": answer["round"],
        "wonItem": answer["wonItem"],
        "stake": None,
        "facts": answer["facts"],
    }
    assert wallet.ledger.auth_failures == []  # the receiver verified the signature
    # the stored payload is the exact body sent, signed without X-Key-Id
    [(payload,)] = _rows(platform, "SELECT payload FROM webhook_outbox")
    assert json.loads(payload) == hook
    body, headers = signed_request(wallet.webhook_url, OUTBOUND[OP], payload, 1_800_000_000)
    assert "X-Key-Id" not in headers
    assert (
        verify_outbound(
            OUTBOUND[OP],
            headers["X-Timestamp"],
            headers["X-Signature"],
            "POST",
            "/webhooks",
            body,
            1_800_000_000,
        )
        is None
    )
    wait_until(lambda: _delivery(platform, hook["id"])["state"] == "delivered", what="recorded")
    # delivered once: a later round arrives, the first one is not sent again
    _settled(api, "a-2")
    wait_until(lambda: len(wallet.ledger.received_webhooks) == 2, what="the second webhook")
    assert [body["id"] for body, _ in attempts].count(hook["id"]) == 1


def test_a_voided_round_sends_nothing(
    api: Api, wallet: ThreadedWalletServer, platform: Platform
) -> None:
    refused = _play(api, "void-1", player="p-broke")
    assert refused.status_code == 422
    assert refused.json()["round"]["status"] == "voided"
    wallet.ledger.fund(OP, "p-1", "EUR", 100_000)
    answer = _settled(api, "after-void")
    wait_until(lambda: wallet.ledger.received_webhooks, what="the settled round's webhook")
    assert [h["data"]["round"]["publicId"] for h in wallet.ledger.received_webhooks] == [
        answer["round"]["publicId"]
    ]
    assert wallet.ledger.webhook_attempts == 1
    players = _rows(platform, "SELECT player_external_id FROM webhook_outbox")
    assert players == [("p-1",)]


def test_retries_keep_the_id_and_the_settle_order_per_player(
    api: Api,
    wallet: ThreadedWalletServer,
    platform: Platform,
    clock: ManualClock,
    attempts: list,
) -> None:
    wallet.ledger.fund(OP, "p-1", "EUR", 100_000)
    wallet.ledger.fund(OP, "p-2", "EUR", 100_000)
    wallet.faults.configure(webhook_status=503)
    order = {"p-1": [], "p-2": []}
    for index in range(4):
        order["p-1"].append(_settled(api, f"o-{index}")["round"]["publicId"])
        if index < 2:
            order["p-2"].append(_settled(api, f"q-{index}", player="p-2")["round"]["publicId"])
    heads = {order["p-1"][0], order["p-2"][0]}

    def tries_of(public_id: str) -> int:
        return sum(
            1 for body, _ in list(attempts) if body["data"]["round"]["publicId"] == public_id
        )

    wait_until(
        lambda: all(tries_of(head) >= 3 for head in heads),
        timeout=20,
        what="failed attempts",
        tick=lambda: clock.advance(BACKOFF_STEP),
    )
    # only each player's oldest webhook was tried while the receiver was down
    tried = {body["data"]["round"]["publicId"] for body, _ in list(attempts)}
    assert tried == heads
    wallet.faults.configure()  # the receiver is back
    wait_until(
        lambda: len(wallet.ledger.received_webhooks) == 6,
        timeout=20,
        what="every webhook",
        tick=lambda: clock.advance(BACKOFF_STEP),
    )
    by_round: dict[str, set[str]] = {}
    for body, _ in attempts:
        by_round.setdefault(body["data"]["round"]["publicId"], set()).add(body["id"])
    assert all(len(ids) == 1 for ids in by_round.values())  # one id on every attempt
    for player, rounds in order.items():
        first_success: list[str] = []
        for body, stored in attempts:
            public_id = body["data"]["round"]["publicId"]
            if stored and body["playerExternalId"] == player and public_id not in first_success:
                first_success.append(public_id)
        assert first_success == rounds
    received = wallet.ledger.received_webhooks
    assert len({h["id"] for h in received}) == 6
    assert wallet.ledger.auth_failures == []


def test_a_webhook_dies_after_the_horizon_and_redeliver_brings_it_back(
    api: Api,
    wallet: ThreadedWalletServer,
    platform: Platform,
    clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    wallet.ledger.fund(OP, "p-1", "EUR", 100_000)
    wallet.faults.configure(webhook_status=503)
    _settled(api, "d-1")
    first = _hook_id("d-1")
    wait_until(lambda: (_delivery(platform, first) or {}).get("attempts", 0) >= 1, what="a try")
    _settled(api, "d-2")
    second = _hook_id("d-2")
    clock.advance(DEAD_AFTER_SECONDS + 1)
    wait_until(
        lambda: _delivery(platform, first)["state"] == "dead",
        what="the dead letter",
        tick=lambda: clock.advance(1),
    )
    assert _delivery(platform, first)["last_error"] == "HTTP 503"
    # a dead webhook no longer blocks the player's later ones
    wait_until(
        lambda: (_delivery(platform, second) or {}).get("attempts", 0) >= 1,
        what="the next one tried",
    )
    assert _delivery(platform, second)["state"] == "pending"
    wallet.faults.configure()
    wait_until(
        lambda: _received_ids(wallet) == [second],
        what="the later webhook",
        tick=lambda: clock.advance(BACKOFF_STEP),
    )

    monkeypatch.setattr("application.config.load.load_config", lambda path=None: platform.config)
    assert cli.main(["outbox", "dead"]) == 0
    assert first in capsys.readouterr().out
    assert cli.main(["outbox", "redeliver", "--all-dead"]) == 0
    assert f"requeued {first}" in capsys.readouterr().out
    wait_until(lambda: _received_ids(wallet) == [second, first], what="the redelivered one")
    wait_until(lambda: _delivery(platform, first)["state"] == "delivered", what="recorded")
    assert cli.main(["outbox", "dead"]) == 0
    assert first not in capsys.readouterr().out
    assert cli.main(["outbox", "redeliver", "no-such-id"]) == 1


def test_rebuilding_the_outbox_from_the_log_gives_identical_rows(
    api: Api,
    live: LiveServer,
    wallet: ThreadedWalletServer,
    platform: Platform,
    clock: ManualClock,
) -> None:
    wallet.ledger.fund(OP, "p-1", "EUR", 100_000)
    wallet.ledger.fund(OP, "p-2", "EUR", 100_000)
    for index in range(3):
        _settled(api, f"r-{index}")
        clock.advance(7)
        _settled(api, f"s-{index}", player="p-2")
    _play(api, "broke", player="p-broke")
    wait_until(lambda: len(wallet.ledger.received_webhooks) == 6, what="every webhook")
    before = _outbox(platform)
    assert len(before) == 6
    sent = wallet.ledger.webhook_attempts

    reset_projection(platform.db)
    _runner(live).catch_up("webhook_outbox")
    assert _outbox(platform) == before
    # the delivery state survives the rebuild: nothing is sent again
    _settled(api, "after-rebuild")
    wait_until(lambda: len(wallet.ledger.received_webhooks) == 7, what="the next webhook")
    assert wallet.ledger.webhook_attempts == sent + 1


def test_an_operator_without_webhook_url_gets_no_webhooks(
    database_url: str, clock: ManualClock, wallet: ThreadedWalletServer
) -> None:
    raw = raw_config(database_url)
    for operator in raw["operators"]:
        operator["wallet_url"] = wallet.url
    platform = Platform(make_config(database_url, raw=raw, wallet_timeout_seconds=1), clock=clock)
    platform.record_configuration()
    try:
        with LiveServer(create_app(platform)) as live:
            client = Api(live.url, clock)
            wallet.ledger.fund(OP, "p-1", "EUR", 100_000)
            _settled(client, "no-hook")
            client.close()
            _runner(live).catch_up("webhook_outbox")
            assert _outbox(platform) == []
            assert _rows(platform, "SELECT COUNT(*) FROM webhook_openings") == [(0,)]
        assert wallet.ledger.webhook_attempts == 0
    finally:
        platform.close()


def test_competing_dispatchers_deliver_each_webhook_once_in_order(
    api: Api,
    live: LiveServer,
    wallet: ThreadedWalletServer,
    platform: Platform,
    clock: ManualClock,
    attempts: list,
) -> None:
    """The server's dispatcher and two more claim from one outbox (leases, SKIP LOCKED)."""
    players = ["c-1", "c-2", "c-3"]
    for player in players:
        wallet.ledger.fund(OP, player, "EUR", 100_000)
    wallet.faults.configure(webhook_status=503)
    order: dict[str, list[str]] = {player: [] for player in players}
    for index in range(4):
        for player in players:
            answer = _settled(api, f"c-{index}", player=player)
            order[player].append(answer["round"]["publicId"])
    runner = _runner(live)
    runner.catch_up("webhook_outbox")

    async def race() -> None:
        stopping = asyncio.Event()
        extra = [  # one row at a time each, so that the claimers interleave
            WebhookDispatcher(platform, runner, concurrency=1, owner=f"extra-{i}") for i in range(2)
        ]
        tasks = [asyncio.create_task(d.run_forever(stopping)) for d in extra]
        wallet.faults.configure()

        def all_arrived() -> None:
            wait_until(
                lambda: len(wallet.ledger.received_webhooks) >= 12,
                timeout=20,
                what="every webhook",
                tick=lambda: clock.advance(BACKOFF_STEP),
            )

        try:
            await anyio.to_thread.run_sync(all_arrived)
        finally:
            stopping.set()
            await asyncio.gather(*tasks)

    asyncio.run(race())
    stored = [body for body, ok in list(attempts) if ok]
    assert len(stored) == 12
    assert len({body["id"] for body in stored}) == 12  # no webhook stored twice
    for player, rounds in order.items():
        arrived = [
            b["data"]["round"]["publicId"] for b in stored if b["playerExternalId"] == player
        ]
        assert arrived == rounds

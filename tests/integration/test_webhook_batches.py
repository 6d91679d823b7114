"""The dispatcher's batched bookkeeping: leases set by one statement, finished deliveries
recorded together (and in the same transaction as the next claim), only by the lease
owner; the heads-only claim query.

Real SQLite and (when UPGRADER_TEST_POSTGRES_URL is set) PostgreSQL, real signed POSTs to
the reference receiver on loopback. The outbox rows are written with the outbox
projection's own INSERT statements; no server runs, so only the dispatchers made here
claim. The receiver is given no secret for ``op-b``: its webhooks are refused with 401.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest

from application.clock import ManualClock
from application.platform import Platform
from application.store.sql import execute_in_order
from ops.reference_operator.wallet import ThreadedWalletServer
from projections import outbox
from projections.dispatcher import Claimed, WebhookDispatcher
from projections.runner import ProjectionRunner

COLUMNS = "webhook_id, state, attempts, last_error, lease_owner, first_failed_at"


@pytest.fixture
def runner(platform: Platform, wallet: ThreadedWalletServer) -> ProjectionRunner:
    del wallet.secrets["op-b"]  # op-b's deliveries fail: HTTP 401
    return ProjectionRunner(platform.events, platform.db, [outbox.WebhookOutbox()])


def _enqueue(platform: Platform, rows: list[tuple[str, str, str, int]]) -> None:
    """(webhook_id, operator_id, player, position) rows, pending and due now."""
    now = platform.clock.now()
    statements: list[tuple[str, tuple[Any, ...]]] = []
    for hook_id, operator_id, player, position in rows:
        payload = (
            f'{{"id":"{hook_id}","type":"round_settled","operatorId":"{operator_id}",'
            f'"playerExternalId":"{player}","data":{{}}}}'
        )
        params = (hook_id, f"round-{hook_id}", operator_id, player, position, now, payload)
        statements.append((outbox._ENQUEUE, params))
        statements.append((outbox._PENDING, (hook_id, now)))
    with platform.db.transaction() as cur:
        execute_in_order(cur, statements)


def _state(platform: Platform) -> dict[str, tuple]:
    with platform.db.transaction() as cur:
        cur.execute(f"SELECT {COLUMNS} FROM webhook_deliveries ORDER BY webhook_id")  # noqa: S608
        return {row[0]: tuple(row[1:]) for row in cur.fetchall()}


def _leases(platform: Platform) -> dict[str, tuple]:
    with platform.db.transaction() as cur:
        cur.execute("SELECT webhook_id, lease_owner, leased_until FROM webhook_deliveries")
        return {row[0]: (row[1], row[2]) for row in cur.fetchall()}


def _received(wallet: ThreadedWalletServer) -> Counter[str]:
    return Counter(hook["id"] for hook in list(wallet.ledger.received_webhooks))


async def _attempt_all(dispatcher: WebhookDispatcher, rows: list[Claimed]) -> list:
    try:
        errors = await asyncio.gather(*(dispatcher._attempt(row) for row in rows))
    finally:
        await dispatcher.close()
    return list(zip(rows, errors, strict=True))


def test_the_claim_takes_each_players_oldest_pending_row_and_leases_them_at_once(
    platform: Platform, runner: ProjectionRunner
) -> None:
    _enqueue(
        platform,
        [
            ("w1", "op-a", "p-1", 10),
            ("w2", "op-a", "p-1", 11),
            ("w3", "op-a", "p-2", 12),
            ("w4", "op-a", "p-2", 13),
            ("w5", "op-a", "p-3", 14),
            ("w6", "op-b", "p-1", 15),  # another operator's p-1: its own queue
        ],
    )
    with platform.db.transaction() as cur:
        cur.execute("UPDATE webhook_deliveries SET state = 'delivered' WHERE webhook_id = 'w1'")
        cur.execute("UPDATE webhook_deliveries SET state = 'dead' WHERE webhook_id = 'w3'")
        cur.execute(  # p-3's head is backing off: it blocks p-3 and is not claimed
            "UPDATE webhook_deliveries SET next_attempt_at = ? WHERE webhook_id = 'w5'",
            (platform.clock.now() + 60,),
        )
    dispatcher = WebhookDispatcher(platform, runner, owner="d-1", lease_seconds=300)
    claimed = dispatcher._claim(10)
    assert [row.webhook_id for row in claimed] == ["w2", "w4", "w6"]
    assert [(row.operator_id, row.player_external_id) for row in claimed] == [
        ("op-a", "p-1"),
        ("op-a", "p-2"),
        ("op-b", "p-1"),
    ]
    leases = _leases(platform)
    assert {hook: leases[hook][0] for hook in leases} == {
        "w1": None,
        "w2": "d-1",
        "w3": None,
        "w4": "d-1",
        "w5": None,
        "w6": "d-1",
    }
    assert len({leases[hook][1] for hook in ("w2", "w4", "w6")}) == 1  # one statement
    # leased heads are not claimed again, and still block their players' later rows
    _enqueue(platform, [("w7", "op-a", "p-1", 16)])
    assert dispatcher._claim(10) == []
    # the limit keeps settle order across players
    with platform.db.transaction() as cur:
        cur.execute("UPDATE webhook_deliveries SET leased_until = NULL, lease_owner = NULL")
    assert [row.webhook_id for row in dispatcher._claim(2)] == ["w2", "w4"]


def test_deliveries_finished_in_one_turn_are_recorded_together_then_the_next_is_claimed(
    platform: Platform, runner: ProjectionRunner, wallet: ThreadedWalletServer, clock: ManualClock
) -> None:
    _enqueue(
        platform,
        [
            ("w1", "op-a", "p-1", 1),
            ("w2", "op-a", "p-1", 2),
            ("w3", "op-a", "p-2", 3),
            ("w4", "op-b", "p-9", 4),
        ],
    )
    dispatcher = WebhookDispatcher(platform, runner, owner="d-1")
    claimed = dispatcher._claim(10)
    assert [row.webhook_id for row in claimed] == ["w1", "w3", "w4"]
    finished = asyncio.run(_attempt_all(dispatcher, claimed))
    assert [(row.webhook_id, error) for row, error in finished] == [
        ("w1", None),
        ("w3", None),
        ("w4", "HTTP 401"),
    ]
    assert _received(wallet) == Counter({"w1": 1, "w3": 1})
    now = platform.clock.now()
    # one turn: the three results written, and p-1's next webhook claimed in the same
    # transaction (it sees w1 delivered); w4 backs off, so p-9 has nothing due
    next_rows = dispatcher._turn(finished, 10)
    assert [row.webhook_id for row in next_rows] == ["w2"]
    assert _state(platform) == {
        "w1": ("delivered", 1, None, None, None),
        "w2": ("pending", 0, None, "d-1", None),
        "w3": ("delivered", 1, None, None, None),
        "w4": ("pending", 1, "HTTP 401", None, now),
    }
    with platform.db.transaction() as cur:
        cur.execute(
            "SELECT next_attempt_at, last_attempt_at FROM webhook_deliveries "
            "WHERE webhook_id = 'w4'"
        )
        next_attempt, last_attempt = cur.fetchone()
    assert last_attempt == now
    assert now + 0.5 <= next_attempt <= now + 1.0  # first backoff: 1 s times [0.5, 1]
    clock.advance(2)
    wallet.secrets["op-b"] = "outbound-b-secret"  # the receiver now accepts op-b
    finished = asyncio.run(_attempt_all(dispatcher, [*next_rows, *dispatcher._claim(10)]))
    assert [(row.webhook_id, row.attempts, error) for row, error in finished] == [
        ("w2", 0, None),
        ("w4", 1, None),
    ]
    assert dispatcher._turn(finished, 10) == []
    assert _state(platform) == {
        "w1": ("delivered", 1, None, None, None),
        "w2": ("delivered", 1, None, None, None),
        "w3": ("delivered", 1, None, None, None),
        "w4": ("delivered", 2, None, None, now),
    }
    assert _received(wallet) == Counter({"w1": 1, "w2": 1, "w3": 1, "w4": 1})


def test_a_lease_taken_over_by_another_dispatcher_is_not_overwritten_by_the_batch(
    platform: Platform, runner: ProjectionRunner, wallet: ThreadedWalletServer
) -> None:
    _enqueue(platform, [("w1", "op-a", "p-1", 1), ("w2", "op-a", "p-2", 2)])
    slow = WebhookDispatcher(platform, runner, owner="slow", lease_seconds=0)
    claimed = slow._claim(10)
    assert [row.webhook_id for row in claimed] == ["w1", "w2"]
    finished = asyncio.run(_attempt_all(slow, claimed))
    assert [error for _, error in finished] == [None, None]
    # meanwhile slow's leases expired and another dispatcher took w1 over
    other = WebhookDispatcher(platform, runner, owner="other", lease_seconds=300)
    taken = other._claim(1)
    assert [row.webhook_id for row in taken] == ["w1"]
    other_lease = _leases(platform)["w1"]
    # slow's batch records w2 (still its lease) and leaves w1 to its new owner
    assert slow._turn(finished, 10) == []
    assert _state(platform) == {
        "w1": ("pending", 0, None, "other", None),
        "w2": ("delivered", 1, None, None, None),
    }
    assert _leases(platform)["w1"] == other_lease
    # the new owner delivers w1 again (at least once) and records it
    again = asyncio.run(_attempt_all(other, taken))
    other._turn(again, 10)
    assert _state(platform) == {
        "w1": ("delivered", 1, None, None, None),
        "w2": ("delivered", 1, None, None, None),
    }
    assert _received(wallet) == Counter({"w1": 2, "w2": 1})


def test_run_forever_delivers_every_players_webhooks_in_order(
    platform: Platform, runner: ProjectionRunner, wallet: ThreadedWalletServer
) -> None:
    players = [f"p-{i}" for i in range(5)]
    rows = [
        (f"w-{player}-{n}", "op-a", player, 100 + n * len(players) + i)
        for n in range(6)
        for i, player in enumerate(players)
    ]
    _enqueue(platform, rows)
    dispatcher = WebhookDispatcher(platform, runner, owner="d-1", concurrency=3)

    async def run() -> None:
        stopping = asyncio.Event()
        task = asyncio.create_task(dispatcher.run_forever(stopping))
        for _ in range(400):
            await asyncio.sleep(0.05)
            if len(wallet.ledger.received_webhooks) >= len(rows):
                break
        stopping.set()
        await task

    asyncio.run(run())
    received = [hook["id"] for hook in list(wallet.ledger.received_webhooks)]
    assert sorted(received) == sorted(row[0] for row in rows)  # each once
    for player in players:
        assert [h for h in received if h.startswith(f"w-{player}-")] == [
            f"w-{player}-{n}" for n in range(6)
        ]
    # the last results were recorded when the loop stopped
    assert set(_state(platform).values()) == {("delivered", 1, None, None, None)}

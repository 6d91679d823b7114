"""The bench's bulk history (ops/bench/history.py) is what the platform would have written.

On a small sample on PostgreSQL: every seeded event equals, field for field (the moment
aside), the event the real aggregates record for the same round; every read model
equals a rebuild by the real projection code from the seeded log; the webhooks of the
past rounds are delivered; and ``upgrader audit`` passes over the store, re-deriving
every roll once a player's seed is revealed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from application.audit.auditor import audit
from application.platform import Platform
from domain.inventory import InventoryItem
from domain.player_fairness import PlayerFairness
from domain.round import Round
from entrypoints.runtime import Runtime, all_projections
from ops.bench.history import seed_history
from projections.runner import ProjectionRunner, rebuild, tables_of
from tests.support.config import make_config

pytestmark = pytest.mark.postgres

PLAYERS = ["h-1", "h-2", "h-3"]
ROUNDS = 45


@pytest.fixture
def seeded(postgres_url: str) -> Iterator[tuple[Platform, int]]:
    config = make_config(postgres_url, wallet_url="http://127.0.0.1:9/wallet")
    platform = Platform(config)
    platform.record_configuration()
    head = platform.events.recorder.max_notification_id()
    result = seed_history(platform, PLAYERS, ROUNDS, chunk=20)  # three chunks
    assert (result.rounds, result.players) == (ROUNDS, 3)
    assert platform.events.recorder.max_notification_id() == head + result.events
    yield platform, head
    platform.close()


def _stored_after(platform: Platform, head: int) -> list[Any]:
    return list(platform.events.recorder.select_notifications(head + 1, 10_000))


def _state(stored: Any) -> dict[str, Any]:
    state = json.loads(bytes(stored.state))
    assert set(state["timestamp"]) == {"_type_", "_data_"}
    del state["timestamp"]  # the moment the event was made: the one field that differs
    return state


def test_every_event_is_the_one_the_aggregates_record(seeded) -> None:
    """Each seeded round is replayed through the real aggregates with its recorded
    values; the stored events must be the same topics, ids, versions and fields."""
    platform, head = seeded
    mapper = platform.events.mapper
    stored = _stored_after(platform, head)
    pairs: dict[str, PlayerFairness] = {}
    expected: list[Any] = []
    events = {n.id: mapper.to_domain_event(n) for n in stored}
    for notification in stored:
        event = events[notification.id]
        if not isinstance(event, Round.Opened):
            continue
        opening = event.opening
        round_events = [events[i] for i in range(notification.id, notification.id + 4)]
        attempted, debited, settled = round_events[1:]
        round_ = Round(opening)
        round_.attempt_debit(
            attempted.idempotency_key, attempted.amount_minor, attempted.currency, attempted.at
        )
        debit = {
            "attempt": debited.attempt,
            "idempotency_key": debited.idempotency_key,
            "balance_after_minor": debited.balance_after_minor,
            "provider_txn_ref": debited.provider_txn_ref,
            "at": debited.at,
        }
        round_.settle(debit, settled.settlement)
        player = opening["player_external_id"]
        pair = pairs.get(player)
        if pair is None:
            settlement = settled.settlement
            pair = pairs[player] = PlayerFairness(
                operator_id=opening["operator_id"],
                player_external_id=player,
                server_seed_hash=settlement["server_seed_hash"],
                client_seed=settlement["client_seed"],
                at=events[notification.id + 4].at,
            )
        assert pair.use_nonce(opening["public_id"]) == settled.settlement["nonce"]
        made = [*round_.collect_events(), *pair.collect_events()]
        won = settled.settlement["won_item"]
        if won is not None:
            grant = events[notification.id + len(made)].grant
            assert grant["inventory_item_id"] == won["inventory_item_id"]
            made += InventoryItem(grant).collect_events()
        expected += [mapper.to_stored_event(e) for e in made]
    assert len(expected) == len(stored)
    assert sum(1 for n in stored if n.topic.endswith("ItemGranted")) > 5  # wins and losses
    assert sum(1 for n in stored if n.topic.endswith("SeedPairStarted")) == 3
    for want, got in zip(expected, stored, strict=True):
        assert (got.topic, got.originator_id, got.originator_version) == (
            want.topic,
            want.originator_id,
            want.originator_version,
        )
        assert _state(got) == _state(want)


def _snapshot(platform: Platform, tables: list[str]) -> dict[str, list[tuple]]:
    with platform.db.transaction() as cur:
        found = {}
        for table in tables:
            cur.execute(f"SELECT * FROM {table}")  # noqa: S608 - names from our own DDL
            found[table] = sorted(tuple(row) for row in cur.fetchall())
        cur.execute("SELECT name, position FROM projection_tracking ORDER BY name")
        found["projection_tracking"] = [tuple(row) for row in cur.fetchall()]
        return found


def test_every_read_model_equals_a_rebuild_from_the_seeded_log(seeded) -> None:
    platform, _ = seeded
    runner = ProjectionRunner(platform.events, platform.db, all_projections(platform))
    tables = [table for p in runner.projections.values() for table in tables_of(p)]
    written = _snapshot(platform, tables)
    assert len(written["round_history"]) == ROUNDS
    assert len(written["webhook_outbox"]) == ROUNDS
    for name in runner.projections:
        rebuild(runner, name)
    assert _snapshot(platform, tables) == written


def test_the_past_webhooks_are_delivered(seeded) -> None:
    platform, _ = seeded
    with platform.db.transaction() as cur:
        cur.execute("SELECT state, attempts, COUNT(*) FROM webhook_deliveries GROUP BY 1, 2")
        assert [tuple(row) for row in cur.fetchall()] == [("delivered", 1, ROUNDS)]


def test_the_audit_passes_and_verifies_the_revealed_rolls(seeded) -> None:
    platform, _ = seeded
    Runtime(platform, workers=()).fairness.rotate("op-a", "h-2", None)  # reveals h-2's seed
    report = audit(platform.events, platform.db)
    assert report.violations == []
    assert (report.rounds_settled, report.rounds_open) == (ROUNDS, 0)
    assert report.fairness_verified == ROUNDS // 3  # h-2's rounds
    assert report.fairness_committed == ROUNDS - ROUNDS // 3

"""Batched projections write exactly the rows of event-by-event processing; the projection
loop wakes on PostgreSQL's NOTIFY.

Two logs: the audit tests' played store (balance and items plays, stakes, a cash-back,
voids, an uncertain debit rolled back, a configuration change) and a generated one whose
operator has a webhook URL (so the outbox renders webhooks). Each is projected once
event by event (``process``, one event per transaction), then with ``process_batch`` in
batches of 500 and of 7 (so a round's ``Opened`` and settle fall now in one batch, now in
two), by two racing runners, and with one projection rewound behind the others: every
table of every projection must be identical each time.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Iterator

import psycopg
import pytest

from application.clock import ManualClock
from application.platform import Platform
from entrypoints.runtime import Runtime
from ops.bench import projections as bench
from projections.runner import ProjectionRunner, tables_of
from projections.wakeup import NotifyListener
from tests.conftest import POSTGRES_URL
from tests.integration.test_audit import (
    Played,
    StoreCopy,
    no_loss_config,
)
from tests.integration.test_audit import copy as copy
from tests.integration.test_audit import played as played

PerEvent = bench.PerEvent  # a projection without its process_batch: event by event


def _tables(runner: ProjectionRunner) -> list[str]:
    names = [t for p in runner.projections.values() for t in tables_of(p)]
    return [*names, "webhook_deliveries"]


def _dump(platform: Platform, runner: ProjectionRunner) -> dict[str, list[tuple]]:
    dump = {}
    with platform.db.transaction() as cur:
        for table in _tables(runner):
            cur.execute(f"SELECT * FROM {table}")  # noqa: S608 - our own table names
            dump[table] = sorted((tuple(row) for row in cur.fetchall()), key=repr)
    return dump


def _rewind(platform: Platform, runner: ProjectionRunner, names: list[str]) -> None:
    with platform.db.transaction() as cur:
        for name in names:
            cur.execute("UPDATE projection_tracking SET position = 0 WHERE name = ?", (name,))
            for table in tables_of(runner.projections[name]):
                cur.execute(f"DELETE FROM {table}")  # noqa: S608
            if name == "webhook_outbox":
                cur.execute("DELETE FROM webhook_deliveries")


def _runner(platform: Platform, batched: bool, batch_size: int) -> ProjectionRunner:
    projections = bench.projections(platform)
    if not batched:
        projections = [PerEvent(p) for p in projections]
    return ProjectionRunner(platform.events, platform.db, projections, batch_size=batch_size)


def _drain(runner: ProjectionRunner) -> None:
    while runner.run_pass():
        pass


def _check_every_way(platform: Platform) -> dict[str, list[tuple]]:
    head = platform.events.recorder.max_notification_id()
    one_by_one = _runner(platform, batched=False, batch_size=1)
    _rewind(platform, one_by_one, list(one_by_one.projections))
    _drain(one_by_one)
    expected = _dump(platform, one_by_one)

    for size in (500, 7):
        runner = _runner(platform, batched=True, batch_size=size)
        _rewind(platform, runner, list(runner.projections))
        _drain(runner)
        assert runner.positions() == dict.fromkeys(runner.projections, head)
        assert _dump(platform, runner) == expected, size

    # two runners racing over the same log: every event applied exactly once
    first, second = (_runner(platform, batched=True, batch_size=50) for _ in range(2))
    _rewind(platform, first, list(first.projections))
    threads = [threading.Thread(target=_drain, args=(r,)) for r in (first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert _dump(platform, first) == expected

    # one projection far behind the others (a rebuild) catches up through run_pass
    runner = _runner(platform, batched=True, batch_size=40)
    _rewind(platform, runner, ["analytics", "event_chain"])
    passes = 0
    while runner.run_pass():
        passes += 1
    assert passes == -(-len(expected["event_chain"]) // 40)  # one batch per pass
    assert _dump(platform, runner) == expected
    return expected


def _drop_projection_tables(platform: Platform) -> None:
    """The store copy's tables lost their keys in the copy: let the runner recreate them."""
    runner_tables = ["projection_tracking"]
    for projection in bench.projections(platform):
        runner_tables += tables_of(projection)
        for statement in projection.schema:
            if "CREATE TABLE" in statement:
                runner_tables.append(statement.split("EXISTS")[1].split("(")[0].strip())
    with platform.db.transaction() as cur:
        for table in dict.fromkeys(runner_tables):
            cur.execute(f"DROP TABLE IF EXISTS {table}")


def _keep_only_the_log(store: StoreCopy) -> None:
    """A PostgreSQL copy is made with CREATE TABLE AS (no keys): drop all but the events
    table, so the platform and the runner create their tables afresh."""
    if store.played.kind != "postgres":
        return
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s "
            "AND table_name <> 'upgrader_events'",
            (store.schema,),
        ).fetchall()
        for (table,) in tables:
            conn.execute(f'DROP TABLE "{store.schema}"."{table}"')


def test_the_played_log_projects_to_the_same_rows_in_batches(played: Played, copy) -> None:
    _keep_only_the_log(copy)
    platform = Platform(no_loss_config(copy.url, "http://127.0.0.1:9/wallet"), clock=ManualClock())
    try:
        _drop_projection_tables(platform)
        rows = _check_every_way(platform)
        expected = played.expected
        assert len(rows["round_history"]) == expected["roundsChecked"]
        assert (
            sum(1 for r in rows["round_history"] if r[5] == "settled")
            == (expected["roundsSettled"])
        )
        assert sum(1 for r in rows["round_history"] if r[5] == "voided") == expected["roundsVoided"]
        assert len(rows["analytics_rounds"]) == expected["roundsSettled"]
        assert len(rows["event_chain"]) == expected["eventsReplayed"]
        cashed = [r for r in rows["analytics_item_flows"] if r[6] == "cashed_back"]
        assert len(cashed) == len(played.cashed_back)
        assert sum(r[3] for r in rows["chain_heads"]) == expected["eventsReplayed"]
    finally:
        platform.close()


@pytest.fixture
def generated(database_url: str) -> Iterator[Platform]:
    clock = ManualClock(start=1_800_000_000.0)
    platform = Platform(bench.config(database_url), clock=clock)
    platform.record_configuration()
    bench.generate(platform, clock, 120)
    yield platform
    platform.close()


def test_generated_rounds_with_webhooks_project_to_the_same_rows(generated: Platform) -> None:
    rows = _check_every_way(generated)
    assert len(rows["round_history"]) == 120
    assert len(rows["webhook_outbox"]) == 120
    assert len(rows["webhook_deliveries"]) == 120
    assert rows["webhook_openings"] == []
    assert len(rows["analytics_rounds"]) == 120
    assert sum(r[6] for r in rows["analytics_daily"]) == 120  # the rounds column
    head = generated.events.recorder.max_notification_id()
    assert len(rows["event_chain"]) == head
    assert [r[1] for r in rows["chain_heads"]] == [head]


@pytest.mark.postgres
def test_the_listener_calls_back_on_notify_and_stops(postgres_url: str) -> None:
    # a channel of its own: the event table's channel is shared by every schema of the
    # database (other test runs append too)
    channel = f"wake_{uuid.uuid4().hex[:12]}"
    calls: list[float] = []
    woken = threading.Event()

    def notified() -> None:
        calls.append(time.monotonic())
        woken.set()

    listener = NotifyListener(POSTGRES_URL, channel, notified).start()
    try:
        assert listener.listening.wait(5)
        assert woken.wait(5)  # once after connecting
        woken.clear()
        assert not woken.wait(0.3)
        assert len(calls) == 1
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(f"NOTIFY {channel}")
        assert woken.wait(5)
        assert len(calls) == 2
    finally:
        listener.stop()
    assert not listener._thread.is_alive()
    assert not listener.listening.is_set()


@pytest.mark.postgres
def test_the_projection_loop_wakes_on_notify_not_on_its_poll(postgres_url: str) -> None:
    platform = Platform(no_loss_config(postgres_url, "http://127.0.0.1:9/wallet"))
    runtime = Runtime(platform, workers=["projections"], projection_interval=60.0)

    async def scenario() -> tuple[float, float]:
        await runtime.start()
        await asyncio.sleep(0.5)  # the first (empty) pass is over: the loop waits 60 s
        appended = time.monotonic()
        await asyncio.to_thread(platform.record_configuration)
        head = platform.events.recorder.max_notification_id()
        while min(runtime.runner.positions().values()) < head:
            assert time.monotonic() - appended < 10
            await asyncio.sleep(0.02)
        caught_up = time.monotonic() - appended
        stopping = time.monotonic()
        await runtime.stop()
        return caught_up, time.monotonic() - stopping

    try:
        caught_up, stopped = asyncio.run(scenario())
    finally:
        platform.close()
    assert caught_up < 10  # far below the 60 s poll: the NOTIFY woke the loop
    assert stopped < 5

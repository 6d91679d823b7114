"""Admission control (api/admission.py): beyond its bound of plays in flight, or while its
store calls queue for a thread, an API process answers a play at once with 503
OVERLOADED and Retry-After, before anything is recorded, counted or sent to the wallet;
the plays it holds settle, and the money invariant holds."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import httpx
import psycopg
import pytest

from application.clock import ManualClock
from application.platform import Platform
from application.store import calls as store_calls
from domain.ids import round_id
from entrypoints.app import create_app
from tests.support.config import make_config, raw_config
from tests.support.ledger import open_uncertain_attempts, settled_balance_bets
from tests.support.live import LiveServer
from tests.support.signing import signed_headers
from tests.support.waiting import wait_until

OVERLOADED = {
    "error": {
        "code": "OVERLOADED",
        "message": "the platform is at capacity; nothing was done, retry after 1 s",
    }
}


@pytest.fixture
def store_threads() -> Iterator[None]:
    """Put back the process's store threads after a test that shrinks them."""
    size = store_calls._threads.size
    yield
    store_calls.set_threads(size)


def _serve(database_url: str, wallet: Any, **service: Any) -> tuple[Platform, ManualClock]:
    raw = raw_config(database_url)
    raw["service"].update(service)
    config = make_config(
        database_url,
        raw,
        wallet_url=wallet.url,
        wallet_timeout_seconds=5,
        uncertain_debit_grace_seconds=30,
    )
    clock = ManualClock(start=float(int(time.time())))
    platform = Platform(config, clock=clock)
    platform.record_configuration()
    wallet.ledger.fund("op-a", "p-1", "EUR", 1_000_000)
    return platform, clock


def _play(url: str, clock: ManualClock, action: str) -> tuple[httpx.Response, float]:
    body = json.dumps(
        {
            "playerExternalId": "p-1",
            "clientActionId": action,
            "wagerMinor": 1000,
            "chanceBps": 5000,
            "targetItemId": 7,
        }
    ).encode()
    path = "/api/s2s/upgrader/play"
    headers = signed_headers("key-a", "secret-a-1", int(clock.now()), "POST", path, body)
    started = time.monotonic()
    with httpx.Client(base_url=url, timeout=30) as client:
        answer = client.post(path, content=body, headers=headers)
    return answer, time.monotonic() - started


def _assert_refused_at_once(answer: httpx.Response, held: list[Future]) -> None:
    """A 503 OVERLOADED answered while the held plays are still held: not queued
    behind them (an absolute time would depend on how busy the machine is)."""
    assert answer.status_code == 503
    assert answer.headers["Retry-After"] == "1"
    assert answer.json() == OVERLOADED
    assert not any(future.done() for future in held)


def _assert_nothing_recorded(platform: Platform, action: str) -> None:
    from eventsourcing.application import AggregateNotFoundError

    with pytest.raises(AggregateNotFoundError):
        platform.events.repository.get(round_id("op-a", "p-1", action))


def _assert_money(platform: Platform, wallet: Any) -> None:
    wait_until(lambda: open_uncertain_attempts(platform) == 0, timeout=15, what="no rollbacks")
    assert wallet.ledger.net_debits("op-a") == settled_balance_bets(platform, "op-a")


def test_beyond_the_bound_a_play_is_refused_at_once_and_the_held_ones_settle(
    database_url: str, wallet
) -> None:
    platform, clock = _serve(database_url, wallet, max_plays_in_flight=2)
    wallet.faults.configure(stall_seconds=3.0, only_types={"wallet.debit"}, times=2)
    app = create_app(platform)
    try:
        with LiveServer(app) as server, ThreadPoolExecutor(2) as pool:
            held: list[Future] = [
                pool.submit(_play, server.url, clock, action) for action in ("held-1", "held-2")
            ]
            wait_until(
                lambda: len(wallet.ledger.requests_of("wallet.debit")) == 2,
                what="two plays held at the wallet",
            )
            answer, _ = _play(server.url, clock, "third")
            _assert_refused_at_once(answer, held)
            assert app.state.admission.refused == {"bound": 1, "store": 0}
            assert [future.result()[0].status_code for future in held] == [200, 200]
            assert len(wallet.ledger.requests_of("wallet.debit")) == 2  # none for the third
            _assert_nothing_recorded(platform, "third")
            assert platform.limiter.count_of("plays:4:op-a:p-1") == 2  # nor counted
            again, _ = _play(server.url, clock, "third")  # the same action, now admitted
            assert again.status_code == 200
            _assert_money(platform, wallet)
            assert settled_balance_bets(platform, "op-a") == 3000
    finally:
        platform.close()


class _StoreLock:
    """Another connection holding the event log's table (PostgreSQL) or the database's
    write lock (SQLite), so that the play's first store call waits on it."""

    def __init__(self, platform: Platform) -> None:
        self.platform = platform
        self.conn: Any = None

    def __enter__(self) -> _StoreLock:
        location = self.platform.location
        if location.kind == "sqlite":
            self.conn = sqlite3.connect(location.path, isolation_level=None)
            self.conn.execute("BEGIN IMMEDIATE")
        else:
            self.conn = psycopg.connect(location.conninfo())
            table = self.platform.events.recorder.events_table_name
            self.conn.execute(f'LOCK TABLE "{location.schema}"."{table}" IN EXCLUSIVE MODE')
        return self

    def release(self) -> None:
        if self.conn is None:
            return
        if self.platform.location.kind == "sqlite":
            self.conn.execute("ROLLBACK")
        else:
            self.conn.rollback()
        self.conn.close()
        self.conn = None

    def __exit__(self, *exc: object) -> None:
        self.release()


def test_while_store_calls_queue_a_play_is_refused_at_once(
    database_url: str, wallet, store_threads, monkeypatch
) -> None:
    """One store thread, blocked by a lock another connection holds: the next play's
    store call queues; once it has waited past overload_store_wait_ms, a new play is
    refused. The lock goes, and both held plays settle."""
    monkeypatch.setenv("UPGRADER_THREADS", "1")
    platform, clock = _serve(
        database_url, wallet, overload_store_wait_ms=200, max_plays_in_flight=10
    )
    app = create_app(platform)
    try:
        with LiveServer(app) as server, ThreadPoolExecutor(2) as pool:
            lock = _StoreLock(platform).__enter__()
            try:
                first = pool.submit(_play, server.url, clock, "held-1")
                wait_until(lambda: _blocked(platform), what="the first play on the lock")
                second = pool.submit(_play, server.url, clock, "held-2")
                wait_until(lambda: store_calls.queue_wait() > 0.25, what="a queued store call")
                answer, _ = _play(server.url, clock, "third")
                _assert_refused_at_once(answer, [first, second])
                assert app.state.admission.refused == {"bound": 0, "store": 1}
            finally:
                lock.release()
            assert [f.result()[0].status_code for f in (first, second)] == [200, 200]
            _assert_nothing_recorded(platform, "third")
            assert len(wallet.ledger.requests_of("wallet.debit")) == 2
            wait_until(lambda: store_calls.queue_wait() == 0.0, what="the queue drained")
            assert _play(server.url, clock, "third")[0].status_code == 200
            _assert_money(platform, wallet)
    finally:
        platform.close()


def _blocked(platform: Platform) -> bool:
    """Whether a store call is waiting on the lock (one thread, so the next one queues)."""
    if platform.location.kind == "sqlite":
        return store_calls._threads._started == 1 and store_calls._threads._idle <= 0
    with psycopg.connect(platform.location.conninfo(), autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            "AND query LIKE %s",
            (f"%{platform.location.schema}%",),
        ).fetchone()
    return row[0] >= 1


def test_the_bound_defaults_to_the_store_threads() -> None:
    from api.admission import SQLITE_BOUND, play_bound

    assert play_bound(0, 16) == 16
    assert play_bound(0, None) == SQLITE_BOUND == 16
    assert play_bound(5, 16) == 5


def test_a_refused_play_leaves_the_connection_usable(database_url: str, wallet) -> None:
    """The refusal does not read the body; the next request on the same keep-alive
    connection is answered normally."""
    platform, clock = _serve(database_url, wallet, max_plays_in_flight=1)
    app = create_app(platform)
    try:
        with LiveServer(app) as server, httpx.Client(base_url=server.url) as c:
            admission = app.state.admission
            admission.in_flight = 1  # as if one play were in flight
            body = b'{"playerExternalId":"p-1","clientActionId":"k","wagerMinor":1000,'
            body += b'"chanceBps":5000,"targetItemId":7}'
            path = "/api/s2s/upgrader/play"
            headers = signed_headers("key-a", "secret-a-1", int(clock.now()), "POST", path, body)
            refused = c.post(path, content=body, headers=headers)
            assert (refused.status_code, refused.json()) == (503, OVERLOADED)
            admission.in_flight = 0
            answered = c.post(path, content=body, headers=headers)
            assert answered.status_code == 200
            assert answered.json()["round"]["status"] == "settled"
    finally:
        platform.close()

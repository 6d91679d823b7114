"""A play's key (or session) hit and its player hit are one chain, counted exactly.

Over HTTP, in both limiter modes: in process memory (the default) and in the real store
(SQLite: one transaction; PostgreSQL: one statement on the event loop). A bucket is
counted only when every bucket before it in the chain was within its limit, an invalid
body counts the key but no play, and the counts (the limiter's own, or ``rate_counters``)
are exactly what counting the hits one after another gave.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from application.clock import ManualClock
from application.platform import Platform
from entrypoints.app import create_app
from tests.support.config import make_config, raw_config
from tests.support.live import Api, LiveServer

START = 1_900_000_000.5
WINDOW = 1_900_000_000


@pytest.fixture(params=["process", "store"])
def limit_mode(request) -> str:
    return request.param


@pytest.fixture
def served(
    request, database_url: str, limit_mode: str, wallet
) -> Iterator[tuple[Api, Platform, ManualClock]]:
    raw = raw_config(database_url)
    raw["service"]["rate_limits"] = limit_mode
    raw["operators"][0]["limits"] = {
        "requests_per_second_per_key": 1000,
        "requests_per_second_per_session": 1000,
        "plays_per_second_per_player": 1000,
        **getattr(request, "param", {}),
    }
    config = make_config(
        database_url,
        raw,
        wallet_url=wallet.url,
        wallet_timeout_seconds=1,
        uncertain_debit_grace_seconds=30,
    )
    clock = ManualClock(start=START)
    platform = Platform(config, clock=clock)
    platform.record_configuration()
    wallet.ledger.fund("op-a", "p-1", "EUR", 1_000_000)
    with LiveServer(create_app(platform)) as server:
        api = Api(server.url, clock)
        yield api, platform, clock
        api.close()
    platform.close()


def _play(api: Api, action: str, **overrides) -> tuple[int, str | None, str | None]:
    body = {
        "playerExternalId": "p-1",
        "clientActionId": action,
        "wagerMinor": 1000,
        "chanceBps": 5000,
        "targetItemId": 7,
        **overrides,
    }
    response = api.s2s("POST", "/api/s2s/upgrader/play", json.dumps(body).encode())
    error = response.json().get("error") if response.status_code != 200 else None
    return (
        response.status_code,
        error["code"] if error else None,
        response.headers.get("Retry-After"),
    )


def _counts(platform: Platform) -> dict[str, int]:
    if platform.limiter.in_memory:
        counts = {bucket: platform.limiter.count_of(bucket) for bucket in (KEY, PLAYS)}
        return {bucket: hits for bucket, hits in counts.items() if hits}
    with platform.db.transaction() as cur:
        cur.execute("SELECT bucket, hits FROM rate_counters WHERE window_start = ?", (WINDOW,))
        return {bucket: hits for bucket, hits in cur.fetchall()}


KEY = "key:key-a"
PLAYS = "plays:4:op-a:p-1"


@pytest.mark.parametrize(
    "served",
    [{"requests_per_second_per_key": 3, "plays_per_second_per_player": 100}],
    indirect=True,
)
def test_a_play_refused_for_its_key_counts_no_play(served) -> None:
    api, platform, clock = served
    assert [_play(api, f"k{n}")[0] for n in range(3)] == [200, 200, 200]
    assert _play(api, "k3") == (429, "RATE_LIMITED", "1")
    assert _play(api, "k4") == (429, "RATE_LIMITED", "1")
    assert _counts(platform) == {KEY: 5, PLAYS: 3}
    clock.advance(1)
    assert _play(api, "k3")[0] == 200


@pytest.mark.parametrize(
    "served",
    [{"requests_per_second_per_key": 100, "plays_per_second_per_player": 2}],
    indirect=True,
)
def test_a_play_over_the_players_limit_counts_the_key_and_the_play(served, wallet) -> None:
    api, platform, _ = served
    assert [_play(api, f"p{n}")[0] for n in range(2)] == [200, 200]
    status, code, retry_after = _play(api, "p2")
    assert (status, code, retry_after) == (429, "RATE_LIMITED", "1")
    assert _play(api, "p3")[:2] == (429, "RATE_LIMITED")
    assert _counts(platform) == {KEY: 4, PLAYS: 4}
    assert len(wallet.ledger.requests_of("wallet.debit")) == 2


@pytest.mark.parametrize(
    "served",
    [{"requests_per_second_per_key": 100, "plays_per_second_per_player": 100}],
    indirect=True,
)
def test_an_invalid_play_body_counts_the_key_but_no_play(served) -> None:
    api, platform, _ = served
    assert _play(api, "v1", wagerMinor="1000")[:2] == (422, "VALIDATION_ERROR")
    assert _play(api, "v2", wagerMinor=1000.0)[:2] == (422, "VALIDATION_ERROR")
    assert _play(api, "v3")[0] == 200
    assert _counts(platform) == {KEY: 3, PLAYS: 1}


@pytest.mark.parametrize(
    "served",
    [{"requests_per_second_per_key": 0, "plays_per_second_per_player": 1}],
    indirect=True,
)
def test_a_key_without_a_limit_still_counts_the_players_plays(served) -> None:
    api, platform, _ = served
    assert _play(api, "z1")[0] == 200
    assert _play(api, "z2") == (429, "RATE_LIMITED", "1")
    assert _counts(platform) == {PLAYS: 2}


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
@pytest.mark.parametrize("limit_mode", ["store"], indirect=True)
def test_limiter_connections_closed_by_the_server_are_replaced_before_use(served) -> None:
    """What the pool's pre-ping did (e.g. after a PostgreSQL restart), without its round
    trip: an idle connection the server closed is not used, so the request counts."""
    import psycopg

    api, platform, _ = served
    assert _play(api, "r1")[0] == 200
    counter = platform.limiter._counter
    assert counter is not None and counter._idle
    pids = [conn.info.backend_pid for conn in counter._idle]
    with psycopg.connect(platform.location.conninfo(), autocommit=True) as admin:
        for pid in pids:
            admin.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))
    assert _play(api, "r2")[0] == 200
    assert api.s2s("GET", "/api/s2s/health").status_code == 200
    assert _counts(platform) == {KEY: 3, PLAYS: 2}
    assert all(conn.info.backend_pid not in pids for conn in counter._idle)


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
@pytest.mark.parametrize("limit_mode", ["store"], indirect=True)
def test_when_the_limiter_cannot_connect_it_counts_through_the_store_pool(served) -> None:
    """No connection for the limiter (max_connections reached, say): nothing was sent,
    so the chain is counted through the store's pool instead, exactly once."""
    api, platform, _ = served
    assert _play(api, "c1")[0] == 200
    counter = platform.limiter._counter
    assert counter is not None
    counter.conninfo = "host=127.0.0.1 port=1 user=nobody dbname=nothing connect_timeout=1"
    counter._idle.clear()  # (left to the garbage collector: they were healthy)
    assert _play(api, "c2")[0] == 200
    assert _play(api, "c3")[0] == 200
    assert _counts(platform) == {KEY: 3, PLAYS: 3}

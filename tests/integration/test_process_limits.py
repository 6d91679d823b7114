"""Abuse limits counted in process memory (the default, application/access/process_limits.py):
exact counts under concurrency, the one-second window, Retry-After and the 429 body."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from application.access.process_limits import ProcessLimiter
from application.clock import ManualClock
from application.errors import PlatformError
from application.platform import Platform
from entrypoints.app import create_app
from tests.support.config import make_config, raw_config
from tests.support.live import LiveServer
from tests.support.signing import signed_headers

START = 1_900_000_000.25


@pytest.fixture
def served(database_url: str, wallet) -> Iterator[tuple[str, Platform, ManualClock]]:
    raw = raw_config(database_url)
    raw["operators"][0]["limits"] = {
        "requests_per_second_per_key": 20,
        "requests_per_second_per_session": 1000,
        "plays_per_second_per_player": 1000,
    }
    clock = ManualClock(start=START)
    platform = Platform(make_config(database_url, raw, wallet_url=wallet.url), clock=clock)
    platform.record_configuration()
    assert platform.limiter.in_memory  # the default mode
    with LiveServer(create_app(platform)) as server:
        yield server.url, platform, clock
    platform.close()


def _health(url: str, now: float) -> httpx.Response:
    headers = signed_headers("key-a", "secret-a-1", int(now), "GET", "/api/s2s/health", b"")
    with httpx.Client(base_url=url, timeout=30) as client:
        return client.get("/api/s2s/health", headers=headers)


def test_concurrent_requests_get_exactly_the_limit(served) -> None:
    url, platform, clock = served
    barrier = threading.Barrier(12)

    def one(_: int) -> httpx.Response:
        barrier.wait(timeout=10)  # released together: they overlap in the server
        return _health(url, clock.now())

    with ThreadPoolExecutor(max_workers=12) as pool:
        answers = list(pool.map(one, range(12))) + list(pool.map(one, range(12)))
    statuses = sorted(answer.status_code for answer in answers)
    assert statuses == [200] * 20 + [429] * 4
    refused = next(answer for answer in answers if answer.status_code == 429)
    assert refused.headers["Retry-After"] == "1"
    assert refused.json() == {
        "error": {
            "code": "RATE_LIMITED",
            "message": "too many requests for this key; retry after 1 s",
        }
    }
    assert platform.limiter.count_of("key:key-a") == 24  # refused hits count too


def test_the_count_starts_again_in_the_next_window(served) -> None:
    url, platform, clock = served
    assert [_health(url, clock.now()).status_code for _ in range(21)] == [200] * 20 + [429]
    clock.advance(0.7)  # 1_900_000_000.95: the same one-second window
    assert _health(url, clock.now()).status_code == 429
    clock.advance(0.1)  # 1_900_000_001.05: the next one
    assert _health(url, clock.now()).status_code == 200
    assert platform.limiter.count_of("key:key-a") == 1


def test_a_play_over_the_players_limit_is_refused_before_the_wallet(database_url, wallet) -> None:
    raw = raw_config(database_url)
    raw["operators"][0]["limits"]["plays_per_second_per_player"] = 1
    clock = ManualClock(start=START)
    platform = Platform(make_config(database_url, raw, wallet_url=wallet.url), clock=clock)
    platform.record_configuration()
    wallet.ledger.fund("op-a", "p-1", "EUR", 100_000)
    body = {
        "playerExternalId": "p-1",
        "wagerMinor": 1000,
        "chanceBps": 5000,
        "targetItemId": 7,
    }
    try:
        with LiveServer(create_app(platform)) as server, httpx.Client(base_url=server.url) as c:
            statuses = []
            for action in ("a", "b"):
                raw_body = json.dumps({**body, "clientActionId": action}).encode()
                headers = signed_headers(
                    "key-a",
                    "secret-a-1",
                    int(clock.now()),
                    "POST",
                    "/api/s2s/upgrader/play",
                    raw_body,
                )
                answer = c.post("/api/s2s/upgrader/play", content=raw_body, headers=headers)
                statuses.append((answer.status_code, answer.headers.get("Retry-After")))
    finally:
        platform.close()
    assert statuses == [(200, None), (429, "1")]
    assert len(wallet.ledger.requests_of("wallet.debit")) == 1


def test_threads_counting_one_chain_get_exact_counts() -> None:
    """Eight threads, 500 chains each, the key's limit 1,000: exactly 1,000 pass, and
    a refused chain never counts its player (the bucket after the one over)."""
    limiter = ProcessLimiter(ManualClock(start=START))
    passed = []
    lock = threading.Lock()

    def work(worker: int) -> None:
        mine = 0
        for n in range(500):
            try:
                limiter.hit_chain(
                    [("key:k", 1000, "requests"), (f"plays:{worker}:{n}", 5, "plays")]
                )
                mine += 1
            except PlatformError as refused:
                assert refused.code == "RATE_LIMITED"
                assert refused.extra == {"retry_after": 1}
        with lock:
            passed.append(mine)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(passed) == 1000
    assert limiter.count_of("key:k") == 4000
    players = sum(limiter.count_of(f"plays:{w}:{n}") for w in range(8) for n in range(500))
    assert players == 1000


def test_a_zero_limit_is_off_and_later_buckets_still_count() -> None:
    limiter = ProcessLimiter(ManualClock(start=START))
    for _ in range(3):
        limiter.hit_chain([("key:k", 0, "requests"), ("plays:p", 3, "plays")])
    with pytest.raises(PlatformError) as refused:
        limiter.hit_chain([("key:k", 0, "requests"), ("plays:p", 3, "plays")])
    assert refused.value.message == "too many plays; retry after 1 s"
    assert limiter.count_of("key:k") == 0
    assert limiter.count_of("plays:p") == 4

"""Single rate-limit hits counted in batches on PostgreSQL (application/rate_limits.py).

A batch adds n to a bucket's row in one statement, and its hits get the counts that n
statements one after another would have given; a batch locks its rows in one order, so
two processes' batches and chains crossing them finish without a deadlock.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import AsyncIterator

import psycopg
import pytest

from application.clock import ManualClock
from application.errors import PlatformError
from application.rate_limits import SCHEMA, RateLimiter
from tests.conftest import POSTGRES_URL, SKIP_POSTGRES

pytestmark = pytest.mark.postgres

WINDOW = 1_900_000_000


@pytest.fixture
async def schema() -> AsyncIterator[str]:
    if not POSTGRES_URL:
        pytest.skip(SKIP_POSTGRES)
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{name}"')
        for statement in SCHEMA:
            conn.execute(statement.replace("rate_counters", f'"{name}".rate_counters'))
    yield name
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA "{name}" CASCADE')


async def limiter_in(schema: str, clock: ManualClock) -> RateLimiter:
    limiter = RateLimiter(None, clock)  # type: ignore[arg-type]  # the async path only
    await limiter.start_async(POSTGRES_URL, f"-c search_path={schema}")
    return limiter


def rows(schema: str) -> dict[tuple[str, int], int]:
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        sql = f'SELECT bucket, window_start, hits FROM "{schema}".rate_counters'  # noqa: S608
        found = conn.execute(sql)
        return {(bucket, window): hits for bucket, window, hits in found.fetchall()}


async def test_concurrent_single_hits_get_the_counts_of_one_after_another(schema: str) -> None:
    limiter = await limiter_in(schema, ManualClock(start=WINDOW + 0.5))
    try:
        singles = limiter._singles
        assert singles is not None
        counts = await asyncio.gather(*(singles.count("key:k", WINDOW) for _ in range(50)))
        assert sorted(counts) == list(range(1, 51))
        assert 1 <= singles.statements < 50  # batched: far fewer statements than hits
        assert rows(schema) == {("key:k", WINDOW): 50}
    finally:
        await limiter.stop_async()


async def test_the_limit_holds_exactly_for_concurrent_requests(schema: str) -> None:
    limiter = await limiter_in(schema, ManualClock(start=WINDOW + 0.25))
    try:
        outcomes = await asyncio.gather(
            *(limiter.count([("key:k", 30, "requests for this key")]) for _ in range(50)),
            return_exceptions=True,
        )
    finally:
        await limiter.stop_async()
    refused = [o for o in outcomes if isinstance(o, PlatformError)]
    assert outcomes.count(None) == 30
    assert len(refused) == 20
    assert {(r.code, r.status, r.extra["retry_after"]) for r in refused} == {
        ("RATE_LIMITED", 429, 1)
    }
    assert rows(schema) == {("key:k", WINDOW): 50}  # refused hits count too


async def test_one_batch_counts_several_buckets_and_windows(schema: str) -> None:
    limiter = await limiter_in(schema, ManualClock(start=WINDOW))
    try:
        singles = limiter._singles
        assert singles is not None
        hits = [("key:a", WINDOW), ("key:b", WINDOW), ("key:a", WINDOW + 1), ("key:a", WINDOW)]
        # all queued before the batch task runs: one statement
        tasks = [asyncio.create_task(singles.count(bucket, window)) for bucket, window in hits]
        assert await asyncio.gather(*tasks) == [1, 1, 1, 2]
        assert singles.statements == 1
        assert rows(schema) == {
            ("key:a", WINDOW): 2,
            ("key:b", WINDOW): 1,
            ("key:a", WINDOW + 1): 1,
        }
    finally:
        await limiter.stop_async()


async def test_a_hit_whose_caller_left_before_its_batch_is_not_counted(schema: str) -> None:
    limiter = await limiter_in(schema, ManualClock(start=WINDOW))
    try:
        singles = limiter._singles
        assert singles is not None
        waiting = asyncio.create_task(singles.count("key:gone", WINDOW))
        await asyncio.sleep(0)  # queued, its batch not taken yet
        waiting.cancel()
        kept = await singles.count("key:kept", WINDOW)
        assert kept == 1
        assert rows(schema) == {("key:kept", WINDOW): 1}
    finally:
        await limiter.stop_async()


async def test_two_processes_batches_and_chains_do_not_deadlock(schema: str) -> None:
    """Two limiters (two processes' connections): batches of many keys in opposite
    orders, and key-then-player chains over the same keys, all at once."""
    clock = ManualClock(start=WINDOW + 0.5)
    first, second = await limiter_in(schema, clock), await limiter_in(schema, clock)
    keys = [f"key:{n:02d}" for n in range(20)]
    rng = random.Random(7)
    try:

        async def singles(limiter: RateLimiter, order: list[str]) -> None:
            await asyncio.gather(*(limiter.count([(key, 10**6, "requests")]) for key in order))

        async def chains(limiter: RateLimiter) -> None:
            for _ in range(5):
                picked = rng.sample(keys, 5)
                await asyncio.gather(
                    *(
                        limiter.count([(key, 10**6, "requests"), (f"plays:{key}", 10**6, "plays")])
                        for key in picked
                    )
                )

        await asyncio.wait_for(
            asyncio.gather(
                *(singles(first, keys) for _ in range(5)),
                *(singles(second, keys[::-1]) for _ in range(5)),
                chains(first),
                chains(second),
            ),
            timeout=20,
        )
    finally:
        await first.stop_async()
        await second.stop_async()
    counted = rows(schema)
    single_hits = 10
    chained = {key: 0 for key in keys}
    for (bucket, _), hits in counted.items():
        if bucket.startswith("plays:"):
            chained[bucket.removeprefix("plays:")] += hits
    assert sum(chained.values()) == 2 * 5 * 5
    for key in keys:
        assert counted[(key, WINDOW)] == single_hits + chained[key]


async def test_a_batch_locks_its_rows_in_bucket_order_whatever_the_arrival_order(
    schema: str,
) -> None:
    """Another transaction holds key:b; a batch of key:b then key:a (in arrival order)
    must have locked key:a first and wait for key:b: then no two batches can each hold
    a row the other wants."""
    table = f'"{schema}".rate_counters'
    with psycopg.connect(POSTGRES_URL, autocommit=True) as setup:
        setup.execute(
            f"INSERT INTO {table} (bucket, window_start, hits) "  # noqa: S608
            "VALUES ('key:a', %s, 0), ('key:b', %s, 0)",
            (WINDOW, WINDOW),
        )
    holder = psycopg.connect(POSTGRES_URL)  # a transaction left open, holding key:b
    holder.execute(f"SELECT 1 FROM {table} WHERE bucket = 'key:b' FOR UPDATE")  # noqa: S608
    limiter = await limiter_in(schema, ManualClock(start=WINDOW))
    try:
        singles = limiter._singles
        assert singles is not None
        batch = [asyncio.create_task(singles.count(b, WINDOW)) for b in ("key:b", "key:a")]
        await asyncio.sleep(0.5)  # the batch is now blocked on key:b
        assert not any(task.done() for task in batch)
        probe = f"SELECT 1 FROM {table} WHERE bucket = 'key:a' FOR UPDATE NOWAIT"  # noqa: S608
        with (
            psycopg.connect(POSTGRES_URL, autocommit=True) as other,
            pytest.raises(psycopg.errors.LockNotAvailable),
        ):
            other.execute(probe)
        holder.rollback()
        assert await asyncio.wait_for(asyncio.gather(*batch), timeout=10) == [1, 1]
    finally:
        holder.close()
        await limiter.stop_async()

"""Single rate-limit hits counted in batches on PostgreSQL (application/access/rate_limits.py).

A batch adds n to a bucket's row in one statement, and its hits get the counts that n
statements one after another would have given; a batch locks its rows in one order, so
two processes' batches and chains crossing them finish without a deadlock.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

import psycopg
import pytest

from api.errors import status_of
from application.access.rate_limits import SCHEMA, RateLimiter, _Singles
from application.clock import ManualClock
from application.errors import PlatformError
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


async def limiter_in(schema: str, clock: ManualClock, name: str = "") -> RateLimiter:
    limiter = RateLimiter(None, clock)  # type: ignore[arg-type]  # the async path only
    conninfo = f"{POSTGRES_URL}?application_name={name}" if name else POSTGRES_URL
    await limiter.start_async(conninfo, f"-c search_path={schema}")
    return limiter


def seed(schema: str, *buckets: str) -> None:
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        for bucket in buckets:
            conn.execute(
                f'INSERT INTO "{schema}".rate_counters VALUES (%s, %s, 0)',  # noqa: S608
                (bucket, WINDOW),
            )


def hold(schema: str, bucket: str) -> psycopg.Connection:
    """A transaction left open, holding ``bucket``'s row lock (rollback() lets go)."""
    holder = psycopg.connect(POSTGRES_URL)
    holder.execute(
        f'SELECT 1 FROM "{schema}".rate_counters WHERE bucket = %s FOR UPDATE',  # noqa: S608
        (bucket,),
    )
    return holder


async def until_waiting_on_a_lock(name: str) -> None:
    """Until the limiter's backend (``application_name``) waits for a row lock."""
    sql = (
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE application_name = %s AND wait_event_type = 'Lock'"
    )
    for _ in range(200):
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            if conn.execute(sql, (name,)).fetchone()[0]:
                return
        await asyncio.sleep(0.05)
    raise AssertionError("the batch never waited for the held row")


def locked(schema: str, bucket: str) -> bool:
    """Whether another transaction holds ``bucket``'s row lock."""
    probe = f'SELECT 1 FROM "{schema}".rate_counters WHERE bucket = %s FOR UPDATE NOWAIT'  # noqa: S608
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        try:
            conn.execute(probe, (bucket,))
        except psycopg.errors.LockNotAvailable:
            return True
    return False


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
    assert {(r.code, status_of(r), r.extra["retry_after"]) for r in refused} == {
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


@dataclass
class Blocked:
    """A limiter whose batches will wait on ``held``, whose row lock another open
    transaction (``holder``) has; ``name`` is the limiter's application_name."""

    limiter: RateLimiter
    singles: _Singles
    holder: psycopg.Connection
    name: str


@contextlib.asynccontextmanager
async def blocked_on(schema: str, held: str, *seeded: str) -> AsyncIterator[Blocked]:
    seed(schema, held, *seeded)
    holder = hold(schema, held)
    name = f"batch-{uuid.uuid4().hex[:8]}"
    limiter = await limiter_in(schema, ManualClock(start=WINDOW), name)
    try:
        assert limiter._singles is not None
        yield Blocked(limiter, limiter._singles, holder, name)
    finally:
        holder.rollback()
        holder.close()
        await limiter.stop_async()


async def test_a_batch_locks_rows_in_order_and_player_buckets_last(schema: str) -> None:
    """A batch arriving as plays:p, session:s, key:b, key:a, with session:s held
    elsewhere: it has locked key:a and key:b (in order) and waits for session:s, and has
    not locked plays:p, which comes last; a chain locks its session or key bucket before
    its player bucket, so the two orders cannot cross."""
    async with blocked_on(schema, "session:s", "key:a", "key:b", "plays:p") as blocked:
        arrivals = ("plays:p", "session:s", "key:b", "key:a")
        batch = [asyncio.create_task(blocked.singles.count(b, WINDOW)) for b in arrivals]
        await until_waiting_on_a_lock(blocked.name)
        assert not any(task.done() for task in batch)
        assert [locked(schema, b) for b in ("key:a", "key:b", "plays:p")] == [True, True, False]
        blocked.holder.rollback()
        assert await asyncio.wait_for(asyncio.gather(*batch), timeout=10) == [1, 1, 1, 1]


async def test_a_batch_waiting_on_a_lock_holds_up_no_other_bucket(schema: str) -> None:
    async with blocked_on(schema, "key:busy") as blocked:
        waiting = asyncio.create_task(blocked.singles.count("key:busy", WINDOW))
        await until_waiting_on_a_lock(blocked.name)
        free = blocked.singles.count("key:free", WINDOW)
        assert await asyncio.wait_for(free, timeout=5) == 1
        assert not waiting.done()
        blocked.holder.rollback()
        assert await asyncio.wait_for(waiting, timeout=10) == 1


async def test_stopping_cancels_the_waiting_hits_and_returns(schema: str) -> None:
    async with blocked_on(schema, "key:busy") as blocked:
        singles = blocked.singles
        waiting = [asyncio.create_task(singles.count("key:busy", WINDOW)) for _ in range(3)]
        await until_waiting_on_a_lock(blocked.name)
        await asyncio.wait_for(blocked.limiter.stop_async(), timeout=10)
        await asyncio.sleep(0)
        assert all(task.cancelled() for task in waiting)
        assert singles.tasks == set()

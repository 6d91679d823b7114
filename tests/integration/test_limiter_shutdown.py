"""The limiter's own connections (application/access/rate_limits.py, AsyncCounter) are all
closed at shutdown, including the one of a count that is still running when the
counter is closed (it used to go back to the idle list and stay open)."""

from __future__ import annotations

import asyncio
import uuid

import psycopg
import pytest

from application.access.rate_limits import AsyncCounter
from tests.conftest import POSTGRES_URL, SKIP_POSTGRES

pytestmark = pytest.mark.postgres


def _open_connections(name: str) -> int:
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (name,)
        ).fetchone()
    return row[0]


async def _until_closed(name: str) -> int:
    for _ in range(40):  # the server drops a closed connection's backend within moments
        count = await asyncio.to_thread(_open_connections, name)
        if count == 0:
            return 0
        await asyncio.sleep(0.05)
    return count


async def test_a_count_running_at_close_closes_its_connection() -> None:
    if not POSTGRES_URL:
        pytest.skip(SKIP_POSTGRES)
    name = f"limiter-{uuid.uuid4().hex[:8]}"
    counter = AsyncCounter(f"{POSTGRES_URL}?application_name={name}", "", size=2)
    assert await counter.run("SELECT $1::int + 1", (41,), None) == (42,)
    assert await asyncio.to_thread(_open_connections, name) == 1  # idle, kept for reuse

    running = [
        asyncio.create_task(counter.run("SELECT pg_sleep(0.3), $1::int", (n,), None))
        for n in (7, 8)
    ]
    await asyncio.sleep(0.1)
    assert await asyncio.to_thread(_open_connections, name) == 2  # the idle one reused
    await counter.close()  # nothing idle to close now: both are busy
    assert [(await task)[1] for task in running] == [7, 8]  # the counts still answer
    assert counter._idle == []
    assert await _until_closed(name) == 0

"""Abuse limits (fixed one-second windows) shared by every API process through the store.

A hit is one ``INSERT ... ON CONFLICT DO UPDATE ... RETURNING`` on ``rate_counters``;
over the limit the caller is told how long to wait (the rest of the window, rounded
up to whole seconds for ``Retry-After``). Old windows are swept now and then.
"""

from __future__ import annotations

import math
import random

from application.clock import Clock
from application.errors import PlatformError
from application.sql import SqlDatabase

SCHEMA = [
    """CREATE TABLE IF NOT EXISTS rate_counters (
        bucket TEXT NOT NULL,
        window_start BIGINT NOT NULL,
        hits INTEGER NOT NULL,
        PRIMARY KEY (bucket, window_start))""",
]


def rate_limited(retry_after: int, what: str) -> PlatformError:
    return PlatformError(
        "RATE_LIMITED",
        429,
        f"too many {what}; retry after {retry_after} s",
        retry_after=retry_after,
    )


class RateLimiter:
    def __init__(self, db: SqlDatabase, clock: Clock) -> None:
        self.db = db
        self.clock = clock

    def hit(self, bucket: str, limit: int, what: str) -> None:
        """Count one hit; RATE_LIMITED (429) when ``bucket`` is over ``limit`` per second."""
        if limit <= 0:
            return
        now = self.clock.now()
        window = math.floor(now)
        with self.db.transaction() as cur:
            cur.execute(
                "INSERT INTO rate_counters (bucket, window_start, hits) VALUES (?, ?, 1) "
                "ON CONFLICT (bucket, window_start) DO UPDATE "
                "SET hits = rate_counters.hits + 1 RETURNING hits",
                (bucket, window),
            )
            hits = cur.fetchone()[0]
            if random.random() < 0.01:
                cur.execute("DELETE FROM rate_counters WHERE window_start < ?", (window - 60,))
        if hits > limit:
            raise rate_limited(max(1, math.ceil(window + 1 - now)), what)

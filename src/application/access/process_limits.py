"""Abuse limits counted in this process's memory (``service.rate_limits = "process"``,
the default).

The same fixed one-second windows and the same answers as the store-backed limiter
(application/access/rate_limits.py): a hit adds one to its bucket's count for the current
window and is refused when the count is over the limit (refused hits count too); a
chain of hits (a play: its key or session, then its player) counts each bucket only if
every bucket before it was within its limit, and the first one over is the refusal, 429
``RATE_LIMITED`` with ``Retry-After`` (the rest of the window, in whole seconds).

Exact within one process: a chain is counted under one lock, so concurrent requests get
exactly the counts that one after another would. No statement, no round trip, no store
connection: the store-backed mode cost about 3 ms of CPU per play over all processes
(docs/performance.md).

Across N API processes (``upgrader serve --workers N``) each process counts its own
requests against the full limit: a key, session or player whose requests all reach one
process gets exactly the limit; one whose requests are spread over the processes gets
at most N times the limit in a second (how many depends on how the kernel spreads its
connections). ``service.rate_limits = "store"`` counts in the store instead, shared by
every process, for an exact limit across processes at one statement per request.

Only the current window is kept: when the clock enters a new second the counts start
again from an empty map, so memory is bounded by the buckets of one second.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence

from application.access.rate_limits import Hit, rate_limited
from application.clock import Clock


class ProcessLimiter:
    """The in-memory counterpart of ``RateLimiter`` (same ``hit``/``hit_chain``)."""

    in_memory = True
    on_loop = False

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._window = -1
        self._counts: dict[str, int] = {}

    def hit(self, bucket: str, limit: int, what: str) -> None:
        """Count one hit; RATE_LIMITED (429) when ``bucket`` is over ``limit`` per second."""
        self.hit_chain([(bucket, limit, what)])

    def hit_chain(self, hits: Sequence[Hit]) -> None:
        """Count a chain of hits at once (see the module docstring)."""
        now = self.clock.now()
        window = math.floor(now)
        with self._lock:
            if window > self._window:
                self._window, self._counts = window, {}
            counts = self._counts
            for bucket, limit, what in hits:
                if limit <= 0:
                    continue  # this limit is off
                count = counts.get(bucket, 0) + 1
                counts[bucket] = count
                if count > limit:
                    raise rate_limited(max(1, math.ceil(self._window + 1 - now)), what)

    def count_of(self, bucket: str) -> int:
        """The bucket's count in the current window (for tests and operators)."""
        with self._lock:
            return self._counts.get(bucket, 0)

    async def stop_async(self) -> None:
        """Nothing to stop (the store-backed limiter closes its connections here)."""

"""Abuse limits (fixed one-second windows) shared by every API process through the store
(``service.rate_limits = "store"``; the default counts in process memory instead, see
application/access/process_limits.py).

A hit adds one to its bucket's row of ``rate_counters`` for the current window
(``INSERT ... ON CONFLICT DO UPDATE ... RETURNING``) and is refused when the count is
over the limit; over the limit the caller is told how long to wait (the rest of the
window, rounded up to whole seconds for ``Retry-After``). Refused hits count too.

A request may make a *chain* of hits (a play: its key, then its player): each bucket
is counted only if every bucket before it was within its limit, and the first one over
its limit is the refusal. That is what counting them one call after another did; on
PostgreSQL the chain is now one statement (data-modifying CTEs, a row lock per bucket,
always taken in chain order), run on the event loop over a few autocommit connections
of the limiter's own with server-side prepared statements: one round trip, no thread
hand-off, no pool pre-ping, no BEGIN/COMMIT. Elsewhere (SQLite, or before the API
starts the async counter) the chain runs in one transaction through ``SqlDatabase``.

Single hits (a read counts its key alone) are batched on that path: while one batch's
statement runs, the single hits that arrive queue, and the next statement adds them all,
``hits + n`` per (bucket, window) ``RETURNING`` the total, so the i-th of a bucket's n
hits gets ``total - n + i``: exactly the counts that n statements one after another
give (refused hits count too). Chains of two or more buckets run as one statement each,
as before.

Lock order: every statement locks the player buckets (``plays:``) after all others.
A chain locks its key or session bucket, then its player bucket; a batch locks its rows
ordered by (player bucket last, bucket, window). So no two statements can each hold a
row the other waits for. (A single player hit exists: a play whose key limit is 0.)
Up to ``IN_FLIGHT`` batches run at once, so one that waits on a row lock does not hold
up every other single hit of the process.

Windows older than a minute are swept at most once every ``SWEEP_SECONDS`` per process.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import select
from collections.abc import Sequence
from typing import Any

from application.clock import Clock
from application.errors import PlatformError
from application.store.sql import SqlDatabase, StoreUnavailable

SCHEMA = [
    """CREATE TABLE IF NOT EXISTS rate_counters (
        bucket TEXT NOT NULL,
        window_start BIGINT NOT NULL,
        hits INTEGER NOT NULL,
        PRIMARY KEY (bucket, window_start))""",
    # the sweep deletes the old windows of every bucket
    """CREATE INDEX IF NOT EXISTS counter_windows ON rate_counters (window_start)""",
]

SWEEP_SECONDS = 10  # per process; rows older than KEEP_SECONDS go
KEEP_SECONDS = 60

# (bucket, limit, what): ``what`` names the refusal ("requests for this key").
Hit = tuple[str, int, str]

_UPSERT = (
    "INSERT INTO rate_counters (bucket, window_start, hits) VALUES (?, ?, 1) "
    "ON CONFLICT (bucket, window_start) DO UPDATE "
    "SET hits = rate_counters.hits + 1 RETURNING hits"
)
_SWEEP = "DELETE FROM rate_counters WHERE window_start < ?"

# Parameters: windows, buckets, hits per row; one row per distinct (bucket, window).
SINGLES_SQL = (
    "INSERT INTO rate_counters AS c (bucket, window_start, hits) "
    "SELECT b, w, n FROM unnest($1::bigint[], $2::text[], $3::int[]) AS t(w, b, n) "
    "ORDER BY starts_with(b, 'plays:'), b, w "
    "ON CONFLICT (bucket, window_start) DO UPDATE SET hits = c.hits + EXCLUDED.hits "
    "RETURNING c.bucket, c.window_start, c.hits"
)
BATCH_MAX = 256  # single hits per statement
IN_FLIGHT = 2  # batch statements at once per process
_SWEEP_ASYNC = "DELETE FROM rate_counters WHERE window_start < $1::bigint"


def rate_limited(retry_after: int, what: str) -> PlatformError:
    return PlatformError(
        "RATE_LIMITED",
        f"too many {what}; retry after {retry_after} s",
        retry_after=retry_after,
    )


@functools.cache
def chain_sql(length: int) -> str:
    """One PostgreSQL statement counting a chain of ``length`` buckets in one window.

    Parameters: the window, then (bucket, limit) per bucket. Returns one row with the
    count of each bucket, NULL for the buckets not counted (an earlier one was over).
    """
    if length == 1:
        return (
            "INSERT INTO rate_counters AS c (bucket, window_start, hits) "
            "VALUES ($2::text, $1::bigint, 1) ON CONFLICT (bucket, window_start) "
            "DO UPDATE SET hits = c.hits + 1 RETURNING c.hits"
        )
    parts = []
    for n in range(length):
        bucket = f"${2 * n + 2}::text"
        source = (
            f"VALUES ({bucket}, $1::bigint, 1)"
            if n == 0
            else f"SELECT {bucket}, $1::bigint, 1 FROM h{n - 1} "  # noqa: S608 - no input
            f"WHERE h{n - 1}.hits <= ${2 * n + 1}::int"
        )
        parts.append(
            f"h{n} AS (INSERT INTO rate_counters AS c (bucket, window_start, hits) {source} "
            "ON CONFLICT (bucket, window_start) DO UPDATE SET hits = c.hits + 1 "
            "RETURNING c.hits)"
        )
    columns = ", ".join(f"(SELECT hits FROM h{n})" for n in range(length))  # noqa: S608
    return f"WITH {', '.join(parts)} SELECT {columns}"


def _verdict(hits: Sequence[Hit], counts: Sequence[int | None], now: float, window: int) -> None:
    for (_, limit, what), count in zip(hits, counts, strict=True):
        if count is None or count > limit:
            raise rate_limited(max(1, math.ceil(window + 1 - now)), what)


class RateLimiter:
    """The store-backed limiter (``service.rate_limits = "store"``); the default counts
    in process memory (application/access/process_limits.py)."""

    in_memory = False

    def __init__(self, db: SqlDatabase, clock: Clock) -> None:
        self.db = db
        self.clock = clock
        self._next_sweep = 0
        self._counter: AsyncCounter | None = None
        self._singles: _Singles | None = None

    def hit(self, bucket: str, limit: int, what: str) -> None:
        """Count one hit; RATE_LIMITED (429) when ``bucket`` is over ``limit`` per second."""
        self.hit_chain([(bucket, limit, what)])

    def hit_chain(self, hits: Sequence[Hit]) -> None:
        """Count a chain of hits in one transaction (see the module docstring)."""
        hits = [h for h in hits if h[1] > 0]
        if not hits:
            return
        now = self.clock.now()
        window = math.floor(now)
        counts: list[int | None] = [None] * len(hits)
        with self.db.transaction() as cur:
            for n, (bucket, limit, _) in enumerate(hits):
                cur.execute(_UPSERT, (bucket, window))
                counts[n] = cur.fetchone()[0]
                if counts[n] > limit:
                    break
            if self._sweep_due(window):
                cur.execute(_SWEEP, (window - KEEP_SECONDS,))
        _verdict(hits, counts, now, window)

    def _sweep_due(self, window: int) -> bool:
        if window < self._next_sweep:
            return False
        self._next_sweep = window + SWEEP_SECONDS
        return True

    # -- the event-loop path (PostgreSQL) --------------------------------------------

    async def start_async(self, conninfo: str, options: str, size: int = 4) -> None:
        """Count on the running event loop from now on (PostgreSQL only)."""
        await self.stop_async()
        self._counter = AsyncCounter(conninfo, options, size)
        self._singles = _Singles(self._counter, self._sweep_due)

    async def stop_async(self) -> None:
        counter, self._counter = self._counter, None
        singles, self._singles = self._singles, None
        if singles is not None:
            await singles.stop()
        if counter is not None:
            await counter.close()

    @property
    def on_loop(self) -> bool:
        """True when ``count`` runs on the event loop (no thread, no transaction)."""
        return self._counter is not None

    async def count(self, hits: Sequence[Hit]) -> None:
        """Count a chain on the event loop; RATE_LIMITED for the first bucket over."""
        assert self._counter is not None, "start_async first"
        hits = [h for h in hits if h[1] > 0]
        if not hits:
            return
        now = self.clock.now()
        window = math.floor(now)
        if len(hits) == 1 and self._singles is not None:
            count = await self._singles.count(hits[0][0], window)
            _verdict(hits, [count], now, window)
            return
        params: list[Any] = [window]
        for bucket, limit, _ in hits:
            params += [bucket, limit]
        params.pop()  # the last bucket's limit is checked here, not in the statement
        sweep = window - KEEP_SECONDS if self._sweep_due(window) else None
        counts = await self._counter.run(chain_sql(len(hits)), params, sweep)
        _verdict(hits, counts, now, window)


class _Singles:
    """The single hits of one process, counted in batches (see the module docstring):
    at most ``IN_FLIGHT`` statements at a time, each run by a task of its own so that a
    caller who stops waiting does not stop the batch its hit is in (that hit is
    counted, as a statement it had sent would be)."""

    def __init__(self, counter: AsyncCounter, sweep_due: Any) -> None:
        self.counter = counter
        self.sweep_due = sweep_due
        self.queue: list[tuple[int, str, asyncio.Future[int]]] = []
        self.tasks: set[asyncio.Task[None]] = set()
        self.statements = 0  # batches sent (for tests and benchmarks)

    async def count(self, bucket: str, window: int) -> int:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[int] = loop.create_future()
        self.queue.append((window, bucket, future))
        self.tasks = {task for task in self.tasks if not task.done() and task.get_loop() is loop}
        if len(self.tasks) < IN_FLIGHT:
            self.tasks.add(loop.create_task(self._drain()))
        return await future

    async def stop(self) -> None:
        """Cancel the batches (their waiters are cancelled too) and wait for them."""
        tasks, self.tasks = self.tasks, set()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        for _, _, future in self.queue:
            future.cancel()
        self.queue.clear()

    async def _drain(self) -> None:
        try:
            while self.queue:
                batch = [hit for hit in self.queue[:BATCH_MAX] if not hit[2].cancelled()]
                del self.queue[:BATCH_MAX]
                if batch:
                    await self._send(batch)
        except asyncio.CancelledError:  # the loop is going away: so are the waiters
            for _, _, future in self.queue:
                future.cancel()
            self.queue.clear()
            raise

    async def _send(self, batch: list[tuple[int, str, asyncio.Future[int]]]) -> None:
        sweep = None
        try:
            rows: dict[tuple[str, int], int] = {}
            for window, bucket, _ in batch:
                rows[(bucket, window)] = rows.get((bucket, window), 0) + 1
            oldest = min(window for window, _, _ in batch)
            sweep = oldest - KEEP_SECONDS if self.sweep_due(oldest) else None
            params = (
                [window for _, window in rows],
                [bucket for bucket, _ in rows],
                list(rows.values()),
            )
            self.statements += 1
            totals = await self.counter.run(SINGLES_SQL, params, None, many=True)
            # the i-th hit of a (bucket, window) in the batch counts total - n + i
            seen = {
                (bucket, window): total - rows[(bucket, window)] for bucket, window, total in totals
            }
            for window, bucket, future in batch:
                seen[(bucket, window)] += 1
                if not future.done():
                    future.set_result(seen[(bucket, window)])
        except asyncio.CancelledError:
            for _, _, future in batch:
                future.cancel()
            raise
        except Exception as exc:
            for _, _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        if sweep is not None:  # after the answers: no waiter waits for it
            with contextlib.suppress(Exception):  # the next sweep, 10 s on, tries again
                await self.counter.run(_SWEEP_ASYNC, (sweep,), None, fetch=False)


class NoConnection(Exception):
    """The counter could not open a connection: nothing was sent, so nothing counted."""


class AsyncCounter:
    """Up to ``size`` autocommit connections used from one event loop, each statement
    prepared on its first use. An idle connection the server has written to (it only
    does so to say it is closing it, e.g. on a restart) is replaced before use, which
    is what the pool's pre-ping was for, without the round trip. A statement that
    fails is never retried (it may have counted): StoreUnavailable. A connection that
    cannot be opened (``max_connections`` reached, say) is NoConnection: nothing was
    sent, and the caller counts through the store's pool instead."""

    def __init__(self, conninfo: str, options: str, size: int) -> None:
        self.conninfo = conninfo
        self.options = options
        self.size = size
        self._idle: list[Any] = []
        self._slots: asyncio.Semaphore | None = None
        self._closed = False  # a count still running at close() closes its connection

    async def run(
        self,
        sql: str,
        params: Sequence[Any],
        sweep: int | None,
        *,
        many: bool = False,
        fetch: bool = True,
    ) -> Any:
        """The statement's row (``many``: all its rows; ``fetch=False``: none); then the
        sweep, when given."""
        import psycopg

        if self._slots is None:
            self._slots = asyncio.Semaphore(self.size)
        async with self._slots:
            conn = None
            try:
                conn = await self._connection()
                cursor = await conn.execute(sql, params)
                row = None
                if fetch:
                    row = await (cursor.fetchall() if many else cursor.fetchone())
                if sweep is not None:
                    await conn.execute(_SWEEP_ASYNC, (sweep,))
            except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
                await self._discard(conn)
                first_line = (str(exc).splitlines() or [""])[0]
                raise StoreUnavailable(f"{type(exc).__name__}: {first_line}") from exc
            except BaseException:
                await self._discard(conn)
                raise
            if self._closed:
                await self._discard(conn)
            else:
                self._idle.append(conn)
            return row

    async def _connection(self) -> Any:
        import psycopg

        while self._idle:
            conn = self._idle.pop()
            if not conn.closed and not _readable(conn):
                return conn
            await self._discard(conn)
        try:
            conn = await psycopg.AsyncConnection.connect(
                self.conninfo,
                autocommit=True,
                prepare_threshold=0,
                connect_timeout=2,
                options=self.options,
            )
        except psycopg.OperationalError as exc:  # e.g. max_connections: nothing was counted
            raise NoConnection(str(exc).splitlines()[0] if str(exc) else "") from exc
        # $n placeholders: the statements are sent as written (server-side parameters).
        conn.cursor_factory = psycopg.AsyncRawCursor
        return conn

    async def _discard(self, conn: Any) -> None:
        if conn is not None:
            with contextlib.suppress(Exception):  # it is going away anyway
                await conn.close()

    async def close(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            await self._discard(conn)


def _readable(conn: Any) -> bool:
    """Whether the server wrote to an idle connection (a closing notice, or EOF)."""
    try:
        poller = select.poll()  # select.select refuses descriptors of 1024 and above
        poller.register(conn.fileno(), select.POLLIN)
        return bool(poller.poll(0))
    except (OSError, ValueError):
        return True

"""The ``round_settled`` webhook dispatcher (decisions §9): delivers the outbox.

Delivers ``webhook_outbox`` rows (see ``projections.outbox``) as signed POSTs to the
operator's ``webhook_url`` (X-Timestamp, X-Signature with the operator's outbound
secret; no X-Key-Id), the stored payload bytes unchanged, over one aiohttp session.

- At least once: a row stays ``pending`` until the receiver answers 2xx. A crash
  between the 2xx and recording it sends the webhook again with the same ``id``.
- Settle order per player: only a player's oldest ``pending`` row (lowest settle
  position) is ever claimed, so a later webhook of a player is never sent while an
  earlier one is undelivered (unless that earlier one is ``dead``). Different players
  are delivered in parallel, at most ``concurrency`` at a time.
- Backoff after a failure (timeout, connection failure, non-2xx, no ``webhook_url`` in
  the running configuration): 1 s doubling, capped at 600 s (10 min), times a jitter in
  [0.5, 1], measured on the platform clock.
- Dead letter: a row that still fails ``DEAD_AFTER_SECONDS`` (72 h) after its first
  failed attempt becomes ``dead``. It no longer blocks that player's later webhooks;
  ``upgrader outbox redeliver`` puts it back to ``pending``.
- Several dispatchers (several processes) may run. A claim takes due rows and sets a
  lease (``leased_until``, ``lease_owner``) in one transaction; on PostgreSQL the claim
  selects with ``FOR UPDATE OF d SKIP LOCKED`` so concurrent claimers skip each other's
  rows, on SQLite the database's single writer (``BEGIN IMMEDIATE``) makes the plain
  claim safe. A lease is measured on the wall clock (it is about process liveness) and
  lasts well beyond the HTTP timeout; an expired lease (its dispatcher died) lets
  another dispatcher claim the row again. Results are recorded only by the lease owner.
- Bookkeeping in batches: a claim's leases are set by one statement, and each turn of
  ``run_forever`` records every delivery finished since the previous turn and claims the
  next rows in one transaction (a crash before that commit means a resend: at least once).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import socket
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit
from uuid import uuid4

import aiohttp

from application.platform import Platform
from application.store.calls import in_background
from application.store.sql import execute_in_order
from domain.signing import outbound_headers
from projections.outbox import NAME as OUTBOX
from projections.runner import ProjectionRunner

log = logging.getLogger("upgrader.webhooks")

DEAD_AFTER_SECONDS = 72 * 3600
"""Retry horizon: a webhook still failing this long after its first failure is dead."""
BACKOFF_CAP_SECONDS = 600.0

# The claimable rows are the players' heads: each player's oldest ``pending`` row (by settle
# position), when it is due and not leased. The heads are found from the pending rows only
# (a GROUP BY over them, joined back through the ``webhook_outbox_player`` index), so a
# claim costs in proportion to the backlog, not to the delivered history.
#
# PostgreSQL takes two statements in the claim's transaction: the heads' ids, then the due
# and unleased ones among them, locked (``FOR UPDATE OF d SKIP LOCKED``; the lock re-checks
# state and lease on the row's newest version). In the first, each pending row reaches its
# outbox row by primary key (LATERAL ... OFFSET 0 keeps the planner from hashing a
# sequential scan of the whole outbox instead); splitting keeps the planner's poor guess of
# the number of heads from choosing a nested loop over sequential scans of the deliveries.
_HEADS_PG = """
SELECT o.webhook_id
FROM (
  SELECT p.operator_id, p.player_external_id, MIN(p.position) AS position
  FROM webhook_deliveries f CROSS JOIN LATERAL (
    SELECT e.operator_id, e.player_external_id, e.position FROM webhook_outbox e
    WHERE e.webhook_id = f.webhook_id OFFSET 0) p
  WHERE f.state = 'pending'
  GROUP BY p.operator_id, p.player_external_id) h
JOIN webhook_outbox o ON o.operator_id = h.operator_id
  AND o.player_external_id = h.player_external_id AND o.position = h.position"""
_CLAIM_PG = """
SELECT o.webhook_id, o.operator_id, o.player_external_id, o.payload,
       d.attempts, d.first_failed_at
FROM webhook_deliveries d JOIN webhook_outbox o ON o.webhook_id = d.webhook_id
WHERE d.webhook_id = ANY(?) AND d.state = 'pending' AND d.next_attempt_at <= ?
  AND (d.leased_until IS NULL OR d.leased_until <= ?)
ORDER BY o.position
LIMIT ?
FOR UPDATE OF d SKIP LOCKED"""
# SQLite: one statement (the single writer, BEGIN IMMEDIATE, makes the claim safe); its
# CROSS JOIN fixes the join order: from the pending rows (state index) to the outbox by key.
_CLAIM_SQLITE = """
WITH heads AS (
  SELECT p.operator_id, p.player_external_id, MIN(p.position) AS position
  FROM webhook_deliveries f CROSS JOIN webhook_outbox p ON p.webhook_id = f.webhook_id
  WHERE f.state = 'pending'
  GROUP BY p.operator_id, p.player_external_id)
SELECT o.webhook_id, o.operator_id, o.player_external_id, o.payload,
       d.attempts, d.first_failed_at
FROM heads h
JOIN webhook_outbox o ON o.operator_id = h.operator_id
  AND o.player_external_id = h.player_external_id AND o.position = h.position
JOIN webhook_deliveries d ON d.webhook_id = o.webhook_id
WHERE d.state = 'pending' AND d.next_attempt_at <= ?
  AND (d.leased_until IS NULL OR d.leased_until <= ?)
ORDER BY o.position
LIMIT ?"""

_LEASE = "UPDATE webhook_deliveries SET leased_until = ?, lease_owner = ? WHERE webhook_id "
_DELIVERED = (
    "UPDATE webhook_deliveries SET state = 'delivered', attempts = attempts + 1, "
    "delivered_at = ?, last_attempt_at = ?, last_error = NULL, leased_until = NULL, "
    "lease_owner = NULL WHERE lease_owner = ? AND webhook_id "
)
_FAILED = (
    "UPDATE webhook_deliveries SET state = ?, attempts = ?, first_failed_at = ?, "
    "next_attempt_at = ?, last_error = ?, last_attempt_at = ?, "
    "leased_until = NULL, lease_owner = NULL "
    "WHERE webhook_id = ? AND lease_owner = ?"
)


def backoff_seconds(tries: int, jitter: float | None = None) -> float:
    """1 s doubling per failed try, capped at 600 s, times a jitter in [0.5, 1]."""
    factor = random.uniform(0.5, 1.0) if jitter is None else jitter
    return min(BACKOFF_CAP_SECONDS, 2.0 ** min(max(0, tries - 1), 30)) * factor


def signed_request(url: str, secret: str, payload: str, now: int) -> tuple[bytes, dict[str, str]]:
    """The body bytes and headers of one delivery (the outbound envelope, no X-Key-Id)."""
    body = payload.encode("utf-8")
    headers = outbound_headers(secret, now, "POST", urlsplit(url).path or "/", body)
    headers["Content-Type"] = "application/json"
    return body, headers


@dataclass(frozen=True)
class Claimed:
    webhook_id: str
    operator_id: str
    player_external_id: str
    payload: str
    attempts: int
    first_failed_at: float | None


Result = tuple[Claimed, str | None]
"""A finished delivery: the claimed row and None on a 2xx, else why it failed."""


class WebhookDispatcher:
    def __init__(
        self,
        platform: Platform,
        runner: ProjectionRunner,
        *,
        concurrency: int = 64,
        interval_seconds: float = 0.2,
        lease_seconds: float | None = None,
        owner: str | None = None,
    ) -> None:
        self.platform = platform
        self.runner = runner
        self.concurrency = concurrency
        self.interval = interval_seconds
        timeout = float(platform.config.service.wallet_timeout_seconds)
        self.timeout = aiohttp.ClientTimeout(total=timeout)
        self.lease_seconds = lease_seconds if lease_seconds is not None else 2 * timeout + 30
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{uuid4().hex[:8]}"
        self._session: aiohttp.ClientSession | None = None
        self._wake = asyncio.Event()
        self._finished: list[Result] = []  # delivered or failed, not recorded yet

    # -- running ------------------------------------------------------------------------

    def wake(self) -> None:
        """New outbox rows may exist (called from the projection loop)."""
        self._wake.set()

    async def run_once(self) -> int:
        """Bring the outbox up to date, deliver the due heads and wait for the results;
        returns how many deliveries were attempted."""
        await in_background(self.runner.catch_up, OUTBOX)
        rows = await in_background(self._claim, self.concurrency)
        if rows:
            errors = await asyncio.gather(*(self._attempt(row) for row in rows))
            await in_background(self._record_alone, list(zip(rows, errors, strict=True)))
        return len(rows)

    async def run_forever(self, stopping: asyncio.Event) -> None:
        """Keep up to ``concurrency`` deliveries in flight. Each turn records the
        deliveries finished since the last one and claims as many rows as slots are free,
        in one transaction; a turn runs whenever a delivery ends, on a wake-up, or every
        ``interval`` seconds."""
        in_flight: set[asyncio.Task] = set()
        try:
            while not stopping.is_set():
                self._wake.clear()
                finished, self._finished = self._finished, []
                free = self.concurrency - sum(1 for task in in_flight if not task.done())
                rows = await in_background(self._turn, finished, free)
                for row in rows:
                    task = asyncio.create_task(self._deliver(row), name="webhook")
                    in_flight.add(task)
                    task.add_done_callback(in_flight.discard)
                if not self._wake.is_set():
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._wake.wait(), self.interval)
        finally:
            if in_flight:  # each ends within the HTTP timeout
                await asyncio.gather(*in_flight, return_exceptions=True)
            finished, self._finished = self._finished, []
            if finished:
                await in_background(self._record_alone, finished)
            await self.close()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(
                limit=self.concurrency,  # the deliveries in flight: never queued here
                ttl_dns_cache=300,
                keepalive_timeout=60,  # connections to the receiver are reused
            )
            self._session = aiohttp.ClientSession(timeout=self.timeout, connector=connector)
        return self._session

    # -- claiming and recording ---------------------------------------------------------

    def _turn(self, finished: list[Result], free: int) -> list[Claimed]:
        """Record ``finished`` and claim up to ``free`` rows in one transaction (the claim
        sees the recorded deliveries, so a player's next webhook is claimable at once).
        If that transaction fails, the results are recorded alone; if that fails too,
        their leases expire and the rows are sent again (at least once)."""
        if free <= 0:
            self._record_alone(finished)
            return []
        try:
            with self.platform.db.transaction() as cur:
                self._record(cur, finished)
                return self._claim_in(cur, free)
        except Exception:  # claimed again on the next turn
            log.exception("webhook claim failed")
        self._record_alone(finished)
        return []

    def _claim(self, limit: int) -> list[Claimed]:
        with self.platform.db.transaction() as cur:
            return self._claim_in(cur, limit)

    def _claim_in(self, cur: Any, limit: int) -> list[Claimed]:
        """Select the due heads (skipping rows other claimers hold on PostgreSQL) and
        lease them with one statement."""
        now, wall = self.platform.clock.now(), time.time()
        postgres = self.platform.db.dialect == "postgresql"
        if postgres:
            cur.execute(_HEADS_PG)
            heads = [row[0] for row in cur.fetchall()]
            if not heads:
                return []
            cur.execute(_CLAIM_PG, (heads, now, wall, limit))
        else:
            cur.execute(_CLAIM_SQLITE, (now, wall, limit))
        rows = [Claimed(*row) for row in cur.fetchall()]
        if not rows:
            return rows
        until = wall + self.lease_seconds
        if postgres:
            cur.execute(_LEASE + "= ANY(?)", (until, self.owner, [r.webhook_id for r in rows]))
        else:
            cur.executemany(_LEASE + "= ?", [(until, self.owner, r.webhook_id) for r in rows])
        return rows

    def _record_alone(self, finished: list[Result]) -> None:
        if not finished:
            return
        try:
            with self.platform.db.transaction() as cur:
                self._record(cur, finished)
        except Exception:  # the leases expire and the rows are claimed again
            log.exception("recording %d webhook results failed", len(finished))

    def _record(self, cur: Any, finished: list[Result]) -> None:
        """Write the results of finished deliveries; only rows still leased by this
        dispatcher change (a row whose lease another dispatcher took over is left alone)."""
        if not finished:
            return
        now = self.platform.clock.now()
        delivered = [row.webhook_id for row, error in finished if error is None]
        failed: list[tuple[Any, ...]] = []
        for row, error in finished:
            if error is None:
                continue
            tries = row.attempts + 1
            first_failed = row.first_failed_at if row.first_failed_at is not None else now
            dead = now - first_failed >= DEAD_AFTER_SECONDS
            if dead:
                log.error("webhook %s dead after %d attempts: %s", row.webhook_id, tries, error)
            else:
                log.info("webhook %s attempt %d failed: %s", row.webhook_id, tries, error)
            failed.append(
                (
                    "dead" if dead else "pending",
                    tries,
                    first_failed,
                    now + backoff_seconds(tries),
                    error[:200],
                    now,
                    row.webhook_id,
                    self.owner,
                )
            )
        statements: list[tuple[str, Any]] = []
        if delivered and self.platform.db.dialect == "postgresql":
            statements.append((_DELIVERED + "= ANY(?)", (now, now, self.owner, delivered)))
        else:
            statements += [(_DELIVERED + "= ?", (now, now, self.owner, i)) for i in delivered]
        statements += [(_FAILED, params) for params in failed]
        execute_in_order(cur, statements)

    # -- delivering ---------------------------------------------------------------------

    async def _deliver(self, row: Claimed) -> None:
        """One delivery; its result is recorded by the next turn of ``run_forever``."""
        error = await self._attempt(row)
        self._finished.append((row, error))
        self._wake.set()

    async def _attempt(self, row: Claimed) -> str | None:
        try:
            return await self._post(row)
        except Exception as exc:  # never lose the lease's outcome
            log.exception("webhook %s delivery crashed", row.webhook_id)
            return f"internal error ({type(exc).__name__})"

    async def _post(self, row: Claimed) -> str | None:
        """None on a 2xx, else why the delivery failed."""
        operator = self.platform.directory.operators.get(row.operator_id)
        url = operator.config.webhook_url if operator is not None else None
        if operator is None or not url:
            return "no webhook_url configured"
        body, headers = signed_request(
            url, operator.config.outbound_secret, row.payload, int(time.time())
        )
        try:
            async with self._client().post(
                url, data=body, headers=headers, allow_redirects=False
            ) as response:
                await response.read()
                status = response.status
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            return f"unreachable ({type(exc).__name__})"
        if 200 <= status < 300:
            return None
        return f"HTTP {status}"


def redeliver(db: Any, now: float, webhook_id: str | None = None) -> list[str]:
    """Put one webhook (any state) or, without an id, every dead one back to ``pending``,
    due now, with a fresh retry horizon; returns the ids reset."""
    with db.transaction() as cur:
        if webhook_id is None:
            cur.execute("SELECT webhook_id FROM webhook_deliveries WHERE state = 'dead'")
        else:
            cur.execute(
                "SELECT webhook_id FROM webhook_deliveries WHERE webhook_id = ?", (webhook_id,)
            )
        ids = [row[0] for row in cur.fetchall()]
        for hook_id in ids:
            cur.execute(
                "UPDATE webhook_deliveries SET state = 'pending', attempts = 0, "
                "first_failed_at = NULL, next_attempt_at = ?, leased_until = NULL, "
                "lease_owner = NULL, last_error = 'redelivery requested' WHERE webhook_id = ?",
                (now, hook_id),
            )
    return ids

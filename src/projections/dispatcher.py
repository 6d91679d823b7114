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
"""

from __future__ import annotations

import asyncio
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
import anyio

from application.platform import Platform
from domain.signing import outbound_headers
from projections.outbox import NAME as OUTBOX
from projections.runner import ProjectionRunner

log = logging.getLogger("upgrader.webhooks")

DEAD_AFTER_SECONDS = 72 * 3600
"""Retry horizon: a webhook still failing this long after its first failure is dead."""
BACKOFF_CAP_SECONDS = 600.0

_CLAIM = """
SELECT o.webhook_id, o.operator_id, o.player_external_id, o.payload,
       d.attempts, d.first_failed_at
FROM webhook_outbox o JOIN webhook_deliveries d ON d.webhook_id = o.webhook_id
WHERE d.state = 'pending' AND d.next_attempt_at <= ?
  AND (d.leased_until IS NULL OR d.leased_until <= ?)
  AND NOT EXISTS (
    SELECT 1 FROM webhook_outbox e JOIN webhook_deliveries f ON f.webhook_id = e.webhook_id
    WHERE e.operator_id = o.operator_id AND e.player_external_id = o.player_external_id
      AND e.position < o.position AND f.state = 'pending')
ORDER BY o.position
LIMIT ?"""


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


class WebhookDispatcher:
    def __init__(
        self,
        platform: Platform,
        runner: ProjectionRunner,
        *,
        concurrency: int = 16,
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

    # -- running ------------------------------------------------------------------------

    def wake(self) -> None:
        """New outbox rows may exist (called from the projection loop)."""
        self._wake.set()

    async def run_once(self) -> int:
        """Bring the outbox up to date, deliver the due heads and wait for the results;
        returns how many deliveries were attempted."""
        await anyio.to_thread.run_sync(self.runner.catch_up, OUTBOX)
        rows = await anyio.to_thread.run_sync(self._claim, self.concurrency)
        if rows:
            await asyncio.gather(*(self._deliver(row) for row in rows))
        return len(rows)

    async def run_forever(self, stopping: asyncio.Event) -> None:
        """Keep up to ``concurrency`` deliveries in flight; claim again whenever one ends,
        on a wake-up, or every ``interval`` seconds."""
        in_flight: set[asyncio.Task] = set()
        try:
            while not stopping.is_set():
                self._wake.clear()
                free = self.concurrency - len(in_flight)
                rows: list[Claimed] = []
                if free > 0:
                    try:
                        rows = await anyio.to_thread.run_sync(self._claim, free)
                    except Exception:  # retried on the next pass
                        log.exception("webhook claim failed")
                for row in rows:
                    in_flight.add(asyncio.create_task(self._deliver(row), name="webhook"))
                waker = asyncio.create_task(self._wake.wait())
                done, _ = await asyncio.wait(
                    {waker, *in_flight},
                    timeout=self.interval,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                waker.cancel()
                in_flight -= done
        finally:
            if in_flight:  # each ends within the HTTP timeout
                await asyncio.gather(*in_flight, return_exceptions=True)
            await self.close()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=self.concurrency, ttl_dns_cache=300)
            self._session = aiohttp.ClientSession(timeout=self.timeout, connector=connector)
        return self._session

    # -- claiming -----------------------------------------------------------------------

    def _claim(self, limit: int) -> list[Claimed]:
        now, wall = self.platform.clock.now(), time.time()
        sql = _CLAIM
        if self.platform.db.dialect == "postgresql":
            sql += " FOR UPDATE OF d SKIP LOCKED"
        with self.platform.db.transaction() as cur:
            cur.execute(sql, (now, wall, limit))
            rows = [Claimed(*row) for row in cur.fetchall()]
            for row in rows:
                cur.execute(
                    "UPDATE webhook_deliveries SET leased_until = ?, lease_owner = ? "
                    "WHERE webhook_id = ?",
                    (wall + self.lease_seconds, self.owner, row.webhook_id),
                )
        return rows

    # -- delivering ---------------------------------------------------------------------

    async def _deliver(self, row: Claimed) -> None:
        try:
            error = await self._post(row)
        except Exception as exc:  # never lose the lease's outcome
            log.exception("webhook %s delivery crashed", row.webhook_id)
            error = f"internal error ({type(exc).__name__})"
        try:
            await anyio.to_thread.run_sync(self._record, row, error)
        except Exception:  # the lease expires and the row is claimed again
            log.exception("recording webhook %s failed", row.webhook_id)

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

    def _record(self, row: Claimed, error: str | None) -> None:
        now = self.platform.clock.now()
        with self.platform.db.transaction() as cur:
            if error is None:
                cur.execute(
                    "UPDATE webhook_deliveries SET state = 'delivered', "
                    "attempts = attempts + 1, delivered_at = ?, last_attempt_at = ?, "
                    "last_error = NULL, leased_until = NULL, lease_owner = NULL "
                    "WHERE webhook_id = ? AND lease_owner = ?",
                    (now, now, row.webhook_id, self.owner),
                )
                return
            tries = row.attempts + 1
            first_failed = row.first_failed_at if row.first_failed_at is not None else now
            dead = now - first_failed >= DEAD_AFTER_SECONDS
            if dead:
                log.error("webhook %s dead after %d attempts: %s", row.webhook_id, tries, error)
            else:
                log.info("webhook %s attempt %d failed: %s", row.webhook_id, tries, error)
            cur.execute(
                "UPDATE webhook_deliveries SET state = ?, attempts = ?, first_failed_at = ?, "
                "next_attempt_at = ?, last_error = ?, last_attempt_at = ?, "
                "leased_until = NULL, lease_owner = NULL "
                "WHERE webhook_id = ? AND lease_owner = ?",
                (
                    "dead" if dead else "pending",
                    tries,
                    first_failed,
                    now + backoff_seconds(tries),
                    error[:200],
                    now,
                    row.webhook_id,
                    self.owner,
                ),
            )


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

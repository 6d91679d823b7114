"""The wallet reconciler: no money stays moved by an uncertain debit (decisions §4).

Each pass:
1. brings the ``wallet_debit_attempts`` read model up to date;
2. declares uncertain every attempt whose intent is older than
   ``uncertain_debit_grace_seconds`` with no answer recorded (the process that made it
   died, or its save failed) -- this is how a debit in flight at a crash is found;
3. sends ``wallet.rollback`` for each uncertain attempt that is due, and records
   ``WagerRolledBack`` when the wallet acknowledges. Failures back off (1 s doubling,
   capped at 60 s, jittered); after 24 h the attempt is escalated for a person;
4. re-sends, with the SAME key and the same backoff, every cash-back credit and every
   cancel credit (decisions §11) that has no answer, until the wallet gives one.
Several reconcilers may run (several processes): rollbacks are idempotent at the wallet
(same key) and recording the acknowledgement twice is refused by the round's state.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from typing import Any
from uuid import UUID

from application.inventory.cashout import record_credit_outcome, send_credit
from application.platform import Platform
from application.rounds.cancel import record_cancel_outcome, send_cancel_credit
from application.rounds.saga import change_round, mark_uncertain
from application.store.calls import in_background
from application.wallet.client import Accepted, Uncertain, WalletClient
from domain.round import Round, RoundStateError
from projections.runner import ProjectionRunner

log = logging.getLogger("upgrader.reconciler")

ESCALATE_AFTER_SECONDS = 24 * 3600
BACKOFF_CAP_SECONDS = 60.0


def backoff_seconds(tries: int, jitter: float | None = None) -> float:
    """1 s doubling per failed try, capped at 60 s, times a jitter in [0.5, 1]."""
    factor = random.uniform(0.5, 1.0) if jitter is None else jitter
    return min(BACKOFF_CAP_SECONDS, 2.0 ** max(0, tries - 1)) * factor


class WalletReconciler:
    def __init__(
        self,
        platform: Platform,
        wallet: WalletClient,
        runner: ProjectionRunner,
        interval_seconds: float = 0.5,
    ) -> None:
        self.platform = platform
        self.wallet = wallet
        self.runner = runner
        self.interval = interval_seconds
        self._wake = asyncio.Event()

    def wake(self) -> None:
        self._wake.set()

    async def run_forever(self, stopping: asyncio.Event) -> None:
        while not stopping.is_set():
            try:
                await self.run_once()
            except Exception:  # a pass that fails is retried on the next one
                log.exception("reconciler pass failed")
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self.interval)

    async def run_once(self) -> None:
        await in_background(self.runner.catch_up, "wallet_debit_attempts")
        stale = await in_background(self._stale_in_flight)
        for round_id, attempt in stale:
            await in_background(self._declare_uncertain, round_id, attempt)
        if stale:
            await in_background(self.runner.catch_up, "wallet_debit_attempts")
        for row in await in_background(self._due_rollbacks):
            await self._roll_back(row)
        await self._retry_credits()
        await self._retry_cancels()

    async def _retry_credits(self) -> None:
        """Cash-back credits without an answer: re-send the SAME key until acknowledged."""
        await in_background(self.runner.catch_up, "wallet_credit_attempts")
        for cashout_id, attempt, key, tries in await in_background(self._due_credits):
            cid = UUID(hex=cashout_id)
            cashout = await in_background(self.platform.events.repository.get, cid)
            if cashout.attempt_state(attempt) not in ("in_flight", "uncertain"):
                continue
            outcome = await send_credit(self.platform, self.wallet, cashout, attempt)
            await in_background(record_credit_outcome, self.platform, cid, attempt, outcome)
            if isinstance(outcome, Uncertain):
                row = {
                    "debit_key": key,
                    "tries": tries,
                    "uncertain_at": None,
                    "round_id": None,
                    "attempt": attempt,
                }
                await in_background(self._retry_later, row, outcome.reason)

    async def _retry_cancels(self) -> None:
        """Cancel credits without an answer (held rounds): the SAME key until answered."""
        await in_background(self.runner.catch_up, "wallet_cancel_credits")
        for round_hex, attempt, key, tries in await in_background(self._due_cancels):
            rid = UUID(hex=round_hex)
            round_: Round = await in_background(self.platform.events.repository.get, rid)
            if round_.cancel_attempts.state(attempt) not in ("in_flight", "uncertain"):
                continue
            outcome = await send_cancel_credit(self.platform, self.wallet, round_, attempt)
            await in_background(record_cancel_outcome, self.platform, rid, attempt, outcome)
            if isinstance(outcome, Uncertain):
                row = {"debit_key": key, "tries": tries, "round_id": None, "attempt": attempt}
                await in_background(self._retry_later, row, outcome.reason)

    def _due_cancels(self) -> list[tuple[str, int, str, int]]:
        now = self.platform.clock.now()
        grace = self.platform.config.service.uncertain_debit_grace_seconds
        with self.platform.db.transaction() as cur:
            cur.execute(
                "SELECT a.round_id, a.attempt, a.credit_key, COALESCE(r.tries, 0) "
                "FROM wallet_cancel_credits a "
                "LEFT JOIN wallet_retries r ON r.debit_key = a.credit_key "
                "WHERE (a.state = 'uncertain' OR (a.state = 'in_flight' AND a.attempted_at <= ?)) "
                "AND (r.next_try_at IS NULL OR r.next_try_at <= ?) ORDER BY a.attempted_at",
                (now - grace, now),
            )
            return [tuple(row) for row in cur.fetchall()]

    def _due_credits(self) -> list[tuple[str, int, str, int]]:
        now = self.platform.clock.now()
        grace = self.platform.config.service.uncertain_debit_grace_seconds
        with self.platform.db.transaction() as cur:
            cur.execute(
                "SELECT a.cashout_id, a.attempt, a.credit_key, COALESCE(r.tries, 0) "
                "FROM wallet_credit_attempts a "
                "LEFT JOIN wallet_retries r ON r.debit_key = a.credit_key "
                "WHERE (a.state = 'uncertain' OR (a.state = 'in_flight' AND a.attempted_at <= ?)) "
                "AND (r.next_try_at IS NULL OR r.next_try_at <= ?) ORDER BY a.attempted_at",
                (now - grace, now),
            )
            return [tuple(row) for row in cur.fetchall()]

    def _stale_in_flight(self) -> list[tuple[UUID, int]]:
        limit = (
            self.platform.clock.now() - self.platform.config.service.uncertain_debit_grace_seconds
        )
        with self.platform.db.transaction() as cur:
            cur.execute(
                "SELECT round_id, attempt FROM wallet_debit_attempts "
                "WHERE state = 'in_flight' AND attempted_at <= ?",
                (limit,),
            )
            return [(UUID(hex=r[0]), r[1]) for r in cur.fetchall()]

    def _declare_uncertain(self, round_id: UUID, attempt: int) -> None:
        reason = "no answer recorded within the grace period"
        round_ = mark_uncertain(self.platform, round_id, attempt, reason)
        if round_ is not None:
            log.warning("debit %s:%d declared uncertain", round_.opening["public_id"], attempt)

    def _due_rollbacks(self) -> list[dict[str, Any]]:
        with self.platform.db.transaction() as cur:
            cur.execute(
                "SELECT a.debit_key, a.round_id, a.attempt, a.amount_minor, a.currency, "
                "a.uncertain_at, COALESCE(r.tries, 0) FROM wallet_debit_attempts a "
                "LEFT JOIN wallet_retries r ON r.debit_key = a.debit_key "
                "WHERE a.state = 'uncertain' AND a.escalated = 0 "
                "AND (r.next_try_at IS NULL OR r.next_try_at <= ?) ORDER BY a.uncertain_at",
                (self.platform.clock.now(),),
            )
            columns = (
                "debit_key",
                "round_id",
                "attempt",
                "amount_minor",
                "currency",
                "uncertain_at",
                "tries",
            )
            return [dict(zip(columns, row, strict=True)) for row in cur.fetchall()]

    async def _roll_back(self, row: dict[str, Any]) -> None:
        round_id = UUID(hex=row["round_id"])
        round_: Round = await in_background(self.platform.events.repository.get, round_id)
        opening = round_.opening
        operator = self.platform.directory.operators.get(opening["operator_id"])
        if operator is None:
            return
        outcome = await self.wallet.call(
            operator.config.wallet_url,
            operator.config.outbound_secret,
            operator.id,
            "wallet.rollback",
            {
                "playerExternalId": opening["player_external_id"],
                "amountMinor": row["amount_minor"],
                "currency": row["currency"],
                "idempotencyKey": f"{row['debit_key']}:rollback",
                "originalIdempotencyKey": row["debit_key"],
                "roundId": opening["public_id"],
            },
        )
        if isinstance(outcome, Accepted):
            await in_background(self._record, round_id, row["attempt"], "rolled_back")
            return
        reason = getattr(outcome, "reason", None) or getattr(outcome, "error_code", "refused")
        await in_background(self._retry_later, row, str(reason))

    def _record(self, round_id: UUID, attempt: int, what: str) -> None:
        def record(round_: Round) -> bool:
            try:
                if what == "rolled_back":
                    round_.record_rollback(attempt, self.platform.clock.now())
                else:
                    round_.escalate_rollback(attempt, self.platform.clock.now())
            except RoundStateError:
                return False  # already recorded (another reconciler)
            return True

        change_round(self.platform, round_id, record)

    def _retry_later(self, row: dict[str, Any], reason: str) -> None:
        now = self.platform.clock.now()
        tries = row["tries"] + 1
        if row["round_id"] and now - (row["uncertain_at"] or now) >= ESCALATE_AFTER_SECONDS:
            log.error("rollback of %s escalated after 24 h: %s", row["debit_key"], reason)
            self._record(UUID(hex=row["round_id"]), row["attempt"], "escalated")
        with self.platform.db.transaction() as cur:
            cur.execute(
                "INSERT INTO wallet_retries (debit_key, tries, next_try_at, last_error) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (debit_key) DO UPDATE SET "
                "tries = excluded.tries, next_try_at = excluded.next_try_at, "
                "last_error = excluded.last_error",
                (row["debit_key"], tries, now + backoff_seconds(tries), reason[:200]),
            )

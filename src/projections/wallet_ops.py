"""Wallet debit attempts read model: the durable queue of debits to roll back.

Built from the rounds' events, so it survives restarts and rebuilds by construction:
``in_flight`` (intent recorded, no answer yet), ``debited``, ``refused``, ``uncertain``
(owed a rollback), ``rolled_back``. The reconciler's own retry bookkeeping lives in
``wallet_retries`` (operational state, not derived from events).
"""

from __future__ import annotations

from typing import Any

from eventsourcing.utils import get_topic

from application.sql import execute_in_order
from domain.cashout import Cashout
from domain.round import Round

EVENTS = {
    get_topic(Round.DebitAttempted): "in_flight",
    get_topic(Round.WagerDebited): "debited",
    get_topic(Round.RoundVoided): "refused",
    get_topic(Round.DebitUncertain): "uncertain",
    get_topic(Round.WagerRolledBack): "rolled_back",
    get_topic(Round.RollbackEscalated): None,
}


class WalletDebitAttempts:
    name = "wallet_debit_attempts"
    topics = frozenset(EVENTS)
    rebuild_tables = ("wallet_debit_attempts",)  # wallet_retries is operational state
    schema = [
        """CREATE TABLE IF NOT EXISTS wallet_debit_attempts (
            debit_key TEXT PRIMARY KEY,
            round_id TEXT NOT NULL,
            attempt INTEGER NOT NULL,
            amount_minor BIGINT NOT NULL,
            currency TEXT NOT NULL,
            state TEXT NOT NULL,
            attempted_at DOUBLE PRECISION NOT NULL,
            uncertain_at DOUBLE PRECISION,
            settled_at DOUBLE PRECISION,
            escalated INTEGER NOT NULL DEFAULT 0)""",
        """CREATE INDEX IF NOT EXISTS wallet_debit_attempts_state
            ON wallet_debit_attempts (state, attempted_at)""",
        """CREATE TABLE IF NOT EXISTS wallet_retries (
            debit_key TEXT PRIMARY KEY,
            tries INTEGER NOT NULL,
            next_try_at DOUBLE PRECISION NOT NULL,
            last_error TEXT)""",
    ]

    def process(self, cur: Any, event: Any, position: int) -> None:
        cur.execute(*self._statement(event))

    def process_batch(self, cur: Any, items: list[Any], after: int) -> None:
        """Writes only (nothing read back): the same statements in event order, pipelined."""
        execute_in_order(cur, [self._statement(item.event) for item in items])

    @staticmethod
    def _statement(event: Any) -> tuple[str, tuple[Any, ...]]:
        round_id = event.originator_id.hex
        if isinstance(event, Round.DebitAttempted):
            return (
                "INSERT INTO wallet_debit_attempts (debit_key, round_id, attempt, amount_minor, "
                "currency, state, attempted_at) VALUES (?, ?, ?, ?, ?, 'in_flight', ?) "
                "ON CONFLICT (debit_key) DO NOTHING",
                (
                    event.idempotency_key,
                    round_id,
                    event.attempt,
                    event.amount_minor,
                    event.currency,
                    event.at,
                ),
            )
        if isinstance(event, Round.RollbackEscalated):
            return (
                "UPDATE wallet_debit_attempts SET escalated = 1 WHERE round_id = ? AND attempt = ?",
                (round_id, event.attempt),
            )
        state = EVENTS[get_topic(type(event))]
        column = "uncertain_at" if state == "uncertain" else "settled_at"
        return (
            f"UPDATE wallet_debit_attempts SET state = ?, {column} = ? "  # noqa: S608
            "WHERE round_id = ? AND attempt = ?",
            (state, event.at, round_id, event.attempt),
        )


CREDIT_EVENTS = {
    get_topic(Cashout.CreditAttempted): "in_flight",
    get_topic(Cashout.CashoutCredited): "credited",
    get_topic(Cashout.CreditRefused): "refused",
    get_topic(Cashout.CreditUncertain): "uncertain",
}


class WalletCreditAttempts:
    """Cash-back credits: ``uncertain`` ones are re-sent with the SAME key until answered."""

    name = "wallet_credit_attempts"
    topics = frozenset(CREDIT_EVENTS)
    schema = [
        """CREATE TABLE IF NOT EXISTS wallet_credit_attempts (
            credit_key TEXT PRIMARY KEY,
            cashout_id TEXT NOT NULL,
            attempt INTEGER NOT NULL,
            amount_minor BIGINT NOT NULL,
            currency TEXT NOT NULL,
            state TEXT NOT NULL,
            attempted_at DOUBLE PRECISION NOT NULL,
            answered_at DOUBLE PRECISION)""",
        """CREATE INDEX IF NOT EXISTS wallet_credit_attempts_state
            ON wallet_credit_attempts (state, attempted_at)""",
    ]

    def process(self, cur: Any, event: Any, position: int) -> None:
        cur.execute(*self._statement(event))

    def process_batch(self, cur: Any, items: list[Any], after: int) -> None:
        """Writes only (nothing read back): the same statements in event order, pipelined."""
        execute_in_order(cur, [self._statement(item.event) for item in items])

    @staticmethod
    def _statement(event: Any) -> tuple[str, tuple[Any, ...]]:
        cashout_id = event.originator_id.hex
        if isinstance(event, Cashout.CreditAttempted):
            return (
                "INSERT INTO wallet_credit_attempts (credit_key, cashout_id, attempt, "
                "amount_minor, currency, state, attempted_at) "
                "VALUES (?, ?, ?, ?, ?, 'in_flight', ?) ON CONFLICT (credit_key) DO NOTHING",
                (
                    event.idempotency_key,
                    cashout_id,
                    event.attempt,
                    event.request["credited_minor"],
                    event.request["currency"],
                    event.at,
                ),
            )
        return (
            "UPDATE wallet_credit_attempts SET state = ?, answered_at = ? "
            "WHERE cashout_id = ? AND attempt = ?",
            (CREDIT_EVENTS[get_topic(type(event))], event.at, cashout_id, event.attempt),
        )

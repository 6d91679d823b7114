"""Wallet debit attempts read model: the durable queue of debits to roll back.

Built from the rounds' events, so it survives restarts and rebuilds by construction:
``in_flight`` (intent recorded, no answer yet), ``debited``, ``refused``, ``uncertain``
(owed a rollback), ``rolled_back``. The reconciler's own retry bookkeeping lives in
``wallet_retries`` (operational state, not derived from events).
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any

from eventsourcing.utils import get_topic

from application.store.sql import execute_in_order
from domain.cashout import Cashout
from domain.round import Round
from projections.unnest import columns, first_per_key, floats, on_postgres

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
        # every answer to an attempt updates its row by (round_id, attempt)
        """CREATE INDEX IF NOT EXISTS wallet_debit_attempts_round
            ON wallet_debit_attempts (round_id, attempt)""",
        """CREATE TABLE IF NOT EXISTS wallet_retries (
            debit_key TEXT PRIMARY KEY,
            tries INTEGER NOT NULL,
            next_try_at DOUBLE PRECISION NOT NULL,
            last_error TEXT)""",
    ]

    def process(self, cur: Any, event: Any, position: int) -> None:
        cur.execute(*self._statement(event))

    def process_batch(self, cur: Any, items: list[Any], after: int) -> None:
        """Writes only (nothing read back): the same statements in event order, pipelined;
        on PostgreSQL as a few statements over arrays where that is the same."""
        statements = [self._statement(item.event) for item in items]
        if not (on_postgres(cur) and _debits_unnest(cur, statements)):
            execute_in_order(cur, statements)

    @staticmethod
    def _statement(event: Any) -> tuple[str, tuple[Any, ...]]:
        round_id = event.originator_id.hex
        if isinstance(event, Round.DebitAttempted):
            return (
                _ATTEMPT,
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
            return _ESCALATE, (round_id, event.attempt)
        state = EVENTS[get_topic(type(event))]
        return (
            _UNCERTAIN if state == "uncertain" else _ANSWERED,
            (state, event.at, round_id, event.attempt),
        )


_ATTEMPT = (
    "INSERT INTO wallet_debit_attempts (debit_key, round_id, attempt, amount_minor, "
    "currency, state, attempted_at) VALUES (?, ?, ?, ?, ?, 'in_flight', ?) "
    "ON CONFLICT (debit_key) DO NOTHING"
)
_ESCALATE = "UPDATE wallet_debit_attempts SET escalated = 1 WHERE round_id = ? AND attempt = ?"
_UNCERTAIN = (
    "UPDATE wallet_debit_attempts SET state = ?, uncertain_at = ? "
    "WHERE round_id = ? AND attempt = ?"
)
_ANSWERED = (
    "UPDATE wallet_debit_attempts SET state = ?, settled_at = ? WHERE round_id = ? AND attempt = ?"
)
_ATTEMPT_UNNEST = (
    "INSERT INTO wallet_debit_attempts (debit_key, round_id, attempt, amount_minor, "
    "currency, state, attempted_at) SELECT debit_key, round_id, attempt, amount_minor, "
    "currency, 'in_flight', attempted_at FROM unnest(%b::text[], %b::text[], %b::integer[], "
    "%b::bigint[], %b::text[], %b::double precision[]) AS u(debit_key, round_id, attempt, "
    "amount_minor, currency, attempted_at) ON CONFLICT (debit_key) DO NOTHING"
)
_ESCALATE_UNNEST = (
    "UPDATE wallet_debit_attempts AS t SET escalated = 1 "
    "FROM unnest(%b::text[], %b::integer[]) AS u(round_id, attempt) "
    "WHERE t.round_id = u.round_id AND t.attempt = u.attempt"
)
_UNCERTAIN_UNNEST = (
    "UPDATE wallet_debit_attempts AS t SET state = u.state, uncertain_at = u.at "
    "FROM unnest(%b::text[], %b::double precision[], %b::text[], %b::integer[]) "
    "AS u(state, at, round_id, attempt) "
    "WHERE t.round_id = u.round_id AND t.attempt = u.attempt"
)
_ANSWERED_UNNEST = (
    "UPDATE wallet_debit_attempts AS t SET state = u.state, settled_at = u.at "
    "FROM unnest(%b::text[], %b::double precision[], %b::text[], %b::integer[]) "
    "AS u(state, at, round_id, attempt) "
    "WHERE t.round_id = u.round_id AND t.attempt = u.attempt"
)


def _debits_unnest(cur: Any, statements: list[tuple[str, tuple[Any, ...]]]) -> bool:
    """PostgreSQL: the batch's statements as one insert and one update per kind over
    arrays; False (nothing written) where their order matters, for the caller to run them
    in order: an attempt (round, attempt) updated twice in the batch, or updated before
    the batch inserts a row of it.

    Otherwise the same rows: updates neither delete rows nor change ``debit_key``, so a
    debit key's first insert lands or finds it there and its later inserts do nothing;
    every update then finds the rows it found in event order (no row of its attempt is
    inserted after it), and the updates touch disjoint rows (one update per attempt), so
    inserting first and updating per kind changes nothing."""
    attempted = {(row[1], row[2]) for sql, row in statements if sql is _ATTEMPT}
    inserted: set[tuple[Any, Any]] = set()
    updated: set[tuple[Any, Any]] = set()
    kinds: dict[str, list[tuple[Any, ...]]] = {_ESCALATE: [], _UNCERTAIN: [], _ANSWERED: []}
    for sql, row in statements:
        if sql is _ATTEMPT:
            inserted.add((row[1], row[2]))
            continue
        attempt = (row[-2], row[-1])
        if attempt in updated or (attempt in attempted and attempt not in inserted):
            return False
        updated.add(attempt)
        kinds[sql].append(row)
    writes: list[tuple[str, list[list[Any]]]] = []
    inserts = first_per_key((row for sql, row in statements if sql is _ATTEMPT), itemgetter(0))
    if inserts:
        keys, rounds, attempts, amounts, currencies, at = columns(inserts)
        writes.append((_ATTEMPT_UNNEST, [keys, rounds, attempts, amounts, currencies, floats(at)]))
    for sql, unnest in (
        (_ESCALATE, _ESCALATE_UNNEST),
        (_UNCERTAIN, _UNCERTAIN_UNNEST),
        (_ANSWERED, _ANSWERED_UNNEST),
    ):
        rows = kinds[sql]
        if rows and sql is _ESCALATE:
            writes.append((unnest, columns(rows)))
        elif rows:
            states, at, rounds, attempts = columns(rows)
            writes.append((unnest, [states, floats(at), rounds, attempts]))
    execute_in_order(cur, writes)
    return True


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
        # every answer to a credit updates its row by (cashout_id, attempt)
        """CREATE INDEX IF NOT EXISTS wallet_credit_attempts_cashout
            ON wallet_credit_attempts (cashout_id, attempt)""",
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
                _CREDIT_ATTEMPT,
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
            _CREDIT_ANSWERED,
            (CREDIT_EVENTS[get_topic(type(event))], event.at, cashout_id, event.attempt),
        )


_CREDIT_ATTEMPT = (
    "INSERT INTO wallet_credit_attempts (credit_key, cashout_id, attempt, "
    "amount_minor, currency, state, attempted_at) "
    "VALUES (?, ?, ?, ?, ?, 'in_flight', ?) ON CONFLICT (credit_key) DO NOTHING"
)
_CREDIT_ANSWERED = (
    "UPDATE wallet_credit_attempts SET state = ?, answered_at = ? "
    "WHERE cashout_id = ? AND attempt = ?"
)

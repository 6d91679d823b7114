"""Cancel credits read model (decisions §11): the reconciler's queue of cancel credits to
re-send, and the held rounds ``upgrader wallet pending`` lists.

One row per credit attempt of a round's cancel, built from the round's events (so it
survives restarts and rebuilds): ``in_flight`` (the hold and the attempt recorded, no
answer yet), ``uncertain`` (re-sent with the same key until answered), ``refused`` (the
round stays held until a new cancel makes the next attempt; ``error_code`` is the
wallet's), ``credited`` (the round is cancelled). The retry bookkeeping is shared with the
other wallet operations in ``wallet_retries`` (keyed by ``credit_key``).
"""

from __future__ import annotations

from typing import Any

from eventsourcing.utils import get_topic

from application.store.sql import execute_in_order
from domain.round import Round

CANCEL_EVENTS = {
    get_topic(Round.CancelCreditAttempted): "in_flight",
    get_topic(Round.RoundCancelled): "credited",
    get_topic(Round.CancelCreditRefused): "refused",
    get_topic(Round.CancelCreditUncertain): "uncertain",
}


class WalletCancelCredits:
    name = "wallet_cancel_credits"
    topics = frozenset(CANCEL_EVENTS)
    schema = [
        """CREATE TABLE IF NOT EXISTS wallet_cancel_credits (
            credit_key TEXT PRIMARY KEY,
            round_id TEXT NOT NULL,
            attempt INTEGER NOT NULL,
            amount_minor BIGINT NOT NULL,
            currency TEXT NOT NULL,
            state TEXT NOT NULL,
            error_code TEXT,
            attempted_at DOUBLE PRECISION NOT NULL,
            answered_at DOUBLE PRECISION)""",
        """CREATE INDEX IF NOT EXISTS wallet_cancel_credits_state
            ON wallet_cancel_credits (state, attempted_at)""",
        """CREATE INDEX IF NOT EXISTS wallet_cancel_credits_round
            ON wallet_cancel_credits (round_id, attempt)""",
    ]

    def process(self, cur: Any, event: Any, position: int) -> None:
        cur.execute(*self._statement(event))

    def process_batch(self, cur: Any, items: list[Any], after: int) -> None:
        """Writes only (nothing read back): the same statements in event order, pipelined."""
        execute_in_order(cur, [self._statement(item.event) for item in items])

    @staticmethod
    def _statement(event: Any) -> tuple[str, tuple[Any, ...]]:
        round_id = event.originator_id.hex
        if isinstance(event, Round.CancelCreditAttempted):
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
        state = CANCEL_EVENTS[get_topic(type(event))]
        code = event.error_code if isinstance(event, Round.CancelCreditRefused) else None
        return _ANSWERED, (state, code, event.at, round_id, event.attempt)


_ATTEMPT = (
    "INSERT INTO wallet_cancel_credits (credit_key, round_id, attempt, amount_minor, "
    "currency, state, attempted_at) VALUES (?, ?, ?, ?, ?, 'in_flight', ?) "
    "ON CONFLICT (credit_key) DO NOTHING"
)
_ANSWERED = (
    "UPDATE wallet_cancel_credits SET state = ?, error_code = ?, answered_at = ? "
    "WHERE round_id = ? AND attempt = ?"
)

# The held rounds: each one's latest attempt, unless it was credited (the round is then
# cancelled). A refused one waits for a new cancel; the others for the wallet.
HELD_ROUNDS = (
    "SELECT c.credit_key, c.amount_minor, c.currency, c.state, c.error_code, c.attempted_at "
    "FROM wallet_cancel_credits c WHERE c.state IN ('in_flight', 'uncertain', 'refused') "
    "AND NOT EXISTS ("
    "SELECT 1 FROM wallet_cancel_credits n WHERE n.round_id = c.round_id "
    "AND n.attempt > c.attempt)"
)

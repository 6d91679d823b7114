"""The round of every game: opened (intent recorded) before the wallet is called, then
settled, voided, or left with an uncertain debit that is rolled back. A settled
balance-mode round may be cancelled (decisions §11): held (with its items taken, by the
caller, in the same commit) before its bet is credited back, then cancelled once the
wallet accepts that credit; a refused credit leaves it held for a new cancel's attempt.

Public methods check the state machine; the decorated private ones only assign state.
Stored format: each event is stored under its explicit topic (``TOPIC``, ``@event(...,
topic=...)``), the string it had when topics were module paths. The classes and this
module may move; topics, event names and fields never change
(``tests/unit/test_event_topics.py`` pins the topics).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate, event
from msgspec import UNSET, UnsetType

from domain.ids import round_id
from domain.records import Record
from domain.wallet_attempts import (
    CREDIT,
    CREDITED,
    DEBIT,
    DEBITED,
    REFUSED,
    ROLLED_BACK,
    UNCERTAIN,
    AttemptStateError,
    WalletAttempts,
)


class RoundTerms(Record, frozen=True, kw_only=True):
    """The first keys of every game's opening: who plays which action, in which mode,
    and the bet the wallet is asked for. A game's opening record extends it."""

    operator_id: str
    player_external_id: str
    client_action_id: str
    public_id: str
    mode: str
    fingerprint: str  # the action's body print: a copy with another body is a conflict
    wager_minor: int
    currency: str
    # the game: absent (UNSET) in the Upgrader's openings, recorded before games had keys
    game: str | UnsetType = UNSET

    @property
    def game_key(self) -> str:
        return "upgrader" if isinstance(self.game, UnsetType) else self.game


def game_of(opening: dict[str, Any]) -> str:
    """The game key of a recorded opening (``"upgrader"`` when it has none)."""
    return opening.get("game", "upgrader")


class RoundStateError(AttemptStateError):
    """A move the round's state does not allow (a programming or concurrency fault)."""


class Round(Aggregate):
    """States: open (an attempt in flight or uncertain) -> settled | voided; a settled
    balance-mode round -> held -> cancelled (decisions §11; never back).

    The round's rules are the status; its debit attempts follow the shared
    :class:`~domain.wallet_attempts.WalletAttempts` machine (``DEBIT`` rules), its cancel
    credits the same machine under the ``CREDIT`` rules (an uncertain one is re-sent with
    the same key ``{publicId}:cancel:{attempt}``).
    """

    TOPIC = "domain.round:Round"

    class Created(Aggregate.Created):  # the library's default, unused: a topic all the same
        TOPIC = "domain.round:Round.Created"

    @staticmethod
    def create_id(opening: dict[str, Any]) -> UUID:
        return round_id(
            opening["operator_id"], opening["player_external_id"], opening["client_action_id"]
        )

    @event("Opened", topic="domain.round:Round.Opened")
    def __init__(self, opening: dict[str, Any]) -> None:
        self.opening = opening
        self.status = "open"
        self.attempts = WalletAttempts(DEBIT, RoundStateError)
        self.settlement: dict[str, Any] | None = None
        self.voiding: dict[str, Any] | None = None
        # the cancel (decisions §11): the hold, its credit attempts and their answers
        self.holding: dict[str, Any] | None = None
        self.cancel_attempts = WalletAttempts(CREDIT, RoundStateError)
        self.cancel_actions: dict[int, str] = {}  # attempt -> the clientActionId that made it
        self.cancel_answers: dict[int, dict[str, Any]] = {}  # attempt -> credited / refused

    # -- reading ------------------------------------------------------------------------

    @property
    def last_attempt(self) -> int:
        return self.attempts.last

    def attempt_state(self, attempt: int) -> str | None:
        return self.attempts.state(attempt)

    @property
    def in_flight_attempt(self) -> int | None:
        return self.attempts.in_flight

    def uncertain_attempts(self) -> list[int]:
        return self.attempts.in_state(UNCERTAIN)

    @property
    def balance_after_minor(self) -> int | None:
        debited = self.attempts.in_state(DEBITED)
        return self.attempts[debited[0]].balance_after_minor if debited else None

    # -- moves ----------------------------------------------------------------------------

    def attempt_debit(
        self, idempotency_key: str, amount_minor: int, currency: str, at: float
    ) -> int:
        attempt = self.attempts.check_next(
            idle=self.status == "open" and self.attempts.in_flight is None
        )
        self._debit_attempted(
            attempt=attempt,
            idempotency_key=idempotency_key,
            amount_minor=amount_minor,
            currency=currency,
            at=at,
        )
        return attempt

    @event("DebitAttempted", topic="domain.round:Round.DebitAttempted")
    def _debit_attempted(
        self, attempt: int, idempotency_key: str, amount_minor: int, currency: str, at: float
    ) -> None:
        self.attempts.begin(attempt, idempotency_key, at)

    def mark_uncertain(self, attempt: int, reason: str, at: float) -> None:
        self.attempts.check_move(attempt, UNCERTAIN)
        self._debit_uncertain(attempt=attempt, reason=reason, at=at)

    @event("DebitUncertain", topic="domain.round:Round.DebitUncertain")
    def _debit_uncertain(self, attempt: int, reason: str, at: float) -> None:
        self.attempts.move(attempt, UNCERTAIN)

    def record_rollback(self, attempt: int, at: float) -> None:
        self.attempts.check_move(attempt, ROLLED_BACK)
        self._wager_rolled_back(attempt=attempt, at=at)

    @event("WagerRolledBack", topic="domain.round:Round.WagerRolledBack")
    def _wager_rolled_back(self, attempt: int, at: float) -> None:
        self.attempts.move(attempt, ROLLED_BACK)

    def escalate_rollback(self, attempt: int, at: float) -> None:
        self.attempts.check_escalate(attempt)
        self._rollback_escalated(attempt=attempt, at=at)

    @event("RollbackEscalated", topic="domain.round:Round.RollbackEscalated")
    def _rollback_escalated(self, attempt: int, at: float) -> None:
        self.attempts.escalate(attempt)

    def settle(self, debit: dict[str, Any], settlement: dict[str, Any]) -> None:
        """Record the accepted debit and the roll's outcome (one save with the grant)."""
        self._check_open()
        self.attempts.check_move(debit["attempt"], DEBITED)
        self._wager_debited(**debit)
        self._round_settled(settlement=settlement)

    def settle_without_debit(self, settlement: dict[str, Any]) -> None:
        """Items mode: the stake is consumed, no wallet call."""
        self._check_open()
        if self.attempts:
            raise RoundStateError("only a fresh items-mode round settles without a debit")
        self._round_settled(settlement=settlement)

    @event("WagerDebited", topic="domain.round:Round.WagerDebited")
    def _wager_debited(
        self,
        attempt: int,
        idempotency_key: str,
        balance_after_minor: int | None,
        provider_txn_ref: str | None,
        at: float,
    ) -> None:
        self.attempts.move(attempt, DEBITED, balance_after_minor)

    @event("RoundSettled", topic="domain.round:Round.RoundSettled")
    def _round_settled(self, settlement: dict[str, Any]) -> None:
        self.status = "settled"
        self.settlement = settlement

    def void(
        self, attempt: int, error_code: str, balance_after_minor: int | None, at: float
    ) -> None:
        self._check_open()
        self.attempts.check_move(attempt, REFUSED)
        self._round_voided(
            attempt=attempt, error_code=error_code, balance_after_minor=balance_after_minor, at=at
        )

    @event("RoundVoided", topic="domain.round:Round.RoundVoided")
    def _round_voided(
        self, attempt: int, error_code: str, balance_after_minor: int | None, at: float
    ) -> None:
        self.attempts.move(attempt, REFUSED)
        self.status = "voided"
        self.voiding = {
            "error_code": error_code,
            "balance_after_minor": balance_after_minor,
            "at": at,
        }

    # -- the cancel (decisions §11) ---------------------------------------------------------

    def hold_for_cancel(self, hold: dict[str, Any], at: float) -> None:
        """Hold a settled balance-mode round for its cancel (its items are taken in the
        same commit, by the caller); ``hold`` records what was taken and why."""
        if self.status != "settled" or self.opening.get("mode") != "balance":
            raise RoundStateError(f"a {self.status} {self.opening.get('mode')} round is not held")
        self._round_held(hold=hold, at=at)

    @event("RoundHeld", topic="domain.round:Round.RoundHeld")
    def _round_held(self, hold: dict[str, Any], at: float) -> None:
        self.status = "held"
        self.holding = hold

    def attempt_cancel_credit(self, client_action_id: str, at: float) -> int:
        """The next credit of the bet, for the action ``client_action_id``: a held round
        whose earlier attempts were all refused."""
        attempt = self.cancel_attempts.check_next(
            idle=self.status == "held" and not self.cancel_attempts.under_way
        )
        self._cancel_credit_attempted(
            attempt=attempt,
            idempotency_key=f"{self.opening['public_id']}:cancel:{attempt}",
            client_action_id=client_action_id,
            amount_minor=self.opening["wager_minor"],
            currency=self.opening["currency"],
            at=at,
        )
        return attempt

    @event("CancelCreditAttempted", topic="domain.round:Round.CancelCreditAttempted")
    def _cancel_credit_attempted(
        self,
        attempt: int,
        idempotency_key: str,
        client_action_id: str,
        amount_minor: int,
        currency: str,
        at: float,
    ) -> None:
        self.cancel_attempts.begin(attempt, idempotency_key, at)
        self.cancel_actions[attempt] = client_action_id

    def mark_cancel_uncertain(self, attempt: int, reason: str, at: float) -> None:
        self.cancel_attempts.check_move(attempt, UNCERTAIN)
        self._cancel_credit_uncertain(attempt=attempt, reason=reason, at=at)

    @event("CancelCreditUncertain", topic="domain.round:Round.CancelCreditUncertain")
    def _cancel_credit_uncertain(self, attempt: int, reason: str, at: float) -> None:
        self.cancel_attempts.move(attempt, UNCERTAIN)

    def refuse_cancel_credit(
        self, attempt: int, error_code: str, balance_after_minor: int | None, at: float
    ) -> None:
        """The wallet refused the credit: the round stays held (a new cancel retries)."""
        self.cancel_attempts.check_move(attempt, REFUSED)
        self._cancel_credit_refused(
            attempt=attempt, error_code=error_code, balance_after_minor=balance_after_minor, at=at
        )

    @event("CancelCreditRefused", topic="domain.round:Round.CancelCreditRefused")
    def _cancel_credit_refused(
        self, attempt: int, error_code: str, balance_after_minor: int | None, at: float
    ) -> None:
        self.cancel_attempts.move(attempt, REFUSED)
        self.cancel_answers[attempt] = {
            "error_code": error_code,
            "balance_after_minor": balance_after_minor,
            "at": at,
        }

    def complete_cancel(
        self, attempt: int, balance_after_minor: int | None, provider_txn_ref: str | None, at: float
    ) -> None:
        """The wallet accepted the credit: the round is cancelled."""
        self.cancel_attempts.check_move(attempt, CREDITED)
        self._round_cancelled(
            attempt=attempt,
            balance_after_minor=balance_after_minor,
            provider_txn_ref=provider_txn_ref,
            at=at,
        )

    @event("RoundCancelled", topic="domain.round:Round.RoundCancelled")
    def _round_cancelled(
        self, attempt: int, balance_after_minor: int | None, provider_txn_ref: str | None, at: float
    ) -> None:
        self.cancel_attempts.move(attempt, CREDITED)
        self.status = "cancelled"
        self.cancel_answers[attempt] = {"balance_after_minor": balance_after_minor, "at": at}

    def _check_open(self) -> None:
        if self.status != "open":
            raise RoundStateError(f"the round is {self.status}, not open")

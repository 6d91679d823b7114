"""Cash-back of inventory items through a ``wallet.credit`` (decisions §4, §5).

A cash-back action is requested (its items held, amounts pinned at claim time) before
the wallet is asked. Credit outcomes: accepted -> credited (items cashed back, one save);
refused -> refused (items released, the caller may retry the action: next attempt);
uncertain -> the service retries the SAME key until the wallet answers.
Stored format: each event is stored under its explicit topic (``TOPIC``, ``@event(...,
topic=...)``), the string it had when topics were module paths. The classes and this
module may move; topics, event names and fields never change
(``tests/unit/test_event_topics.py`` pins the topics).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from domain.config_history import NAMESPACE
from domain.wallet_attempts import (
    CREDIT,
    CREDITED,
    REFUSED,
    UNCERTAIN,
    AttemptStateError,
    WalletAttempts,
)


def cashout_id(operator_id: str, player: str, client_action_id: str) -> UUID:
    return uuid5(
        NAMESPACE,
        f"cashout:{len(operator_id)}:{operator_id}:{len(player)}:{player}:{client_action_id}",
    )


def cashout_public_id(uuid: UUID) -> str:
    return f"c_{uuid.hex}"


class CashoutStateError(AttemptStateError):
    pass


class Cashout(Aggregate):
    """States: requested (attempt in flight / uncertain) -> credited | refused.

    Its credit attempts follow the shared :class:`~domain.wallet_attempts.WalletAttempts`
    machine (``CREDIT`` rules: an uncertain credit is re-sent with the same key).
    """

    TOPIC = "domain.cashout:Cashout"

    class Created(Aggregate.Created):  # the library's default, unused: a topic all the same
        TOPIC = "domain.cashout:Cashout.Created"

    @staticmethod
    def create_id(request: dict[str, Any]) -> UUID:
        return cashout_id(
            request["operator_id"], request["player_external_id"], request["client_action_id"]
        )

    @event("CashoutRequested", topic="domain.cashout:Cashout.CashoutRequested")
    def __init__(self, request: dict[str, Any]) -> None:
        self.request = request
        self.status = "requested"
        self.attempts = WalletAttempts(CREDIT, CashoutStateError)
        self.outcome: dict[str, Any] | None = None

    @property
    def last_attempt(self) -> int:
        return self.attempts.last

    def attempt_state(self, attempt: int) -> str | None:
        return self.attempts.state(attempt)

    def attempt_credit(self, request: dict[str, Any], at: float) -> int:
        """Start the next credit attempt with (possibly re-priced) ``request``."""
        attempt = self.attempts.check_next(
            idle=self.status != "credited" and not self.attempts.under_way
        )
        key = f"{request['public_id']}:{attempt}"
        self._credit_attempted(attempt=attempt, idempotency_key=key, request=request, at=at)
        return attempt

    @event("CreditAttempted", topic="domain.cashout:Cashout.CreditAttempted")
    def _credit_attempted(
        self, attempt: int, idempotency_key: str, request: dict[str, Any], at: float
    ) -> None:
        self.request = request
        self.status = "requested"
        self.attempts.begin(attempt, idempotency_key, at)

    def mark_uncertain(self, attempt: int, reason: str, at: float) -> None:
        self.attempts.check_move(attempt, UNCERTAIN)
        self._credit_uncertain(attempt=attempt, reason=reason, at=at)

    @event("CreditUncertain", topic="domain.cashout:Cashout.CreditUncertain")
    def _credit_uncertain(self, attempt: int, reason: str, at: float) -> None:
        self.attempts.move(attempt, UNCERTAIN)

    def credit(
        self, attempt: int, balance_after_minor: int | None, provider_txn_ref: str | None, at: float
    ) -> None:
        self.attempts.check_move(attempt, CREDITED)
        self._credited(
            attempt=attempt,
            balance_after_minor=balance_after_minor,
            provider_txn_ref=provider_txn_ref,
            at=at,
        )

    @event("CashoutCredited", topic="domain.cashout:Cashout.CashoutCredited")
    def _credited(
        self, attempt: int, balance_after_minor: int | None, provider_txn_ref: str | None, at: float
    ) -> None:
        self.attempts.move(attempt, CREDITED)
        self.status = "credited"
        self.outcome = {"balance_after_minor": balance_after_minor, "at": at}

    def refuse(
        self, attempt: int, error_code: str, balance_after_minor: int | None, at: float
    ) -> None:
        self.attempts.check_move(attempt, REFUSED)
        self._credit_refused(
            attempt=attempt, error_code=error_code, balance_after_minor=balance_after_minor, at=at
        )

    @event("CreditRefused", topic="domain.cashout:Cashout.CreditRefused")
    def _credit_refused(
        self, attempt: int, error_code: str, balance_after_minor: int | None, at: float
    ) -> None:
        self.attempts.move(attempt, REFUSED)
        self.status = "refused"
        self.outcome = {
            "error_code": error_code,
            "balance_after_minor": balance_after_minor,
            "at": at,
        }


class Shipment(Aggregate):
    """A shipping request for fulfillable items (state ``shipping_requested``)."""

    TOPIC = "domain.cashout:Shipment"

    class Created(Aggregate.Created):  # the library's default, unused: a topic all the same
        TOPIC = "domain.cashout:Shipment.Created"

    @staticmethod
    def create_id(request: dict[str, Any]) -> UUID:
        return uuid5(
            NAMESPACE,
            f"shipment:{len(request['operator_id'])}:"
            f"{request['operator_id']}:{len(request['player_external_id'])}:"
            f"{request['player_external_id']}:{request['client_action_id']}",
        )

    @event("ShippingRequested", topic="domain.cashout:Shipment.ShippingRequested")
    def __init__(self, request: dict[str, Any]) -> None:
        self.request = request
        self.dispatched_at: float | None = None

    def dispatch(self, at: float) -> None:
        if self.dispatched_at is not None:
            raise CashoutStateError("the shipment was already dispatched")
        self._dispatched(at=at)

    @event("ShipmentDispatched", topic="domain.cashout:Shipment.ShipmentDispatched")
    def _dispatched(self, at: float) -> None:
        self.dispatched_at = at

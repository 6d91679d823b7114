"""Cancels of settled balance-mode rounds (decisions §11, §4; README "Cancels and held
rounds").

``POST /api/s2s/rounds/{publicId}/cancel`` ``{playerExternalId, clientActionId, reason?}``:

1. A known action (same operator, player and clientActionId) answers from its record: the
   credited answer or the recorded refusal, byte for byte, or 409 ``IDEMPOTENCY_CONFLICT``
   when the body differs (another round, another reason). Its attempt still in flight in
   another request is waited for; an uncertain one is sent again with the same key.
2. The round must be this operator's and this player's (else 404 ``NOT_FOUND``), settled
   in balance mode with every item it granted still unresolved and not held, or held with
   every credit attempt refused (else 422 ``ROUND_NOT_CANCELLABLE``).
3. One commit before the wallet hears of it: the action, the round ``held``
   (``RoundHeld``, on its first cancel), its items ``cancelled`` and the credit attempt.
4. ``wallet.credit`` of the round's bet, ``reason: "cancel"``, ``roundId``, key
   ``{publicId}:cancel:{attempt}``:
   accepted  -> ``RoundCancelled``: 200 ``{round, creditedMinor, currency, balanceAfterMinor}``;
   refused   -> ``CancelCreditRefused``: the round stays held; the wallet's code (decisions
                §4: ``PLAYER_BLOCKED`` 403, others 422, a malformed one ``WALLET_REFUSED``)
                with the held round and ``balanceAfterMinor``; a new cancel (a new
                clientActionId) makes the next attempt;
   uncertain -> ``CancelCreditUncertain``: the round stays held and the reconciler re-sends
                the SAME key with backoff until the wallet answers. The answer is 503
                ``OUTCOME_UNKNOWN``, not ``WALLET_UNAVAILABLE``: the round is held and money
                may have moved, so it is not "nothing happened" (README, "What a 503
                means"); a copy of the action answers the outcome once it is recorded.
A held round is never un-cancelled: its items stay cancelled whatever the wallet says.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import anyio
import msgspec
from eventsourcing.application import AggregateNotFoundError
from eventsourcing.persistence import IntegrityError

from application.errors import PlatformError, WalletRefusal, not_found, outcome_unknown
from application.platform import Platform
from application.rounds.actions import (
    ActionLocks,
    action_in_progress,
    fingerprint,
    idempotency_conflict,
)
from application.rounds.saga import change_round
from application.store.calls import (
    StoreOutcomeUnknown,
    in_store,
    in_store_after_money,
    in_store_write,
)
from application.wallet.client import Accepted, Refused, WalletClient, WalletOutcome
from application.wallet.refusals import wallet_refusal
from domain.ids import inventory_item_id, round_uuid_of
from domain.inventory import InventoryItem
from domain.round import Round
from domain.round_cancel import RoundCancel, cancel_action_id, granted_item_ids
from domain.wallet_attempts import CREDITED, IN_FLIGHT, REFUSED, UNCERTAIN

CANCEL_REASON = "cancel"  # the wallet.credit reason (decisions §4)
CREDIT_PENDING = "the cancel credit is being confirmed with the wallet and the round stays held"
MAX_TRIES = 3

# A settled round of any game as its history shows it (status "settled"): handed in by the
# composition root (``application/games/registry.py`` ``settled_round_view``), since the
# round core does not know the games.
RoundView = Callable[[Round], Any]


@dataclass(frozen=True)
class CancelCommand:
    operator_id: str
    player_external_id: str
    client_action_id: str
    public_id: str
    reason: str | None = None


def not_cancellable(why: str) -> PlatformError:
    return PlatformError("ROUND_NOT_CANCELLABLE", f"the round cannot be cancelled: {why}")


def no_wallet() -> PlatformError:
    return PlatformError(
        "WALLET_UNAVAILABLE", "no wallet is configured for this operator; nothing was done"
    )


@dataclass(frozen=True)
class _AwaitOther:
    """The action's attempt is in flight in another request: wait for its answer."""

    rid: UUID
    attempt: int


# -- the credit: sent by the request and by the reconciler alike -----------------------------


async def send_cancel_credit(
    platform: Platform,
    wallet: WalletClient,
    round_: Round,
    attempt: int,
    *,
    read_balance_on_refusal: bool = False,
) -> WalletOutcome:
    """``wallet.credit`` of the round's bet for one cancel attempt."""
    opening = round_.opening
    operator = platform.directory.operators[opening["operator_id"]]
    return await wallet.call(
        operator.config.wallet_url,
        operator.config.outbound_secret,
        operator.id,
        "wallet.credit",
        {
            "playerExternalId": opening["player_external_id"],
            "amountMinor": opening["wager_minor"],
            "currency": opening["currency"],
            "idempotencyKey": round_.cancel_attempts[attempt].key,
            "reason": CANCEL_REASON,
            "roundId": opening["public_id"],
        },
        read_balance_on_refusal=read_balance_on_refusal,
    )


def record_cancel_outcome(
    platform: Platform, rid: UUID, attempt: int, outcome: WalletOutcome
) -> Round | None:
    """Apply a wallet answer to a cancel attempt still waiting for one; the round as
    saved or found (None when every try conflicted)."""
    now = platform.clock.now()

    def change(round_: Round) -> bool:
        state = round_.cancel_attempts.state(attempt)
        if state not in (IN_FLIGHT, UNCERTAIN):
            return False  # answered already (another request or reconciler)
        if isinstance(outcome, Accepted):
            round_.complete_cancel(
                attempt, outcome.balance_after_minor, outcome.provider_txn_ref, now
            )
        elif isinstance(outcome, Refused):
            round_.refuse_cancel_credit(
                attempt, outcome.error_code, outcome.balance_after_minor, now
            )
        elif state == IN_FLIGHT:
            round_.mark_cancel_uncertain(attempt, outcome.reason, now)
        else:
            return False
        return True

    return change_round(platform, rid, change)


# -- the service ----------------------------------------------------------------------------


class Cancels:
    def __init__(
        self,
        platform: Platform,
        wallet: WalletClient,
        view: RoundView,
        wake_reconciler: Callable[[], None],
    ) -> None:
        self.platform = platform
        self.wallet = wallet
        self.view = view
        self.wake_reconciler = wake_reconciler
        self.locks = ActionLocks()

    async def cancel(self, command: CancelCommand) -> dict[str, Any]:
        aid = cancel_action_id(
            command.operator_id, command.player_external_id, command.client_action_id
        )
        body_print = fingerprint("cancel", command.public_id, command.reason)
        async with self.locks.hold(aid):
            try:
                step = await in_store_write(self._prepare, command, aid, body_print)
            except StoreOutcomeUnknown:  # the hold and the attempt may still land
                raise outcome_unknown("the cancel may have been recorded") from None
            if isinstance(step, dict):
                return step
            if isinstance(step, _AwaitOther):
                return await self._await_other(step.rid, step.attempt)
            round_, attempt = step
            return await self._credit(round_, attempt)

    # -- views -------------------------------------------------------------------------------

    def round_view(self, round_: Round, status: str) -> dict[str, Any]:
        """The round as its game shows it, in ``status`` (``held`` or ``cancelled``)."""
        return {**msgspec.to_builtins(self.view(round_)), "status": status}

    def answer(self, round_: Round, attempt: int) -> dict[str, Any]:
        """What the attempt answers, as recorded (every copy of the action gets the same
        bytes): the credited answer, or raises the refusal or OUTCOME_UNKNOWN."""
        state = round_.cancel_attempts.state(attempt)
        recorded = round_.cancel_answers.get(attempt, {})
        if state == CREDITED:
            return {
                "round": self.round_view(round_, "cancelled"),
                "creditedMinor": round_.opening["wager_minor"],
                "currency": round_.opening["currency"],
                "balanceAfterMinor": recorded["balance_after_minor"],
            }
        if state == REFUSED:
            code, _, message = wallet_refusal(recorded["error_code"], "cancel credit")
            raise WalletRefusal(
                code,
                f"{message}; the round stays held: a new cancel (a new clientActionId) "
                "tries the credit again",
                round=self.round_view(round_, "held"),
                balanceAfterMinor=recorded["balance_after_minor"],
            )
        self.wake_reconciler()  # uncertain: the reconciler re-sends the same key
        raise outcome_unknown(CREDIT_PENDING)

    # -- steps -------------------------------------------------------------------------------

    def _load(self, aid: UUID) -> Any:
        try:
            return self.platform.events.repository.get(aid)
        except AggregateNotFoundError:
            return None

    def _prepare(
        self, command: CancelCommand, aid: UUID, body_print: str
    ) -> dict[str, Any] | _AwaitOther | tuple[Round, int]:
        """The answer of a finished action, an attempt to wait for, or the attempt to send.
        A refusal or a conflicting commit because a copy of this action was recorded
        meanwhile (here or in another process) looks again and goes by that record."""
        for _ in range(MAX_TRIES):
            action: RoundCancel | None = self._load(aid)
            if action is not None:
                if action.request["fingerprint"] != body_print:
                    raise idempotency_conflict()
                return self._known(action)
            try:
                return self._hold(command, body_print)
            except IntegrityError:
                continue
            except PlatformError:
                if self._load(aid) is None:
                    raise  # no copy of the action was recorded: the refusal stands
        raise action_in_progress()

    def _known(self, action: RoundCancel) -> dict[str, Any] | _AwaitOther | tuple[Round, int]:
        rid = round_uuid_of(action.request["round_public_id"])
        assert rid is not None
        round_: Round = self.platform.events.repository.get(rid)
        attempt = action.request["attempt"]
        state = round_.cancel_attempts.state(attempt)
        if state in (CREDITED, REFUSED):
            return self.answer(round_, attempt)
        started = round_.cancel_attempts[attempt].at
        grace = self.platform.config.service.uncertain_debit_grace_seconds
        if state == IN_FLIGHT and self.platform.clock.now() - started < grace:
            return _AwaitOther(rid, attempt)
        return round_, attempt  # its request is gone, or uncertain: the same key again

    def _hold(self, command: CancelCommand, body_print: str) -> tuple[Round, int]:
        """Check the round and record the attempt (with the hold, on a first cancel)."""
        round_ = self._own_round(command)
        opening = round_.opening
        items: list[InventoryItem] = []
        if round_.status == "settled":
            if opening["mode"] != "balance":
                raise not_cancellable("an items-mode round has no bet to credit back")
            for number in granted_item_ids(round_.settlement or {}):
                item: InventoryItem = self.platform.events.repository.get(inventory_item_id(number))
                if not item.is_open:
                    state = "held by a cash-back" if item.held_by else item.state
                    raise not_cancellable(f"its item {number} is {state}")
                items.append(item)
        elif round_.status == "held":
            if round_.cancel_attempts.under_way:
                raise not_cancellable("it is held: its cancel credit is being confirmed")
        else:
            raise not_cancellable(f"it is {round_.status}")
        operator = self.platform.directory.operators[command.operator_id]
        if not operator.config.wallet_url:
            raise no_wallet()
        now = self.platform.clock.now()
        if round_.status == "settled":
            hold = {
                "client_action_id": command.client_action_id,
                "reason": command.reason,
                "inventory_item_ids": [i.grant["inventory_item_id"] for i in items],
            }
            round_.hold_for_cancel(hold, now)
            for item in items:
                item.cancel(opening["public_id"], now)
        attempt = round_.attempt_cancel_credit(command.client_action_id, now)
        action = RoundCancel(
            {
                "operator_id": command.operator_id,
                "player_external_id": command.player_external_id,
                "client_action_id": command.client_action_id,
                "round_public_id": opening["public_id"],
                "fingerprint": body_print,
                "reason": command.reason,
                "attempt": attempt,
                "requested_at": now,
            }
        )
        self.platform.events.save(action, round_, *items)
        return round_, attempt

    def _own_round(self, command: CancelCommand) -> Round:
        """The round the path names, if it is this operator's and this player's."""
        rid = round_uuid_of(command.public_id)
        try:
            round_: Round = self.platform.events.repository.get(rid) if rid else None
        except AggregateNotFoundError:
            round_ = None
        if round_ is None or not isinstance(round_, Round):
            raise not_found("round")
        opening = round_.opening
        owner = (opening["operator_id"], opening["player_external_id"])
        if owner != (command.operator_id, command.player_external_id):
            raise not_found("round")
        return round_

    async def _await_other(self, rid: UUID, attempt: int) -> dict[str, Any]:
        """Another request sends this attempt: wait (up to the wallet timeout) for its
        recorded answer rather than send the same key alongside it."""
        deadline = anyio.current_time() + self.platform.config.service.wallet_timeout_seconds
        while anyio.current_time() < deadline:
            round_ = await in_store(self.platform.events.repository.get, rid)
            if round_.cancel_attempts.state(attempt) != IN_FLIGHT:
                return self.answer(round_, attempt)
            await asyncio.sleep(0.05)
        raise action_in_progress()

    async def _credit(self, round_: Round, attempt: int) -> dict[str, Any]:
        outcome = await send_cancel_credit(
            self.platform, self.wallet, round_, attempt, read_balance_on_refusal=True
        )
        try:
            recorded = await in_store_after_money(
                record_cancel_outcome, self.platform, round_.id, attempt, outcome
            )
        except StoreOutcomeUnknown:  # unrecorded: the reconciler re-sends the same key
            self.wake_reconciler()
            raise outcome_unknown(CREDIT_PENDING) from None
        if recorded is None:  # every try conflicted: what is recorded is not known here
            recorded = await in_store(self.platform.events.repository.get, round_.id)
        return self.answer(recorded, attempt)

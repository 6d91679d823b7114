"""Cash-back (decisions §4, §5, §8): credit the items' Credits value, each item once.

1. The request is priced at claim time (today's catalogue price and rate) and recorded
   with its items held and the credit attempt, in one commit, before the wallet is asked.
2. accepted  -> ``CashoutCredited`` + ``ItemCashedBack`` for each item, one commit;
   refused   -> ``CreditRefused`` + items released (unresolved again); the caller may
                retry the same action, which re-prices and makes the next attempt;
   uncertain -> ``CreditUncertain``; the items stay held, and the SAME key is retried by
                the reconciler (or by the caller's retry) until the wallet answers. The
                answer is 503 ``OUTCOME_UNKNOWN``: money may have moved, and a retry of
                the action (same clientActionId) answers what the wallet said.
A credit whose recording outlives the store deadline answers ``OUTCOME_UNKNOWN`` too.
Copies of an action answer from its record (``Cashouts._prepare``); a copy that meets the
attempt in flight in another request waits for that request's answer.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import anyio
from eventsourcing.application import AggregateNotFoundError
from eventsourcing.persistence import IntegrityError
from msgspec import to_builtins
from msgspec.structs import replace

from application.errors import PlatformError, WalletRefusal, outcome_unknown
from application.inventory.items import (
    check_item_ids,
    count,
    item_wire,
    load_open_items,
    recorded_items,
)
from application.inventory.views import CashoutAnswer
from application.platform import Platform
from application.rounds.actions import (
    ActionLocks,
    action_in_progress,
    fingerprint,
    idempotency_conflict,
)
from application.store.calls import (
    StoreOutcomeUnknown,
    in_store,
    in_store_after_money,
    in_store_write,
)
from application.wallet.client import Accepted, Refused, WalletClient, WalletOutcome
from application.wallet.refusals import wallet_refusal, wallet_unavailable
from domain.cashout import Cashout, CashoutStateError, cashout_id, cashout_public_id
from domain.ids import inventory_item_id
from domain.inventory import InventoryItem, ItemStateError
from domain.money import reprice
from domain.wallet_attempts import IN_FLIGHT, UNCERTAIN


@dataclass(frozen=True)
class CashoutCommand:
    operator_id: str
    player_external_id: str
    client_action_id: str
    inventory_item_ids: list[int]
    currency: str | None = None


def item_not_available(number: int) -> PlatformError:
    return PlatformError(
        "ITEM_NOT_AVAILABLE", f"inventory item {number} is not this player's or not unresolved"
    )


def cashout_answer(request: dict[str, Any], balance_after_minor: int | None) -> CashoutAnswer:
    return CashoutAnswer(
        credited_minor=request["credited_minor"],
        currency=request["currency"],
        balance_after_minor=balance_after_minor,
        items=[
            replace(item, state="cashed_back", held=False)
            for item in recorded_items(request["items"])
        ],
    )


def refused_credit_error(wallet_code: str, balance_after_minor: int | None) -> PlatformError:
    code, _, message = wallet_refusal(wallet_code, "credit")
    return WalletRefusal(code, message, balanceAfterMinor=balance_after_minor)


def _save_with_items(platform: Platform, cid: UUID, move: Any) -> bool:
    """Load the cash-back and its items, apply ``move``, save all in one commit."""
    for _ in range(5):
        cashout: Cashout = platform.events.repository.get(cid)
        items = [
            platform.events.repository.get(inventory_item_id(i["inventoryItemId"]))
            for i in cashout.request["items"]
        ]
        try:
            move(cashout, items)
        except (CashoutStateError, ItemStateError):
            return False
        try:
            platform.events.save(cashout, *items)
            return True
        except IntegrityError:
            continue
    return False


def record_credit_outcome(
    platform: Platform, cid: UUID, attempt: int, outcome: WalletOutcome
) -> None:
    """Apply a wallet answer to a cash-back (request path and reconciler alike)."""
    now = platform.clock.now()
    if isinstance(outcome, Accepted):

        def credit(cashout: Cashout, items: list[InventoryItem]) -> None:
            cashout.credit(attempt, outcome.balance_after_minor, outcome.provider_txn_ref, now)
            for item, priced in zip(items, cashout.request["items"], strict=True):
                item.cash_back(
                    cashout.request["public_id"],
                    priced["cashbackMinor"],
                    cashout.request["currency"],
                    now,
                )

        _save_with_items(platform, cid, credit)
    elif isinstance(outcome, Refused):

        def refuse(cashout: Cashout, items: list[InventoryItem]) -> None:
            cashout.refuse(attempt, outcome.error_code, outcome.balance_after_minor, now)
            for item in items:
                item.release(cashout.request["public_id"], now)

        _save_with_items(platform, cid, refuse)
    else:

        def uncertain(cashout: Cashout, _: list[InventoryItem]) -> None:
            if cashout.attempt_state(attempt) == "in_flight":
                cashout.mark_uncertain(attempt, outcome.reason, now)

        _save_with_items(platform, cid, uncertain)


async def send_credit(
    platform: Platform,
    wallet: WalletClient,
    cashout: Cashout,
    attempt: int,
    *,
    read_balance_on_refusal: bool = False,
) -> WalletOutcome:
    """``wallet.credit`` of one attempt; a caller that answers a refusal to a client asks
    for the balance to be read when the refusal has none (decisions §4)."""
    request = cashout.request
    operator = platform.directory.operators[request["operator_id"]]
    return await wallet.call(
        operator.config.wallet_url,
        operator.config.outbound_secret,
        operator.id,
        "wallet.credit",
        {
            "playerExternalId": request["player_external_id"],
            "amountMinor": request["credited_minor"],
            "currency": request["currency"],
            "idempotencyKey": cashout.attempts[attempt].key,
            "reason": "cashout",
            "inventoryItemIds": [i["inventoryItemId"] for i in request["items"]],
        },
        read_balance_on_refusal=read_balance_on_refusal,
    )


CREDIT_PENDING = "the credit is being confirmed with the wallet and the items stay held"


@dataclass(frozen=True)
class _AwaitOther:
    """The action's credit attempt is in flight in another request: wait for its answer."""

    attempt: int


class Cashouts:
    def __init__(self, platform: Platform, wallet: WalletClient, wake_reconciler: Any) -> None:
        self.platform = platform
        self.wallet = wallet
        self.wake_reconciler = wake_reconciler
        self.locks = ActionLocks()

    async def cash_out(self, command: CashoutCommand) -> CashoutAnswer:
        cid = cashout_id(command.operator_id, command.player_external_id, command.client_action_id)
        operator = self.platform.directory.operators[command.operator_id]
        body_print = fingerprint(
            "cashout", sorted(command.inventory_item_ids), command.currency or operator.base.code
        )
        async with self.locks.hold(cid):
            try:
                step = await in_store_write(self._prepare, command, cid, body_print)
            except StoreOutcomeUnknown:  # the held items and the attempt may still land
                raise outcome_unknown("the cash-back may have been recorded") from None
            if isinstance(step, CashoutAnswer):
                return step
            if isinstance(step, _AwaitOther):
                return await self._await_other(cid, step.attempt)
            cashout, attempt = step
            return await self._credit(cashout, attempt)

    def _load(self, cid: UUID) -> Cashout | None:
        try:
            return self.platform.events.repository.get(cid)
        except AggregateNotFoundError:
            return None

    def _prepare(
        self, command: CashoutCommand, cid: UUID, body_print: str
    ) -> CashoutAnswer | _AwaitOther | tuple[Cashout, int]:
        """The answer of a finished action, an attempt to wait for, or the attempt to send.

        A check that fails, or a commit that conflicts, because a copy of the action was
        recorded meanwhile (here or in another process) looks again and goes by that
        record: every copy gets the original answer, a different body 409."""
        for _ in range(3):
            existing = self._load(cid)
            if existing is not None:
                known = self._known(existing, body_print)
                if known is not None:
                    return known
            try:
                return self._attempt(command, cid, body_print, existing)
            except IntegrityError:
                continue
            except PlatformError:
                again = self._load(cid)
                if again is None or (existing is not None and again.version == existing.version):
                    raise  # no copy changed the record: the refusal stands
        raise action_in_progress()

    def _known(
        self, existing: Cashout, body_print: str
    ) -> CashoutAnswer | _AwaitOther | tuple[Cashout, int] | None:
        """What a recorded action answers; None when it needs a new attempt (refused)."""
        if existing.request["fingerprint"] != body_print:
            raise idempotency_conflict()
        if existing.status == "credited":
            return cashout_answer(existing.request, existing.outcome["balance_after_minor"])
        for attempt, entry in existing.attempts.items():
            if entry.state == IN_FLIGHT:
                grace = self.platform.config.service.uncertain_debit_grace_seconds
                if self.platform.clock.now() - entry.at < grace:
                    return _AwaitOther(attempt)
                return existing, attempt  # its request is gone: re-send the same key
            if entry.state == UNCERTAIN:
                return existing, attempt  # re-send the same key: the wallet de-duplicates it
        return None

    def _attempt(
        self, command: CashoutCommand, cid: UUID, body_print: str, existing: Cashout | None
    ) -> tuple[Cashout, int]:
        """Check, price and record the next credit attempt with the items held."""
        check_item_ids(command.inventory_item_ids, "inventoryItemIds")
        operator = self.platform.directory.operators[command.operator_id]
        if not operator.config.wallet_url:
            raise wallet_unavailable()
        currency = operator.currency(command.currency)
        items = load_open_items(
            self.platform,
            command.operator_id,
            command.player_external_id,
            command.inventory_item_ids,
            item_not_available,
        )
        counted = [count(operator, self.platform.directory.catalog, i, currency) for i in items]
        for entry in counted:
            if not entry.cashable:
                raise PlatformError(
                    "ITEM_NOT_CASHABLE",
                    f"inventory item {entry.item.grant['inventory_item_id']} has no cash-back",
                )
        public_id = cashout_public_id(cid)
        request = {
            "operator_id": operator.id,
            "player_external_id": command.player_external_id,
            "client_action_id": command.client_action_id,
            "public_id": public_id,
            "fingerprint": body_print,
            "currency": currency.code,
            "fx_rate": next(c.rate for c in operator.config.currencies if c.code == currency.code),
            "credited_minor": sum(c.value_minor for c in counted),
            "items": [
                to_builtins(
                    item_wire(
                        c.item.grant,
                        "unresolved",
                        reprice(c.item.grant["grant_value_base_minor"], operator.base, currency),
                        currency.code,
                        c.value_minor,
                        c.uncredited,
                    )
                )
                for c in counted
            ],
            "requested_at": self.platform.clock.now(),
        }
        now = self.platform.clock.now()
        cashout = existing or Cashout(request)
        attempt = cashout.attempt_credit(request, now)
        for item in items:
            item.hold_for_cashout(public_id, now)
        self.platform.events.save(cashout, *items)
        return cashout, attempt

    async def _await_other(self, cid: UUID, attempt: int) -> CashoutAnswer:
        """Another request sends this attempt: wait (up to the wallet timeout) for its
        recorded answer rather than send the same key alongside it."""
        deadline = anyio.current_time() + self.platform.config.service.wallet_timeout_seconds
        while anyio.current_time() < deadline:
            cashout = await in_store(self.platform.events.repository.get, cid)
            if cashout.attempt_state(attempt) != "in_flight":
                return self._recorded_answer(cashout, attempt)
            await asyncio.sleep(0.05)
        raise action_in_progress()

    async def _credit(self, cashout: Cashout, attempt: int) -> CashoutAnswer:
        if cashout.request["credited_minor"] == 0:
            outcome: WalletOutcome = Accepted(None, None)
        else:
            outcome = await send_credit(
                self.platform, self.wallet, cashout, attempt, read_balance_on_refusal=True
            )
        try:
            recorded = await in_store_after_money(self._record, cashout.id, attempt, outcome)
        except StoreOutcomeUnknown:  # unrecorded: the reconciler re-sends the same key
            self.wake_reconciler()
            raise outcome_unknown(CREDIT_PENDING) from None
        return self._recorded_answer(recorded, attempt)

    def _record(self, cid: UUID, attempt: int, outcome: WalletOutcome) -> Cashout:
        record_credit_outcome(self.platform, cid, attempt, outcome)
        return self.platform.events.repository.get(cid)

    def _recorded_answer(self, cashout: Cashout, attempt: int) -> CashoutAnswer:
        """The answer of an attempt as recorded: every copy answers the same bytes."""
        if cashout.status == "credited":
            return cashout_answer(cashout.request, cashout.outcome["balance_after_minor"])
        if cashout.attempt_state(attempt) == "refused":
            outcome = cashout.outcome
            raise refused_credit_error(outcome["error_code"], outcome["balance_after_minor"])
        self.wake_reconciler()  # uncertain: the reconciler re-sends the same key
        raise outcome_unknown(CREDIT_PENDING)

"""The wager saga of a balance-mode round, for any game (decisions §4, §7).

1. The action's round id is derived from (operator, player, clientActionId). A known
   action answers from its record (or 409 when the body differs) before any other check.
2. The game's checks pass and give its opening, then ``Opened`` + ``DebitAttempted`` are
   saved in one commit: the intent is durable before the wallet hears of it.
3. The wallet answers:
   accepted  -> the game settles: ``WagerDebited`` + ``RoundSettled`` + what the draw
                grants, one commit;
   refused   -> ``RoundVoided`` with the wallet's code;
   uncertain -> ``DebitUncertain``: 503 now, and the reconciler rolls the attempt back.
A later retry of an action whose last attempt was uncertain makes the next attempt, with
the next idempotency key ``{publicId}:{attempt}``.

Once the wallet accepted, the play is finished even when the store is slow: the settle
gets its own, longer deadline (``in_store_after_money``), and when even that passes, or
the store fails, the answer is 503 ``OUTCOME_UNKNOWN``, never ``SERVICE_UNAVAILABLE``:
the settle may still land (a retry then returns the round), or the attempt is rolled back
after the grace period (a retry then plays it again).

A game supplies a :class:`WagerGame`: the wallet's ``reason`` for its debits, how an
accepted debit settles (the draw and what it grants, recorded in one commit) and what a
settled round answers. Its opening record starts with :class:`~domain.round.RoundTerms`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any, Protocol
from uuid import UUID

import anyio
from eventsourcing.application import AggregateNotFoundError
from eventsourcing.persistence import IntegrityError

from application.errors import PlatformError, outcome_unknown
from application.platform import Platform
from application.rounds.actions import ActionLocks, action_in_progress, idempotency_conflict
from application.store.calls import StoreOutcomeUnknown, in_store, in_store_after_money
from application.store.sql import StoreUnavailable
from application.wallet.client import Accepted, Refused, WalletClient
from application.wallet.refusals import refused_debit_error, wallet_unavailable
from domain.round import Round, RoundTerms

DEBITED_NOT_RECORDED = "the wallet accepted the debit and the round is still being recorded"


class WagerGame(Protocol):
    """What a game gives the saga."""

    reason: str  # the ``wallet.debit`` reason, e.g. "upgrader.wager"

    def settle(self, saved: Round, attempt: int, debit: dict[str, Any]) -> Any:
        """Record the accepted ``debit`` and the round's settlement in one commit (in a
        store thread; ``saved`` is the round as this process saved it) and answer (the
        game's answer view, a struct)."""
        ...

    def answer(self, round_: Round) -> Any:
        """The answer of a round settled before (a copy of the action)."""
        ...


class WagerSaga:
    def __init__(
        self,
        platform: Platform,
        wallet: WalletClient,
        game: WagerGame,
        wake_reconciler: Any = None,
    ) -> None:
        self.platform = platform
        self.wallet = wallet
        self.game = game
        self.locks = ActionLocks()
        self.wake_reconciler = wake_reconciler or (lambda: None)

    # -- entry point ----------------------------------------------------------------------

    async def play(self, rid: UUID, body_print: str, open_round: Callable[[], RoundTerms]) -> Any:
        """Play the action ``rid``; ``open_round`` runs the game's checks and gives its
        opening (it raises the game's refusal). Answers the game's answer view."""
        async with self.locks.hold(rid):
            # A new action is the common case: open it straight away. A known one shows
            # itself as a failed check (it may have been valid when it was recorded) or
            # as a conflicting commit, and then answers from its record.
            try:
                opening = open_round()
            except PlatformError:
                existing = await in_store(self._load, rid)
                if existing is None:
                    raise
                return await self._resume(existing, body_print)
            try:
                round_, attempt = await in_store(self._open, opening)
            except IntegrityError:
                existing = await in_store(self._load, rid)
                if existing is None:  # pragma: no cover - a commit conflicts with a record
                    return await self._await_other(rid, body_print)
                return await self._resume(existing, body_print)
            return await self._debit(round_, opening, attempt)

    # -- steps ------------------------------------------------------------------------------

    def _load(self, rid: UUID) -> Round | None:
        try:
            return self.platform.events.repository.get(rid)
        except AggregateNotFoundError:
            return None

    def _open(self, opening: RoundTerms) -> tuple[Round, int]:
        round_ = Round(opening.record())
        attempt = self._attempt(round_, opening)
        self.platform.events.save(round_)
        return round_, attempt

    def _attempt(self, round_: Round, terms: RoundTerms) -> int:
        key = f"{terms.public_id}:{round_.last_attempt + 1}"
        return round_.attempt_debit(
            key, terms.wager_minor, terms.currency, self.platform.clock.now()
        )

    async def _resume(self, round_: Round, body_print: str) -> Any:
        terms = RoundTerms.of(round_.opening)
        if terms.fingerprint != body_print:
            raise idempotency_conflict()
        if round_.status == "settled":
            return self.game.answer(round_)
        if round_.status == "voided":
            raise refused_debit_error(
                terms.public_id,
                round_.voiding["error_code"],
                round_.voiding["balance_after_minor"],
            )
        in_flight = round_.in_flight_attempt
        if in_flight is not None:
            started = round_.attempts[in_flight].at
            grace = self.platform.config.service.uncertain_debit_grace_seconds
            if self.platform.clock.now() - started < grace:
                return await self._await_other(round_.id, body_print)
            await in_store(
                self._mark_uncertain,
                round_.id,
                in_flight,
                "no answer recorded within the grace period",
            )
        round_, attempt = await in_store(self._next_attempt, round_.id, terms)
        return await self._debit(round_, terms, attempt)

    def _next_attempt(self, rid: UUID, terms: RoundTerms) -> tuple[Round, int]:
        round_ = self.platform.events.repository.get(rid)
        if round_.status != "open" or round_.in_flight_attempt is not None:
            raise action_in_progress()
        attempt = self._attempt(round_, terms)
        try:
            self.platform.events.save(round_)
        except IntegrityError:
            raise action_in_progress() from None
        return round_, attempt

    async def _await_other(self, rid: UUID, body_print: str) -> Any:
        """Another process holds this action: wait (up to the wallet timeout) for its answer."""
        deadline = anyio.current_time() + self.platform.config.service.wallet_timeout_seconds
        while anyio.current_time() < deadline:
            round_ = await in_store(self._load, rid)
            if round_ is not None and round_.opening["fingerprint"] != body_print:
                raise idempotency_conflict()
            if round_ is not None and round_.status != "open":
                return await self._resume(round_, body_print)
            if round_ is not None and round_.in_flight_attempt is None:
                return await self._resume(round_, body_print)
            await asyncio.sleep(0.05)
        raise action_in_progress()

    async def _debit(self, round_: Round, terms: RoundTerms, attempt: int) -> Any:
        """Ask the wallet; ``round_`` is the aggregate as this process just saved it."""
        rid = round_.id
        operator = self.platform.directory.operators[terms.operator_id]
        key = round_.attempts[attempt].key
        outcome = await self.wallet.call(
            operator.config.wallet_url,
            operator.config.outbound_secret,
            operator.id,
            "wallet.debit",
            {
                "playerExternalId": terms.player_external_id,
                "amountMinor": terms.wager_minor,
                "currency": terms.currency,
                "idempotencyKey": key,
                "roundId": terms.public_id,
                "reason": self.game.reason,
            },
            read_balance_on_refusal=True,  # the refusal's balance is recorded with the void
        )
        if isinstance(outcome, Accepted):
            try:
                return await in_store_after_money(self._settle, round_, attempt, key, outcome)
            except StoreOutcomeUnknown:
                raise outcome_unknown(DEBITED_NOT_RECORDED) from None
            except PlatformError as exc:
                if exc.code == "SERVICE_UNAVAILABLE":  # e.g. the nonce stayed contended
                    raise outcome_unknown(DEBITED_NOT_RECORDED) from None
                raise
        if isinstance(outcome, Refused):
            if not await in_store(self._void, rid, attempt, outcome):
                # the attempt was declared uncertain meanwhile: answer what is recorded
                self.wake_reconciler()
                raise wallet_unavailable()
            raise refused_debit_error(
                terms.public_id, outcome.error_code, outcome.balance_after_minor
            )
        # unrecorded, the attempt is declared uncertain after the grace period all the same
        with contextlib.suppress(StoreUnavailable):
            await in_store(self._mark_uncertain, rid, attempt, outcome.reason)
        self.wake_reconciler()
        raise wallet_unavailable()

    def _settle(self, saved: Round, attempt: int, key: str, outcome: Accepted) -> Any:
        debit = {
            "attempt": attempt,
            "idempotency_key": key,
            "balance_after_minor": outcome.balance_after_minor,
            "provider_txn_ref": outcome.provider_txn_ref,
            "at": self.platform.clock.now(),
        }
        return self.game.settle(saved, attempt, debit)

    def _void(self, rid: UUID, attempt: int, outcome: Refused) -> bool:
        """Record the refusal; False when the attempt is no longer in flight."""

        def void(round_: Round) -> bool:
            if round_.attempt_state(attempt) != "in_flight":
                return False
            now = self.platform.clock.now()
            round_.void(attempt, outcome.error_code, outcome.balance_after_minor, now)
            return True

        found = change_round(self.platform, rid, void)
        return found is not None and found.status == "voided"

    def _mark_uncertain(self, rid: UUID, attempt: int, reason: str) -> None:
        mark_uncertain(self.platform, rid, attempt, reason)


def change_round(platform: Platform, rid: UUID, change: Callable[[Round], bool]) -> Round | None:
    """Load the round, let ``change`` move it and save it; a conflicting commit (another
    process moved the round) loads it again, up to 5 tries. ``change`` returns False to
    leave the round as it is. The round as saved or as found, None when every try
    conflicted."""
    for _ in range(5):
        round_ = platform.events.repository.get(rid)
        if not change(round_):
            return round_
        try:
            platform.events.save(round_)
            return round_
        except IntegrityError:
            continue
    return None


def mark_uncertain(platform: Platform, rid: UUID, attempt: int, reason: str) -> Round | None:
    """Declare the debit ``attempt`` uncertain if it is still in flight: the round this
    call declared it on, None when it was not in flight (or every try conflicted)."""
    declared = []

    def declare(round_: Round) -> bool:
        if round_.attempt_state(attempt) != "in_flight":
            return False
        round_.mark_uncertain(attempt, reason, platform.clock.now())
        declared.append(round_)
        return True

    saved = change_round(platform, rid, declare)
    return saved if declared and saved is declared[-1] else None

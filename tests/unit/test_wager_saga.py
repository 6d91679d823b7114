"""The wager saga without I/O: an in-memory (POPO) event store, a fake wallet port and a
fake game. Each wallet outcome leads to its recorded state and its answer."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any
from uuid import UUID

import pytest
from msgspec import to_builtins

from api.errors import status_of
from application.clock import ManualClock
from application.errors import PlatformError
from application.platform import EventStore
from application.rounds.saga import WagerSaga, change_round, mark_uncertain
from application.wallet.client import Accepted, Refused, Uncertain, WalletOutcome
from domain.ids import round_id, round_public_id
from domain.round import Round, RoundTerms


class FakeWallet:
    """The wallet port: answers from a script, remembers what it was asked."""

    def __init__(self, *outcomes: WalletOutcome) -> None:
        self.outcomes = list(outcomes)
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def call(self, url: str, secret: str, operator: str, method: str, body: dict, **_: Any):
        self.calls.append((method, body))
        return self.outcomes.pop(0)


class FakeGame:
    """A game whose settle records a fixed settlement and answers the round's state."""

    reason = "fake.wager"

    def __init__(self, platform: Any) -> None:
        self.platform = platform

    def settle(self, saved: Round, attempt: int, debit: dict[str, Any]) -> dict[str, Any]:
        saved.settle(debit, {"drawn": 7})
        self.platform.events.save(saved)
        return self.answer(saved)

    def answer(self, round_: Round) -> dict[str, Any]:
        return {"settled": round_.settlement, "balance": round_.balance_after_minor}


def _platform() -> SimpleNamespace:
    operator = SimpleNamespace(
        id="op", config=SimpleNamespace(wallet_url="http://wallet.invalid", outbound_secret="s")
    )
    return SimpleNamespace(
        events=EventStore(env={"PERSISTENCE_MODULE": "eventsourcing.popo"}),
        clock=ManualClock(),
        config=SimpleNamespace(
            service=SimpleNamespace(uncertain_debit_grace_seconds=30, wallet_timeout_seconds=1)
        ),
        directory=SimpleNamespace(operators={"op": operator}),
    )


def _terms(action: str = "a1", fingerprint: str = "body-1") -> tuple[UUID, RoundTerms]:
    rid = round_id("op", "p1", action)
    return rid, RoundTerms(
        operator_id="op",
        player_external_id="p1",
        client_action_id=action,
        public_id=round_public_id(rid),
        mode="balance",
        fingerprint=fingerprint,
        wager_minor=250,
        currency="EUR",
    )


def _saga(*outcomes: WalletOutcome) -> tuple[WagerSaga, FakeWallet, SimpleNamespace]:
    platform = _platform()
    wallet = FakeWallet(*outcomes)
    return WagerSaga(platform, wallet, FakeGame(platform)), wallet, platform  # type: ignore[arg-type]


async def test_an_accepted_debit_settles_and_a_copy_answers_the_same() -> None:
    saga, wallet, platform = _saga(Accepted(750, "t1"))
    rid, terms = _terms()
    answer = await saga.play(rid, "body-1", lambda: terms)
    assert answer == {"settled": {"drawn": 7}, "balance": 750}
    assert wallet.calls == [
        (
            "wallet.debit",
            {
                "playerExternalId": "p1",
                "amountMinor": 250,
                "currency": "EUR",
                "idempotencyKey": f"{terms.public_id}:1",
                "roundId": terms.public_id,
                "reason": "fake.wager",
            },
        )
    ]
    round_ = platform.events.repository.get(rid)
    assert (round_.status, round_.opening, round_.version) == ("settled", terms.record(), 4)

    def checks_fail() -> RoundTerms:  # a copy fails the game's checks: its record answers
        raise PlatformError("UPGRADER_WAGER_OUT_OF_RANGE", "no longer offered")

    assert await saga.play(rid, "body-1", checks_fail) == answer
    assert len(wallet.calls) == 1
    with pytest.raises(PlatformError) as conflict:
        await saga.play(rid, "body-2", checks_fail)
    assert (conflict.value.code, status_of(conflict.value)) == ("IDEMPOTENCY_CONFLICT", 409)


async def test_a_refused_debit_voids_the_round_with_the_wallets_code() -> None:
    saga, _, platform = _saga(Refused("INSUFFICIENT_FUNDS", 40))
    rid, terms = _terms()
    with pytest.raises(PlatformError) as refused:
        await saga.play(rid, "body-1", lambda: terms)
    assert (refused.value.code, status_of(refused.value), to_builtins(refused.value.extra)) == (
        "INSUFFICIENT_FUNDS",
        422,
        {"round": {"publicId": terms.public_id, "status": "voided"}, "balanceAfterMinor": 40},
    )
    round_ = platform.events.repository.get(rid)
    assert (round_.status, round_.attempt_state(1)) == ("voided", "refused")


async def test_an_uncertain_debit_answers_503_and_the_retry_makes_the_next_attempt() -> None:
    saga, wallet, platform = _saga(Uncertain("timeout"), Accepted(None, None))
    rid, terms = _terms()
    with pytest.raises(PlatformError) as unavailable:
        await saga.play(rid, "body-1", lambda: terms)
    assert (unavailable.value.code, status_of(unavailable.value)) == ("WALLET_UNAVAILABLE", 503)
    round_ = platform.events.repository.get(rid)
    assert (round_.status, round_.uncertain_attempts()) == ("open", [1])
    # the reconciler's rollback, then the player's retry of the same action
    round_.record_rollback(1, platform.clock.now())
    platform.events.save(round_)
    answer = await saga.play(rid, "body-1", lambda: terms)
    assert answer == {"settled": {"drawn": 7}, "balance": None}
    assert [body["idempotencyKey"] for _, body in wallet.calls] == [
        f"{terms.public_id}:1",
        f"{terms.public_id}:2",
    ]
    round_ = platform.events.repository.get(rid)
    assert [(n, e.state) for n, e in round_.attempts.items()] == [
        (1, "rolled_back"),
        (2, "debited"),
    ]


async def test_a_check_that_fails_for_a_new_action_records_nothing() -> None:
    saga, wallet, platform = _saga()
    rid, _ = _terms()

    def checks_fail() -> RoundTerms:
        raise PlatformError("UPGRADER_CHANCE_INVALID", "not offered")

    with pytest.raises(PlatformError) as refused:
        await saga.play(rid, "body-1", checks_fail)
    assert refused.value.code == "UPGRADER_CHANCE_INVALID"
    assert (wallet.calls, platform.events.recorder.max_notification_id()) == ([], None)


def test_mark_uncertain_declares_an_in_flight_debit_once() -> None:
    platform = _platform()
    rid, terms = _terms()
    round_ = Round(terms.record())
    round_.attempt_debit(f"{terms.public_id}:1", 250, "EUR", 1.0)
    platform.events.save(round_)
    declared = mark_uncertain(platform, rid, 1, "no answer")
    assert declared is not None
    assert (declared.uncertain_attempts(), declared.version) == ([1], 3)
    assert mark_uncertain(platform, rid, 1, "no answer") is None  # not in flight any more
    assert platform.events.repository.get(rid).version == 3


def test_change_round_leaves_a_declined_round_and_gives_up_after_five_conflicts() -> None:
    platform = _platform()
    rid, terms = _terms()
    platform.events.save(Round(terms.record()))
    found = change_round(platform, rid, lambda round_: False)
    assert (found.version, found.status) == (1, "open")
    tries = []

    def move(round_: Round) -> None:
        if round_.in_flight_attempt is None:
            round_.attempt_debit(f"{terms.public_id}:{round_.last_attempt + 1}", 1, "EUR", 1.0)
        else:
            round_.mark_uncertain(round_.in_flight_attempt, "no answer", 1.0)

    def conflicting(round_: Round) -> bool:
        tries.append(1)
        other = platform.events.repository.get(rid)  # another process moves it first
        move(other)
        platform.events.save(other)
        move(round_)
        return True

    assert change_round(platform, rid, conflicting) is None
    assert len(tries) == 5

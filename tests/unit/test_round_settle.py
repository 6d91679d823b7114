"""The shared settle: the game's draw saved with the round's settle in one commit,
drawn again when the commit conflicts (in-memory store, no I/O)."""

from __future__ import annotations

from typing import Any

import pytest

from api.errors import status_of
from application.errors import PlatformError
from application.rounds.settle import SETTLE_ATTEMPTS, Drawn, settle_with_retries
from domain.records import Record
from domain.round import Round
from tests.unit.test_wager_saga import _platform, _terms


class Drew(Record, frozen=True, kw_only=True):
    ticket: int


def _debit(attempt: int = 1) -> dict[str, Any]:
    return {
        "attempt": attempt,
        "idempotency_key": f"k:{attempt}",
        "balance_after_minor": 75,
        "provider_txn_ref": None,
        "at": 2.0,
    }


def _opened(platform: Any, action: str = "a1") -> Round:
    _, terms = _terms(action)
    round_ = Round(terms.record())
    round_.attempt_debit(f"{terms.public_id}:1", 250, "EUR", 1.0)
    platform.events.save(round_)
    return round_


def _recorded(round_: Round) -> dict[str, Any]:
    return {"recorded": round_.settlement}


def test_a_conflicting_commit_is_drawn_again_and_saved_once() -> None:
    platform = _platform()
    round_ = _opened(platform)
    stale = _opened(_platform(), "a2")  # saved elsewhere: here its version 1 is new
    platform.events.save(Round(stale.opening))  # ... and now taken, so saving it conflicts
    draws: list[int | None] = []

    def draw(loaded: Round, balance: int | None) -> Drawn:
        draws.append(balance)
        changed = [Round(stale.opening)] if len(draws) == 1 else []
        return Drawn(Drew(ticket=len(draws)), changed, {"ticket": len(draws)})

    load = lambda: platform.events.repository.get(round_.id)  # noqa: E731
    answer = settle_with_retries(platform, load, 1, _debit(), draw, _recorded)
    assert (answer, draws) == ({"ticket": 2}, [75, 75])
    settled = platform.events.repository.get(round_.id)
    assert (settled.status, settled.settlement, settled.balance_after_minor) == (
        "settled",
        {"ticket": 2},
        75,
    )
    # settled now: a later call answers the record and draws nothing
    assert settle_with_retries(platform, load, 1, _debit(), draw, _recorded) == {
        "recorded": {"ticket": 2}
    }
    assert len(draws) == 2


def test_a_debit_declared_uncertain_meanwhile_is_not_settled() -> None:
    platform = _platform()
    round_ = _opened(platform)
    round_.mark_uncertain(1, "no answer", 3.0)
    platform.events.save(round_)

    def draw(loaded: Round, balance: int | None) -> Drawn:
        raise AssertionError("no draw for a round whose debit is uncertain")

    load = lambda: platform.events.repository.get(round_.id)  # noqa: E731
    with pytest.raises(PlatformError) as unavailable:
        settle_with_retries(platform, load, 1, _debit(), draw, _recorded)
    assert (unavailable.value.code, status_of(unavailable.value)) == ("WALLET_UNAVAILABLE", 503)


def test_a_commit_that_always_conflicts_gives_up_with_503() -> None:
    platform = _platform()
    round_ = _opened(platform)
    stale = _opened(platform, "a2")
    tries = []

    def draw(loaded: Round, balance: int | None) -> Drawn:
        tries.append(1)
        return Drawn(Drew(ticket=1), [Round(stale.opening)], {})

    load = lambda: platform.events.repository.get(round_.id)  # noqa: E731
    with pytest.raises(PlatformError) as unavailable:
        settle_with_retries(platform, load, 1, _debit(), draw, _recorded)
    assert (unavailable.value.code, status_of(unavailable.value)) == ("SERVICE_UNAVAILABLE", 503)
    assert len(tries) == SETTLE_ATTEMPTS
    assert platform.events.repository.get(round_.id).status == "open"

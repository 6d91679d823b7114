"""The Round and Cashout aggregates' state rules, without a store: every move checked,
and every event replayed into the same state."""

from __future__ import annotations

from typing import Any

import pytest

from domain.cashout import Cashout, CashoutStateError
from domain.round import Round, RoundStateError
from domain.wallet_attempts import AttemptStateError

OPENING = {
    "operator_id": "op",
    "player_external_id": "p1",
    "client_action_id": "a1",
    "public_id": "r_x",
    "wager_minor": 100,
    "currency": "EUR",
}
SETTLEMENT = {"rolled_bps": 5, "is_win": True}


def _debit(attempt: int, balance: int | None = 900) -> dict[str, Any]:
    return {
        "attempt": attempt,
        "idempotency_key": f"r_x:{attempt}",
        "balance_after_minor": balance,
        "provider_txn_ref": "t1",
        "at": 3.0,
    }


def _replayed(aggregate: Any) -> Any:
    """The aggregate rebuilt from its own pending events, as a repository would."""
    copy = None
    for domain_event in aggregate.collect_events():
        copy = domain_event.mutate(copy)
    return copy


def _attempts(aggregate: Any) -> list[tuple[int, str, str, bool, int | None]]:
    return [
        (n, e.key, e.state, e.escalated, e.balance_after_minor)
        for n, e in aggregate.attempts.items()
    ]


def test_round_opens_then_settles_after_its_debit() -> None:
    round_ = Round(OPENING)
    assert round_.attempt_debit("r_x:1", 100, "EUR", 1.0) == 1
    round_.settle(_debit(1), SETTLEMENT)
    assert (round_.status, round_.settlement, round_.balance_after_minor) == (
        "settled",
        SETTLEMENT,
        900,
    )
    names = [type(e).__name__ for e in round_.pending_events]
    assert names == ["Opened", "DebitAttempted", "WagerDebited", "RoundSettled"]
    copy = _replayed(round_)
    assert (copy.status, copy.settlement, _attempts(copy)) == (
        "settled",
        SETTLEMENT,
        [(1, "r_x:1", "debited", False, 900)],
    )


def test_round_refuses_a_second_attempt_while_one_is_in_flight() -> None:
    round_ = Round(OPENING)
    round_.attempt_debit("r_x:1", 100, "EUR", 1.0)
    with pytest.raises(RoundStateError, match=r"^a debit cannot be attempted now$"):
        round_.attempt_debit("r_x:2", 100, "EUR", 1.0)


def test_round_uncertain_debit_rolled_back_then_the_retry_settles() -> None:
    round_ = Round(OPENING)
    round_.attempt_debit("r_x:1", 100, "EUR", 1.0)
    round_.mark_uncertain(1, "timeout", 2.0)
    assert (round_.in_flight_attempt, round_.uncertain_attempts()) == (None, [1])
    with pytest.raises(RoundStateError):
        round_.settle(_debit(1), SETTLEMENT)  # an uncertain debit never settles
    round_.escalate_rollback(1, 2.5)
    round_.record_rollback(1, 3.0)
    assert round_.attempt_debit("r_x:2", 100, "EUR", 4.0) == 2
    round_.settle(_debit(2, 800), SETTLEMENT)
    copy = _replayed(round_)
    assert _attempts(copy) == [
        (1, "r_x:1", "rolled_back", True, None),
        (2, "r_x:2", "debited", False, 800),
    ]
    assert (copy.status, copy.balance_after_minor, copy.last_attempt) == ("settled", 800, 2)


def test_round_voided_by_a_refused_debit_takes_no_further_move() -> None:
    round_ = Round(OPENING)
    round_.attempt_debit("r_x:1", 100, "EUR", 1.0)
    round_.void(1, "INSUFFICIENT_FUNDS", 50, 2.0)
    assert (round_.status, round_.voiding, round_.attempt_state(1)) == (
        "voided",
        {"error_code": "INSUFFICIENT_FUNDS", "balance_after_minor": 50, "at": 2.0},
        "refused",
    )
    with pytest.raises(RoundStateError, match=r"^the round is voided, not open$"):
        round_.settle(_debit(1), SETTLEMENT)
    with pytest.raises(RoundStateError):
        round_.attempt_debit("r_x:2", 100, "EUR", 3.0)
    copy = _replayed(round_)
    assert (copy.status, copy.voiding, copy.balance_after_minor) == (
        "voided",
        round_.voiding,
        None,
    )


def test_round_rollback_needs_an_uncertain_debit() -> None:
    round_ = Round(OPENING)
    round_.attempt_debit("r_x:1", 100, "EUR", 1.0)
    with pytest.raises(RoundStateError, match=r"^debit attempt 1 cannot become rolled_back"):
        round_.record_rollback(1, 2.0)
    with pytest.raises(RoundStateError, match=r"^debit attempt 1 is not uncertain$"):
        round_.escalate_rollback(1, 2.0)
    with pytest.raises(RoundStateError):
        round_.mark_uncertain(2, "never attempted", 2.0)


def test_items_round_settles_only_without_a_debit() -> None:
    fresh = Round(OPENING)
    fresh.settle_without_debit(SETTLEMENT)
    assert (fresh.status, bool(fresh.attempts)) == ("settled", False)
    debited = Round(OPENING)
    debited.attempt_debit("r_x:1", 100, "EUR", 1.0)
    with pytest.raises(RoundStateError, match=r"^only a fresh items-mode round"):
        debited.settle_without_debit(SETTLEMENT)
    with pytest.raises(RoundStateError, match=r"^the round is settled, not open$"):
        fresh.settle_without_debit(SETTLEMENT)


REQUEST = {
    "operator_id": "op",
    "player_external_id": "p1",
    "client_action_id": "c1",
    "public_id": "c_x",
    "credited_minor": 40,
}


def test_cashout_refused_then_retried_then_credited_after_uncertain() -> None:
    cashout = Cashout(REQUEST)
    assert cashout.attempt_credit(REQUEST, 1.0) == 1
    with pytest.raises(CashoutStateError, match=r"^a credit cannot be attempted now$"):
        cashout.attempt_credit(REQUEST, 1.5)
    cashout.refuse(1, "PLAYER_BLOCKED", None, 2.0)
    assert (cashout.status, cashout.outcome["error_code"]) == ("refused", "PLAYER_BLOCKED")
    repriced = {**REQUEST, "credited_minor": 39}
    assert cashout.attempt_credit(repriced, 3.0) == 2
    cashout.mark_uncertain(2, "timeout", 4.0)
    with pytest.raises(CashoutStateError):
        cashout.attempt_credit(repriced, 4.5)  # the uncertain credit is re-sent, not replaced
    cashout.credit(2, 1040, "t2", 5.0)
    with pytest.raises(CashoutStateError):
        cashout.attempt_credit(repriced, 6.0)
    copy = _replayed(cashout)
    assert _attempts(copy) == [
        (1, "c_x:1", "refused", False, None),
        (2, "c_x:2", "credited", False, None),
    ]
    assert (copy.status, copy.request, copy.outcome) == (
        "credited",
        repriced,
        {"balance_after_minor": 1040, "at": 5.0},
    )


def test_cashout_credit_of_a_finished_attempt_is_refused() -> None:
    cashout = Cashout(REQUEST)
    cashout.attempt_credit(REQUEST, 1.0)
    cashout.credit(1, None, None, 2.0)
    with pytest.raises(CashoutStateError, match=r"^credit attempt 1 cannot become refused from"):
        cashout.refuse(1, "X", None, 3.0)
    with pytest.raises(CashoutStateError):
        cashout.mark_uncertain(1, "late", 3.0)


def test_both_state_errors_are_attempt_state_errors() -> None:
    assert issubclass(RoundStateError, AttemptStateError)
    assert issubclass(CashoutStateError, AttemptStateError)

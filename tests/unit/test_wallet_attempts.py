"""The wallet-attempt state machine shared by rounds (debits) and cash-backs (credits)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.wallet_attempts import (
    CREDIT,
    CREDITED,
    DEBIT,
    DEBITED,
    IN_FLIGHT,
    REFUSED,
    ROLLED_BACK,
    UNCERTAIN,
    AttemptRules,
    AttemptStateError,
    WalletAttempts,
)


class _Refused(AttemptStateError):
    pass


def _started(rules: AttemptRules) -> WalletAttempts:
    attempts = WalletAttempts(rules, _Refused)
    attempts.begin(attempts.check_next(idle=True), "r_1:1", 10.0)
    return attempts


def test_a_fresh_machine_has_no_attempt_and_numbers_the_first_one() -> None:
    attempts = WalletAttempts(DEBIT)
    assert (bool(attempts), len(attempts), attempts.last, attempts.in_flight) == (
        False,
        0,
        0,
        None,
    )
    assert attempts.state(1) is None
    assert attempts.check_next(idle=True) == 1


def test_begin_records_the_key_and_start_time_in_flight() -> None:
    attempts = _started(DEBIT)
    entry = attempts[1]
    assert (entry.key, entry.at, entry.state, entry.escalated) == ("r_1:1", 10.0, IN_FLIGHT, False)
    assert attempts.in_flight == 1
    assert attempts.under_way is True
    assert 1 in attempts and 2 not in attempts


def test_check_next_refuses_when_the_owner_is_not_idle_with_the_owners_error() -> None:
    attempts = _started(DEBIT)
    with pytest.raises(_Refused, match=r"^a debit cannot be attempted now$"):
        attempts.check_next(idle=False)


def test_debit_path_uncertain_then_rolled_back_then_next_attempt() -> None:
    attempts = _started(DEBIT)
    attempts.check_move(1, UNCERTAIN)
    attempts.move(1, UNCERTAIN)
    assert (attempts.in_flight, attempts.in_state(UNCERTAIN)) == (None, [1])
    attempts.check_escalate(1)
    attempts.escalate(1)
    assert attempts[1].escalated is True
    attempts.check_move(1, ROLLED_BACK)
    attempts.move(1, ROLLED_BACK)
    assert attempts.under_way is False
    assert attempts.check_next(idle=True) == 2
    attempts.begin(2, "r_1:2", 20.0)
    attempts.check_move(2, DEBITED)
    attempts.move(2, DEBITED, 4500)
    assert [(n, e.state, e.balance_after_minor) for n, e in attempts.items()] == [
        (1, ROLLED_BACK, None),
        (2, DEBITED, 4500),
    ]


def test_an_uncertain_debit_is_never_accepted_or_refused() -> None:
    attempts = _started(DEBIT)
    attempts.move(1, UNCERTAIN)
    for to in (DEBITED, REFUSED):
        with pytest.raises(_Refused, match=f"^debit attempt 1 cannot become {to} from uncertain$"):
            attempts.check_move(1, to)


def test_an_uncertain_credit_is_re_sent_and_may_be_credited_or_refused() -> None:
    for to in (CREDITED, REFUSED):
        attempts = _started(CREDIT)
        attempts.move(1, UNCERTAIN)
        attempts.check_move(1, to)
        attempts.move(1, to, 7)
        assert attempts.state(1) == to
        assert attempts[1].balance_after_minor is None  # only a debit keeps its balance


def test_a_credit_is_never_rolled_back() -> None:
    attempts = _started(CREDIT)
    attempts.move(1, UNCERTAIN)
    with pytest.raises(
        _Refused, match=r"^credit attempt 1 cannot become rolled_back from uncertain$"
    ):
        attempts.check_move(1, ROLLED_BACK)


def test_moves_of_an_attempt_never_made_are_refused() -> None:
    attempts = WalletAttempts(CREDIT, _Refused)
    with pytest.raises(_Refused, match=r"^credit attempt 3 cannot become uncertain from not"):
        attempts.check_move(3, UNCERTAIN)
    with pytest.raises(_Refused, match=r"^credit attempt 3 is not uncertain$"):
        attempts.check_escalate(3)


def test_only_an_uncertain_attempt_escalates() -> None:
    attempts = _started(DEBIT)
    with pytest.raises(_Refused):
        attempts.check_escalate(1)


def test_in_flight_names_only_the_latest_attempt() -> None:
    attempts = _started(DEBIT)
    attempts.move(1, UNCERTAIN)
    attempts.begin(2, "r_1:2", 11.0)
    assert attempts.in_flight == 2
    attempts.move(2, REFUSED)
    assert (attempts.in_flight, attempts.last, attempts.under_way) == (None, 2, True)


_MOVES = st.lists(st.sampled_from([UNCERTAIN, DEBITED, CREDITED, REFUSED, ROLLED_BACK]))


@given(rules=st.sampled_from([DEBIT, CREDIT]), moves=_MOVES)
def test_every_allowed_move_follows_the_table_and_every_other_is_refused(
    rules: AttemptRules, moves: list[str]
) -> None:
    attempts = _started(rules)
    for to in moves:
        before = attempts.state(1)
        allowed = before in rules.reached_from.get(to, frozenset())
        try:
            attempts.check_move(1, to)
        except AttemptStateError:
            assert not allowed
            assert attempts.state(1) == before
            continue
        assert allowed
        attempts.move(1, to)
        assert attempts.state(1) == to
    # no state is left once reached except the ones the rules lead on from
    assert attempts.state(1) in {IN_FLIGHT, *rules.reached_from}


def test_entries_read_by_field_name_as_the_old_dicts_were() -> None:
    attempts = _started(DEBIT)
    attempts.move(1, UNCERTAIN)
    entry = attempts.get(1, {})
    assert (entry["state"], entry.get("escalated"), entry.get("unknown", "none")) == (
        UNCERTAIN,
        False,
        "none",
    )
    assert attempts.get(2, {}) == {}

"""HTTP statuses are chosen in one table (``api/errors.py`` ``STATUS_OF_CODE``), keyed by
the error code; the application raises ``PlatformError(code, message)``.

Read from the source with ``ast``: every code raised as a literal has a status in the
table, and no call site gives a status of its own (so the table stays the one answer)."""

from __future__ import annotations

import ast
from pathlib import Path

from api.errors import STATUS_OF_CODE, status_of
from application.errors import (
    PlatformError,
    WalletRefusal,
    game_disabled,
    outcome_unknown,
    validation_error,
)
from domain.signing import AuthFailure

SRC = Path(__file__).resolve().parents[2] / "src"


def _platform_error_calls() -> list[tuple[str, ast.Call]]:
    calls = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "PlatformError"
            ):
                calls.append((f"{path.relative_to(SRC)}:{node.lineno}", node))
    return calls


def test_every_literal_code_raised_has_a_status_in_the_table() -> None:
    calls = _platform_error_calls()
    codes = {
        (where, call.args[0].value)
        for where, call in calls
        if call.args and isinstance(call.args[0], ast.Constant)
    }
    assert len(codes) >= 20  # the scan finds the raise sites
    missing = sorted((where, code) for where, code in codes if code not in STATUS_OF_CODE)
    assert missing == []


def test_no_call_site_gives_a_status() -> None:
    """``PlatformError(code, message, **extra)`` only: the status is the table's."""
    given = [where for where, call in _platform_error_calls() if len(call.args) > 2]
    assert given == []


def test_the_signature_failures_are_401() -> None:
    assert {failure.value: STATUS_OF_CODE[failure.value] for failure in AuthFailure} == {
        "MISSING_HEADERS": 401,
        "INVALID_SIGNATURE": 401,
        "TIMESTAMP_SKEW": 401,
    }


def test_the_status_of_an_error_is_its_codes() -> None:
    assert status_of(validation_error("x")) == 422
    assert status_of(game_disabled()) == 403
    assert status_of(outcome_unknown("x")) == 503
    assert status_of(PlatformError("RATE_LIMITED", "too many", retry_after=1)) == 429
    assert status_of(PlatformError("PLAYER_BLOCKED", "the wallet refused")) == 403


def test_a_wallets_own_code_has_the_status_of_a_wallet_refusal_whatever_it_spells() -> None:
    statuses = {
        code: status_of(WalletRefusal(code, "the wallet refused the credit"))
        for code in ("PLAYER_BLOCKED", "INSUFFICIENT_FUNDS", "NOT_FOUND", "RATE_LIMITED", "X_1")
    }
    assert statuses == {
        "PLAYER_BLOCKED": 403,
        "INSUFFICIENT_FUNDS": 422,
        "NOT_FOUND": 422,
        "RATE_LIMITED": 422,
        "X_1": 422,
    }

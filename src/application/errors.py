"""Refusals the application answers with: a documented code, words and the documented
extras.

The API layer maps these to the interface's error body (interface 2.8) and chooses the
HTTP status by the code, in one table (``api/errors.py`` ``STATUS_OF_CODE``); nothing else
turns into a response, so every refusal is named here or in the code that raises it.
"""

from __future__ import annotations

from typing import Any


class PlatformError(Exception):
    """``PlatformError(code, message, **extra)``: the API answers the code with the status
    ``api/errors.py`` gives it (``STATUS_OF_CODE``, the one table), the message and extra
    fields in the error body."""

    def __init__(self, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.extra = extra


class WalletRefusal(PlatformError):
    """A wallet's refusal with its own error code echoed (decisions §4): its status is that
    of a wallet refusal (``api/errors.py`` ``WALLET_REFUSAL_STATUS``), whatever the code."""


def validation_error(message: str) -> PlatformError:
    return PlatformError("VALIDATION_ERROR", message)


def not_found(what: str) -> PlatformError:
    return PlatformError("NOT_FOUND", f"{what} not found")


def game_disabled(game_key: str = "upgrader") -> PlatformError:
    """GAME_DISABLED (decisions §7: an unknown or disabled game), naming the game."""
    if game_key == "upgrader":
        return PlatformError("GAME_DISABLED", "the Upgrader is not enabled for this operator")
    return PlatformError(
        "GAME_DISABLED",
        f"the game {game_key[:64]!r} is unknown or not enabled for this operator",
    )


def outcome_unknown(what: str) -> PlatformError:
    """OUTCOME_UNKNOWN (503): something may have happened (``what``), and a retry of the
    same action (same clientActionId, same body) answers what did (README, "What a 503
    means")."""
    return PlatformError(
        "OUTCOME_UNKNOWN",
        f"{what}; the outcome is not known yet: retry with the same clientActionId to learn it",
    )

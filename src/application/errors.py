"""Refusals the application answers with: a documented code, an HTTP status and words.

The API layer maps these to the interface's error body (interface 2.8); nothing else
turns into a response, so every refusal is named here or in the code that raises it.
"""

from __future__ import annotations

from typing import Any


class PlatformError(Exception):
    def __init__(self, code: str, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.code = code
        self.status = status
        self.message = message
        self.extra = extra


def validation_error(message: str) -> PlatformError:
    return PlatformError("VALIDATION_ERROR", 422, message)


def not_found(what: str) -> PlatformError:
    return PlatformError("NOT_FOUND", 404, f"{what} not found")


def game_disabled(game_key: str = "upgrader") -> PlatformError:
    """403 GAME_DISABLED (decisions §7: an unknown or disabled game), naming the game."""
    if game_key == "upgrader":
        return PlatformError("GAME_DISABLED", 403, "the Upgrader is not enabled for this operator")
    return PlatformError(
        "GAME_DISABLED",
        403,
        f"the game {game_key[:64]!r} is unknown or not enabled for this operator",
    )


def outcome_unknown(what: str) -> PlatformError:
    """503 OUTCOME_UNKNOWN: something may have happened (``what``), and a retry of the same
    action (same clientActionId, same body) answers what did (README, "What a 503 means")."""
    return PlatformError(
        "OUTCOME_UNKNOWN",
        503,
        f"{what}; the outcome is not known yet: retry with the same clientActionId to learn it",
    )

"""Player actions (a ``clientActionId`` each): their body's fingerprint, the refusals of
a reused or busy action, and one in-process lock per action, so local duplicates queue
instead of racing (across processes the store's uniqueness settles the race)."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import msgspec

from application.errors import PlatformError


def fingerprint(*parts: Any) -> str:
    """What tells two bodies of one action apart (kept with the action's record)."""
    return hashlib.sha256(msgspec.json.encode(parts)).hexdigest()[:32]


def idempotency_conflict() -> PlatformError:
    return PlatformError(
        "IDEMPOTENCY_CONFLICT", "this clientActionId was used with a different body"
    )


def action_in_progress() -> PlatformError:
    return PlatformError("ACTION_IN_PROGRESS", "this clientActionId is being played; retry shortly")


class ActionLocks:
    def __init__(self) -> None:
        self._locks: dict[Any, asyncio.Lock] = {}
        self._users: dict[Any, int] = {}

    @asynccontextmanager
    async def hold(self, key: Any) -> AsyncIterator[None]:
        lock = self._locks.setdefault(key, asyncio.Lock())
        self._users[key] = self._users.get(key, 0) + 1
        try:
            async with lock:
                yield
        finally:
            self._users[key] -= 1
            if self._users[key] == 0:
                del self._users[key]
                del self._locks[key]

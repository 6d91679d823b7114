"""One in-process lock per player action, so local duplicates queue instead of racing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any


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

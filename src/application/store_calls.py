"""Store calls made on behalf of a request: a deadline and a one-second breaker.

The event store's PostgreSQL recorder retries a failing call ten times, each waiting
for a connection, so while the database is down a request could be held for close to
a minute. Instead, a request's store call gets ``STORE_DEADLINE_SECONDS``: past it the
request answers 503 ``SERVICE_UNAVAILABLE`` and the thread is abandoned. If its write
lands later, it leaves a state the platform already recovers from: a debit intent with
no answer is rolled back by the reconciler, a late settlement is what a retry returns.

When a call fails that way and a direct connection probe (1 s) fails too, the store is
taken as down for ``BREAKER_SECONDS``: calls in that window answer 503 at once instead
of each waiting out its deadline. A slow but reachable store never trips it.
Background loops do not use this: they simply try again on their next pass.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import anyio

from application.sql import StoreUnavailable

STORE_DEADLINE_SECONDS = 3.0
BREAKER_SECONDS = 1.0
T = TypeVar("T")

_down_until = 0.0
_probe: Callable[[], bool] = lambda: True  # noqa: E731 - replaced by the platform


def set_probe(probe: Callable[[], bool]) -> None:
    """How to tell that the store answers at all (a quick direct connection)."""
    global _probe
    _probe = probe


async def in_store(fn: Callable[..., T], *args: Any) -> T:
    global _down_until
    if time.monotonic() < _down_until:
        raise StoreUnavailable("the store did not answer a moment ago")
    try:
        with anyio.fail_after(STORE_DEADLINE_SECONDS):
            return await anyio.to_thread.run_sync(fn, *args, abandon_on_cancel=True)
    except TimeoutError:
        if not await anyio.to_thread.run_sync(_probe, abandon_on_cancel=True):
            _down_until = time.monotonic() + BREAKER_SECONDS
        raise StoreUnavailable("a store call exceeded its deadline") from None
    except StoreUnavailable:
        if not await anyio.to_thread.run_sync(_probe, abandon_on_cancel=True):
            _down_until = time.monotonic() + BREAKER_SECONDS
        raise

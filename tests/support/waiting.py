"""Wait for a condition with a deadline (never a bare sleep)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_until(
    condition: Callable[[], Any],
    timeout: float = 10.0,
    interval: float = 0.05,
    tick: Callable[[], None] | None = None,
    what: str = "condition",
) -> Any:
    """Poll ``condition`` until truthy; ``tick`` runs between polls (e.g. advance a clock)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        if tick is not None:
            tick()
        time.sleep(interval)

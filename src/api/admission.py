"""Admission control: each API process bounds the plays it works on at once.

A play route (balance and items plays, on both APIs) runs behind ``admit_plays``, an
ASGI middleware that decides before anything else, even before the signature is read:
when the process already works on ``service.max_plays_in_flight`` plays, or when its
store calls queue for a thread longer than ``service.overload_store_wait_ms`` (the
store, or its connections, cannot keep up), the play is answered at once with 503
``OVERLOADED`` and ``Retry-After: 1``. Nothing was recorded, no wallet was called and no
rate limit was counted, so the client may send the same request again, with the same
``clientActionId``.

Without it an overloaded process queued every play: each waited longer, past the store
deadline (503 ``SERVICE_UNAVAILABLE`` after part of the work) or the client's patience,
and the work done for those plays was lost; goodput fell to half the peak in the issue's
run. Refusing the excess at the door costs the excess requests instead.

The default bound is the process's store threads (on PostgreSQL the event store's
connections, 4 + 12: 16 plays; on SQLite 16): a play holds at most one store call at a
time, so that many plays can keep every store thread busy; more would only wait for the
CPU or a thread, each of them longer (docs/performance.md has the figures).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import msgspec

from api.errors import STATUS_OF_CODE
from application.store import calls as store_calls

log = logging.getLogger("upgrader.api")

RETRY_AFTER_SECONDS = 1
SQLITE_BOUND = 16
_BODY = msgspec.json.encode(
    {
        "error": {
            "code": "OVERLOADED",
            "message": "the platform is at capacity; nothing was done, retry after 1 s",
        }
    }
)
_HEAD = {
    "type": "http.response.start",
    "status": STATUS_OF_CODE["OVERLOADED"],
    "headers": [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(_BODY)).encode()),
        (b"retry-after", str(RETRY_AFTER_SECONDS).encode()),
    ],
}
_REFUSAL = {"type": "http.response.body", "body": _BODY}


class Admission:
    """The plays one app works on, and whether one more may start."""

    def __init__(
        self, limit: int, store_wait_seconds: float, queue_wait: Callable[[], float]
    ) -> None:
        self.limit = limit
        self.store_wait = store_wait_seconds
        self.queue_wait = queue_wait
        self.in_flight = 0
        self.refused = {"bound": 0, "store": 0}  # refusals since start, by reason
        self._logged = 0.0

    def enter(self) -> bool:
        """Take a place for one play; False (nothing taken) when the process is full or
        its store calls queue too long."""
        if self.in_flight >= self.limit:
            return self._refuse("bound", f"{self.in_flight} plays in flight")
        if self.store_wait > 0:
            waited = self.queue_wait()
            if waited > self.store_wait:
                return self._refuse("store", f"store calls queued for {waited * 1000:.0f} ms")
        self.in_flight += 1
        return True

    def leave(self) -> None:
        self.in_flight -= 1

    def _refuse(self, reason: str, detail: str) -> bool:
        self.refused[reason] += 1
        now = time.monotonic()
        if now - self._logged >= 10:  # at most one line per 10 s
            self._logged = now
            log.warning("refusing plays (503 OVERLOADED): %s", detail)
        return False


def play_bound(configured: int, store_threads: int | None) -> int:
    """``service.max_plays_in_flight``, or the store threads (SQLite: 16)."""
    if configured > 0:
        return configured
    return store_threads or SQLITE_BOUND


def admission_for(app_config: Any, store_threads: int | None) -> Admission:
    service = app_config.service
    return Admission(
        play_bound(service.max_plays_in_flight, store_threads),
        service.overload_store_wait_ms / 1000,
        store_calls.queue_wait,
    )


def admit_plays(app: Any) -> Any:
    """Route middleware of the play routes (see the module docstring)."""

    async def admitted(scope: Any, receive: Any, send: Any) -> None:
        admission: Admission = scope["litestar_app"].state.admission
        if not admission.enter():
            await send(_HEAD)
            await send(_REFUSAL)
            return
        try:
            await app(scope, receive, send)
        finally:
            admission.leave()

    return admitted

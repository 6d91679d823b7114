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

The calls run on this module's own threads (``StoreThreads``), not anyio's: a job is
one put on a C ``SimpleQueue`` and its answer one ``call_soon_threadsafe``, where
anyio's hand-off takes a ``queue.Queue`` (a Python ``Condition``) and a cancel scope
each way; that hand-off was about a tenth of an API process's CPU under load
(docs/performance.md). The semantics are anyio's ``abandon_on_cancel=True``: a caller
that stops waiting (deadline, cancellation) leaves the thread to finish and its answer
is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from application.sql import StoreUnavailable

STORE_DEADLINE_SECONDS = 3.0
BREAKER_SECONDS = 1.0
T = TypeVar("T")

_down_until = 0.0
_probe: Callable[[], bool] = lambda: True  # noqa: E731 - replaced by the platform


class StoreThreads:
    """A fixed set of daemon threads running store calls for one event loop or more.

    Threads start on demand, up to ``size``; an idle thread waits on the queue, so a
    burst wakes as many as there are jobs. Daemon threads: an abandoned call stuck on a
    dead database never holds up the process's exit."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._jobs: queue.SimpleQueue[tuple[Any, ...]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._started = 0
        self._idle = 0

    def submit(self, fn: Callable[..., T], args: tuple[Any, ...]) -> asyncio.Future[T]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._lock:
            # _idle: threads waiting minus jobs queued that no thread has yet
            start = self._idle <= 0 and self._started < self.size
            if start:
                self._started += 1  # the new thread is this job's
            else:
                self._idle -= 1
        self._jobs.put((loop, future, fn, args))
        if start:
            threading.Thread(target=self._work, name="store call", daemon=True).start()
        return future

    def _work(self) -> None:
        jobs = self._jobs
        while True:
            job = jobs.get()
            _run(*job)
            del job  # nothing kept alive while idle
            with self._lock:
                self._idle += 1


def _run(loop: Any, future: Any, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
    if future.cancelled():  # the caller gave up before the call started
        return
    try:
        value = fn(*args)
    except BaseException as exc:  # handed to the caller
        _answer(loop, future, exc, failed=True)
    else:
        _answer(loop, future, value, failed=False)


def _answer(loop: Any, future: Any, value: Any, *, failed: bool) -> None:
    def deliver() -> None:
        if future.cancelled():
            return
        if failed:
            future.set_exception(value)
        else:
            future.set_result(value)

    with contextlib.suppress(RuntimeError):  # a loop closed meanwhile: nobody waits
        loop.call_soon_threadsafe(deliver)


_threads = StoreThreads(40)  # anyio's default; the API sets it from the pool size


def set_threads(size: int) -> None:
    """How many store calls may run at once (the event store's connections on
    PostgreSQL: more would only queue for a connection and contend for the GIL)."""
    global _threads
    if size != _threads.size:  # idle threads of the old set wait on, harmlessly
        _threads = StoreThreads(size)


def set_probe(probe: Callable[[], bool]) -> None:
    """How to tell that the store answers at all (a quick direct connection)."""
    global _probe
    _probe = probe


async def in_store(fn: Callable[..., T], *args: Any) -> T:
    global _down_until
    if time.monotonic() < _down_until:
        raise StoreUnavailable("the store did not answer a moment ago")
    try:
        async with asyncio.timeout(STORE_DEADLINE_SECONDS):
            return await _threads.submit(fn, args)
    except TimeoutError:
        if not await _threads.submit(_probe, ()):
            _down_until = time.monotonic() + BREAKER_SECONDS
        raise StoreUnavailable("a store call exceeded its deadline") from None
    except StoreUnavailable:
        if not await _threads.submit(_probe, ()):
            _down_until = time.monotonic() + BREAKER_SECONDS
        raise

"""Store calls made on behalf of a request: a deadline and a one-second breaker.

The event store's PostgreSQL recorder retries a failing call ten times, each waiting
for a connection, so while the database is down a request could be held for close to
a minute. Instead, a request's store call gets ``STORE_DEADLINE_SECONDS``: past it the
thread is abandoned and the request answers 503. Which 503 depends on what the call
may still do (the README's "What a 503 means" says it for operators):

- ``in_store``: a read, or a write whose late landing changes nothing a client must
  learn (a debit intent with no wallet call is rolled back by the reconciler and moves
  nothing): ``StoreUnavailable``, answered ``SERVICE_UNAVAILABLE``.
- ``in_store_write``: a write that is an outcome in itself (an items play, a shipping
  request, a cash-back's held items): abandoned before it started, it never runs
  (``StoreUnavailable``); abandoned once it ran, its commit may still land
  (``StoreOutcomeUnknown``, answered ``OUTCOME_UNKNOWN``).
- ``in_store_after_money``: the call that records a money move the wallet already
  accepted. It skips the breaker (it must be tried), and when a slow store still
  answers a probe it waits up to ``FINISH_DEADLINE_SECONDS``, longer than a plain
  call, so that the play finishes; past that, or when the store is down, or on any
  store failure, ``StoreOutcomeUnknown``.

When a call fails that way and a direct connection probe (1 s) fails too, the store is
taken as down for ``BREAKER_SECONDS``: calls in that window answer 503 at once instead
of each waiting out its deadline. A slow but reachable store never trips it.

These are the only ways off the event loop for store work. Request handlers (routes and
guards) use the three above; background loops (projections, reconciler, webhook
dispatcher) use ``in_background``: anyio's worker threads, apart from the request path's,
with no deadline and no breaker, since a loop whose pass fails tries again on its next.

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
import collections
import contextlib
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
from eventsourcing.persistence import InterfaceError, OperationalError

from application.store.sql import StoreUnavailable

STORE_DEADLINE_SECONDS = 3.0
# the store call after the wallet accepted (settle, record a credit): a longer wait, while
# the store answers a probe
FINISH_DEADLINE_SECONDS = 6.0
BREAKER_SECONDS = 1.0
T = TypeVar("T")

_down_until = 0.0
_probe: Callable[[], bool] = lambda: True  # noqa: E731 - replaced by the platform


_QUEUED, _RUNNING, _ABANDONED, _DONE = range(4)


class _Job:
    __slots__ = ("args", "fn", "future", "loop", "state")

    def __init__(self, loop: Any, future: Any, fn: Callable[..., Any], args: tuple) -> None:
        self.loop = loop
        self.future = future
        self.fn = fn
        self.args = args
        self.state = _QUEUED


class StoreThreads:
    """Daemon threads running store calls for one event loop or more.

    Threads start on demand, up to ``size`` at work at once; an idle thread waits on the
    queue, so a burst wakes as many as there are jobs. A call whose caller stops waiting
    (deadline, cancellation) is abandoned: its thread stops counting towards ``size`` at
    once, so later calls are not held up by it (a stalled database must not fill the
    set), and ends when the call returns. Daemon threads: an abandoned call stuck on a
    dead database never holds up the process's exit."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._started = 0  # threads counting towards size
        self._idle = 0  # threads waiting minus queued jobs no thread has taken yet
        # when each job not yet taken by a thread was submitted (oldest first): how long
        # a store call now waits for a thread (admission control reads it)
        self._waiting: collections.deque[float] = collections.deque()

    def submit(self, fn: Callable[..., T], args: tuple[Any, ...]) -> asyncio.Future[T]:
        return self.start(fn, args).future

    def start(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> _Job:
        """Queue a call; its answer comes on ``job.future`` (see ``started``)."""
        loop = asyncio.get_running_loop()
        job = _Job(loop, loop.create_future(), fn, args)
        with self._lock:
            self._waiting.append(time.monotonic())
            start = self._idle <= 0 and self._started < self.size
            if start:
                self._started += 1  # the new thread is this job's
            else:
                self._idle -= 1
        if start:
            try:
                self._spawn(idle_if_failed=0)
            except BaseException:  # the job is not queued: nor is its wait
                with self._lock, contextlib.suppress(IndexError):
                    self._waiting.pop()
                raise
        self._jobs.put(job)
        job.future.add_done_callback(lambda _, job=job: self._gave_up(job))
        return job

    def started(self, job: _Job) -> bool:
        """Whether a job whose future was cancelled had begun to run. False: a thread
        that takes it skips it (it reads the cancellation under the same lock), so the
        call never runs."""
        with self._lock:
            return job.state != _QUEUED

    def _spawn(self, *, idle_if_failed: int) -> None:
        try:
            threading.Thread(target=self._work, name="store call", daemon=True).start()
        except BaseException:  # no thread to be had: undo the count, the caller hears
            with self._lock:
                self._started -= 1
                self._idle -= idle_if_failed
            raise

    def _gave_up(self, job: _Job) -> None:
        """On the loop, once the job's future is done: if its caller gave up while it
        ran, its thread no longer counts, and a queued job gets a thread now."""
        if not job.future.cancelled():
            return
        with self._lock:
            if job.state != _RUNNING:
                return  # not started: the thread that takes it skips it
            job.state = _ABANDONED
            self._started -= 1
            start = self._idle < 0 and self._started < self.size
            if start:
                self._started += 1
                self._idle += 1  # the new thread takes one of the queued jobs
        if start:
            with contextlib.suppress(Exception):  # the queued jobs wait for a thread
                self._spawn(idle_if_failed=1)

    def queue_wait(self) -> float:
        """Seconds the oldest store call not yet taken by a thread has waited (0: none)."""
        try:
            return max(0.0, time.monotonic() - self._waiting[0])
        except IndexError:
            return 0.0

    def stop(self) -> None:
        """Let every thread end once the jobs queued before now are done."""
        with self._lock:
            count = self._started
        for _ in range(count):
            self._jobs.put(None)

    def _work(self) -> None:
        jobs = self._jobs
        lock = self._lock
        while True:
            job = jobs.get()
            if job is None:
                return
            with lock:
                if self._waiting:
                    self._waiting.popleft()
                run = not job.future.cancelled()  # else the caller gave up before it started
                if run:
                    job.state = _RUNNING
            if run:
                _run(job)
            with lock:
                if job.state == _ABANDONED:
                    return  # another thread has taken this one's place
                job.state = _DONE
                self._idle += 1
            del job  # nothing kept alive while idle


def _run(job: _Job) -> None:
    try:
        value = job.fn(*job.args)
    except BaseException as exc:  # handed to the caller
        if isinstance(exc, StopIteration):  # a Future refuses it (as anyio does)
            wrapped = RuntimeError("a store call raised StopIteration")
            wrapped.__cause__ = exc
            exc = wrapped
        _answer(job.loop, job.future, exc, failed=True)
    else:
        _answer(job.loop, job.future, value, failed=False)


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
    PostgreSQL: more would only queue for a connection and contend for the GIL). The
    API's other thread work (Litestar's sync handlers: the game page and its static
    files) keeps anyio's threads; none of it uses the store."""
    global _threads
    if size != _threads.size:
        old, _threads = _threads, StoreThreads(size)
        old.stop()


def queue_wait() -> float:
    """How long the oldest store call of this process has been waiting for a thread, in
    seconds: when the store (or its connections) cannot keep up, calls queue here."""
    return _threads.queue_wait()


def set_probe(probe: Callable[[], bool]) -> None:
    """How to tell that the store answers at all (a quick direct connection)."""
    global _probe
    _probe = probe


class StoreOutcomeUnknown(StoreUnavailable):
    """A store call that writes was given up on after it began: its commit may land."""


async def _call(fn: Callable[..., T], args: tuple[Any, ...], deadline: float) -> T:
    """The call's answer; ``StoreOutcomeUnknown`` when abandoned after it began, a plain
    ``StoreUnavailable`` when abandoned before (it never runs)."""
    job = _threads.start(fn, args)
    try:
        async with asyncio.timeout(deadline):
            return await job.future
    except TimeoutError:
        future = job.future
        if future.done() and not future.cancelled():  # answered as the deadline struck
            return future.result()
        if _threads.started(job):
            raise StoreOutcomeUnknown("a store call exceeded its deadline") from None
        raise StoreUnavailable("a store call exceeded its deadline") from None


async def in_store(fn: Callable[..., T], *args: Any) -> T:
    """A read, or a write whose late landing needs no answer (see the module docstring)."""
    try:
        return await in_store_write(fn, *args)
    except StoreOutcomeUnknown as exc:
        raise StoreUnavailable(str(exc)) from None


async def in_store_write(fn: Callable[..., T], *args: Any) -> T:
    """A write that is an outcome: ``StoreOutcomeUnknown`` when it may still land."""
    if time.monotonic() < _down_until:
        raise StoreUnavailable("the store did not answer a moment ago")
    try:
        return await _call(fn, args, STORE_DEADLINE_SECONDS)
    except StoreUnavailable:
        await _trip_if_down()
        raise


async def in_store_after_money(fn: Callable[..., T], *args: Any) -> T:
    """The store call recording what the wallet accepted: no breaker, and past the plain
    deadline it waits on, up to ``FINISH_DEADLINE_SECONDS``, while the store answers a
    probe (slow, not down: the play can still finish; a store that is down would not
    finish it, and the request is answered at the plain deadline). Whatever does not
    finish is ``StoreOutcomeUnknown``: the money has moved."""
    job = _threads.start(fn, args)
    future = job.future
    try:
        done, _ = await asyncio.wait((future,), timeout=STORE_DEADLINE_SECONDS)
        if not done and await asyncio.to_thread(_probe):
            longer = FINISH_DEADLINE_SECONDS - STORE_DEADLINE_SECONDS
            done, _ = await asyncio.wait((future,), timeout=max(0.0, longer))
    except BaseException:  # the caller was cancelled: the call is abandoned
        future.cancel()
        raise
    if not done:
        future.cancel()
        raise StoreOutcomeUnknown("recording what the wallet accepted exceeded its deadline")
    try:
        return future.result()
    except (StoreUnavailable, OperationalError, InterfaceError) as exc:
        raise StoreOutcomeUnknown(f"recording failed: {type(exc).__name__}") from exc


async def _trip_if_down() -> None:
    """The probe, on asyncio's default executor: never queued behind store calls."""
    global _down_until
    if not await asyncio.to_thread(_probe):
        _down_until = time.monotonic() + BREAKER_SECONDS


async def in_background(fn: Callable[..., T], *args: Any) -> T:
    """A background loop's store work (see the module docstring): on anyio's worker
    threads, so a loop's pass never waits behind plays for a store thread nor counts in
    admission control's queue wait; no deadline, no breaker."""
    return await anyio.to_thread.run_sync(fn, *args)

"""The store-call threads (application/store/calls.py): answers, errors, the thread
limit, the deadline that abandons a call, a call given up before it started, and what
each kind of store call answers when it is abandoned."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from application.store import calls as store_calls
from application.store.calls import StoreOutcomeUnknown, StoreThreads
from application.store.sql import StoreUnavailable


class Boom(Exception):
    pass


async def test_answers_and_errors_come_back_to_the_caller() -> None:
    threads = StoreThreads(2)
    assert await threads.submit(lambda a, b: a * b, (6, 7)) == 42

    def fails() -> None:
        raise Boom("no")

    with pytest.raises(Boom, match="no"):
        await threads.submit(fails, ())
    # the thread that raised serves the next call
    assert await threads.submit(threading.current_thread, ()) is not threading.current_thread()


async def test_no_more_calls_run_at_once_than_threads() -> None:
    threads = StoreThreads(3)
    lock = threading.Lock()
    running = 0
    most = 0
    names: set[str] = set()

    def call(i: int) -> int:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
            names.add(threading.current_thread().name + str(threading.get_ident()))
        time.sleep(0.02)
        with lock:
            running -= 1
        return i * 10

    answers = await asyncio.gather(*(threads.submit(call, (i,)) for i in range(12)))
    assert answers == [i * 10 for i in range(12)]
    assert most == 3
    assert len(names) == 3


async def test_a_call_past_its_deadline_is_abandoned_and_finishes_alone(monkeypatch) -> None:
    monkeypatch.setattr(store_calls, "STORE_DEADLINE_SECONDS", 0.1)
    monkeypatch.setattr(store_calls, "_probe", lambda: True)  # the store answers: no breaker
    finished = threading.Event()

    def slow() -> str:
        time.sleep(1.5)
        finished.set()
        return "late"

    # the caller is answered at its 0.1 s deadline, long before the call ends (the margin
    # is wide: a loaded machine delays the answer, it must still come well before 1.5 s)
    started = time.monotonic()
    with pytest.raises(StoreUnavailable, match="exceeded its deadline"):
        await store_calls.in_store(slow)
    assert time.monotonic() - started < 1.0
    assert not finished.is_set()
    assert await asyncio.to_thread(finished.wait, 5.0) is True
    assert await store_calls.in_store(lambda: "next") == "next"


async def test_a_call_given_up_before_it_started_never_runs() -> None:
    threads = StoreThreads(1)
    release = threading.Event()
    ran: list[str] = []
    first = threads.submit(lambda: release.wait(2.0), ())
    second = threads.submit(ran.append, ("second",))
    second.cancel()
    release.set()
    assert await first is True
    assert await threads.submit(ran.append, ("third",)) is None
    assert ran == ["third"]


async def test_abandoned_calls_give_their_place_to_the_next_ones() -> None:
    """A stalled store must not fill the set: once their callers gave up, two stuck calls
    no longer hold the two threads, and the next call runs at once (and at most two calls
    whose callers still wait run at a time)."""
    threads = StoreThreads(2)
    release = threading.Event()
    for _ in range(2):
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.05):
                await threads.submit(release.wait, (5.0,))
    started = time.monotonic()
    assert await threads.submit(lambda: "next", ()) == "next"
    assert time.monotonic() - started < 2.0  # far below the 5 s the call would take

    lock = threading.Lock()
    running = most = 0

    def call() -> None:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.02)
        with lock:
            running -= 1

    await asyncio.gather(*(threads.submit(call, ()) for _ in range(8)))
    assert most == 2
    release.set()


async def test_the_deadline_holds_while_every_thread_is_stuck(monkeypatch) -> None:
    """Two requests whose store calls hang each answer 503 at their deadline, the probe
    included (it does not queue behind the stuck calls), and the calls after them run."""
    monkeypatch.setattr(store_calls, "_threads", StoreThreads(2))
    monkeypatch.setattr(store_calls, "STORE_DEADLINE_SECONDS", 0.1)
    monkeypatch.setattr(store_calls, "_probe", lambda: True)  # slow, not down: no breaker
    release = threading.Event()

    async def timed() -> float:
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match="exceeded its deadline"):
            await store_calls.in_store(release.wait, 5.0)
        return time.monotonic() - started

    waits = await asyncio.gather(timed(), timed())
    assert all(wait < 2.0 for wait in waits), waits  # not the 5 s wait
    assert await store_calls.in_store(lambda: 3) == 3
    release.set()


async def test_stop_iteration_reaches_the_caller_as_an_error_at_once() -> None:
    threads = StoreThreads(1)
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="StopIteration"):
        async with asyncio.timeout(2.0):  # a future that never resolves fails, not hangs
            await threads.submit(next, (iter(()),))
    assert time.monotonic() - started < 1.0  # at once, not at the 2 s timeout


async def test_stop_ends_the_threads_once_their_jobs_are_done() -> None:
    threads = StoreThreads(3)
    gate = threading.Barrier(3, timeout=2.0)
    workers = await asyncio.gather(
        *(threads.submit(lambda: (gate.wait(), threading.current_thread())[1], ()) for _ in "abc")
    )
    assert len(set(workers)) == 3
    threads.stop()
    for worker in workers:
        await asyncio.to_thread(worker.join, 2.0)
    assert [worker.is_alive() for worker in workers] == [False, False, False]


async def test_a_write_abandoned_after_it_began_may_land_one_never_begun_never_runs(
    monkeypatch,
) -> None:
    """``in_store_write`` tells the two apart: a call that began may still commit
    (StoreOutcomeUnknown); a call still queued at the deadline never runs (a plain
    StoreUnavailable). ``in_store`` answers both as StoreUnavailable."""
    threads = StoreThreads(1)
    monkeypatch.setattr(store_calls, "_threads", threads)
    monkeypatch.setattr(store_calls, "STORE_DEADLINE_SECONDS", 0.1)
    monkeypatch.setattr(store_calls, "_probe", lambda: True)
    release = threading.Event()
    ran: list[str] = []

    def write(name: str) -> None:
        ran.append(name)
        release.wait(5.0)

    holder = threads.submit(release.wait, (5.0,))  # the one thread, for a caller that waits
    with pytest.raises(StoreUnavailable) as queued:
        await store_calls.in_store_write(write, "queued")
    assert type(queued.value) is StoreUnavailable
    release.set()
    assert await holder is True
    release.clear()

    with pytest.raises(StoreOutcomeUnknown):
        await store_calls.in_store_write(write, "began")
    with pytest.raises(StoreUnavailable) as read:
        await store_calls.in_store(write, "read")
    assert type(read.value) is StoreUnavailable
    release.set()
    assert await store_calls.in_store_write(lambda: "next") == "next"
    assert ran == ["began", "read"]


async def test_the_call_after_money_skips_the_breaker_and_waits_on_for_a_slow_store(
    monkeypatch,
) -> None:
    monkeypatch.setattr(store_calls, "STORE_DEADLINE_SECONDS", 0.05)
    monkeypatch.setattr(store_calls, "FINISH_DEADLINE_SECONDS", 1.0)
    monkeypatch.setattr(store_calls, "_probe", lambda: True)  # slow, not down
    monkeypatch.setattr(store_calls, "_down_until", time.monotonic() + 60)  # breaker open
    with pytest.raises(StoreUnavailable, match="a moment ago"):
        await store_calls.in_store(lambda: "read")
    # slower than the plain deadline, within the longer one: answered
    slow = lambda: time.sleep(0.2) or "settled"  # noqa: E731
    assert await store_calls.in_store_after_money(slow) == "settled"

    def fails() -> None:
        raise StoreUnavailable("connection lost")

    with pytest.raises(StoreOutcomeUnknown, match="StoreUnavailable"):
        await store_calls.in_store_after_money(fails)

    release = threading.Event()
    monkeypatch.setattr(store_calls, "FINISH_DEADLINE_SECONDS", 0.15)
    started = time.monotonic()
    with pytest.raises(StoreOutcomeUnknown, match="exceeded"):
        await store_calls.in_store_after_money(release.wait, 5.0)
    assert 0.15 <= time.monotonic() - started < 2.0  # far below the 5 s the call would take
    # a store that does not answer the probe is down: no longer wait than the plain one
    monkeypatch.setattr(store_calls, "_probe", lambda: False)
    monkeypatch.setattr(store_calls, "FINISH_DEADLINE_SECONDS", 5.0)
    started = time.monotonic()
    with pytest.raises(StoreOutcomeUnknown):
        await store_calls.in_store_after_money(release.wait, 5.0)
    assert time.monotonic() - started < 2.0  # far below the 5 s the call would take
    release.set()

"""The store-call threads (application/store_calls.py): answers, errors, the thread
limit, the deadline that abandons a call, and a call given up before it started."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from application import store_calls
from application.sql import StoreUnavailable
from application.store_calls import StoreThreads


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
        time.sleep(0.3)
        finished.set()
        return "late"

    started = time.monotonic()
    with pytest.raises(StoreUnavailable, match="exceeded its deadline"):
        await store_calls.in_store(slow)
    assert time.monotonic() - started < 0.29
    assert not finished.is_set()
    assert await asyncio.to_thread(finished.wait, 2.0) is True
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

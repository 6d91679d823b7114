"""One way off the event loop for store work (issue 16): ``application/store/calls.py``.

Request handlers reach the store through ``in_store``/``in_store_write``/
``in_store_after_money`` (a deadline, the breaker, the 503 that says what happened);
background loops through ``in_background``. No route runs as a sync handler on Litestar's
thread pool, and nothing else hands work to a thread: read from the source."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
HAND_OFF = re.compile(r"to_thread\.run_sync|asyncio\.to_thread|run_in_executor|sync_to_thread=True")
OWNER = "application/store/calls.py"


def test_only_store_calls_hands_work_to_a_thread() -> None:
    found = {
        str(path.relative_to(SRC)): len(HAND_OFF.findall(path.read_text(encoding="utf-8")))
        for path in SRC.rglob("*.py")
    }
    assert {path: n for path, n in found.items() if n} == {OWNER: 3}  # in_background, probes


def test_the_background_loops_use_in_background() -> None:
    for name in (
        "projections/reconciler.py",
        "projections/dispatcher.py",
        "entrypoints/runtime.py",
    ):
        text = (SRC / name).read_text(encoding="utf-8")
        assert "await in_background(" in text, name

"""serve --workers N keeps its background worker child alive (real child processes)."""

from __future__ import annotations

import sys

from entrypoints.cli_serve import WorkerSupervisor
from tests.support.waiting import wait_until


def test_a_dead_worker_child_is_started_again() -> None:
    supervisor = WorkerSupervisor([sys.executable, "-c", "import time; time.sleep(0.2)"])
    supervisor.start()
    try:
        wait_until(lambda: supervisor.restarts >= 2, timeout=15, what="two restarts")
    finally:
        supervisor.stop()
    assert supervisor.restarts >= 2


def test_stopping_terminates_a_running_child_and_starts_no_other() -> None:
    supervisor = WorkerSupervisor([sys.executable, "-c", "import time; time.sleep(60)"])
    supervisor.start()
    child = supervisor.process
    assert child is not None and child.poll() is None
    supervisor.stop()
    assert child.poll() is not None
    assert supervisor.process is child
    assert supervisor.restarts == 0

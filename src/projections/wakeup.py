"""Wake the projection loop when the event log grows, instead of waiting for its poll.

On PostgreSQL eventsourcing's recorder sends ``NOTIFY <events table>`` in every insert;
``NotifyListener`` LISTENs on a dedicated autocommit connection in a thread and calls
``on_notify`` for each (and once after every (re)connect, in case one was missed while it
was away). When the connection fails it retries every second; the loop's polling interval
stays the fallback. SQLite has no such channel: the loop polls.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger("upgrader.projections")


class NotifyListener:
    def __init__(
        self,
        conninfo: str,
        channel: str,
        on_notify: Callable[[], None],
        poll_seconds: float = 0.25,
    ) -> None:
        self.conninfo = conninfo
        self.channel = channel
        self.on_notify = on_notify
        self.poll_seconds = poll_seconds  # how often the thread checks for stop()
        self.listening = threading.Event()  # set while LISTEN is active
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="notify-listener", daemon=True)

    def start(self) -> NotifyListener:
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        import psycopg
        from psycopg import sql

        while not self._stop.is_set():
            try:
                with psycopg.connect(self.conninfo, autocommit=True, connect_timeout=2) as conn:
                    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
                    self.listening.set()
                    self.on_notify()
                    while not self._stop.is_set():
                        for _ in conn.notifies(timeout=self.poll_seconds, stop_after=1):
                            self.on_notify()
            except Exception as exc:  # keep listening; polling covers the gap
                log.warning("projection wake-up listener: %s; retrying", type(exc).__name__)
                self._stop.wait(1.0)
            finally:
                self.listening.clear()

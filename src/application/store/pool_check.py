"""Checking a pooled PostgreSQL connection only when it may have gone stale.

Both pools (ours and the event store's) used to check every connection on every
checkout with an empty query: a round trip, and a few thread switches, for each of the
half dozen checkouts of a play. A connection that answered less than ``RECENT_SECONDS``
ago is now handed out unchecked; an older one is checked as before, so after a database
restart the pool still drops the dead connections it had. A connection that dies within
that second fails its one call (503, or the event store's own retry), as a call already
in flight at the restart would.
"""

from __future__ import annotations

import time
import weakref
from typing import Any

import psycopg_pool

RECENT_SECONDS = 1.0
_checked: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()


def check_unless_recent(conn: Any) -> None:
    now = time.monotonic()
    last = _checked.get(conn)
    if last is None or now - last >= RECENT_SECONDS:
        psycopg_pool.ConnectionPool.check_connection(conn)
    _checked[conn] = now

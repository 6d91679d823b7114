"""Tamper evidence: a hash chain over the whole event log, kept by a projection.

Each stored event (notification) gets a link, kept as lowercase hex; the link rule
(``chain_link``, the genesis link, the UTC day) is in ``domain/hash_chain.py``.

``event_chain`` has one row per chained event (position = notification id);
``chain_heads`` has, per UTC day of the events' own timestamps, the last link of that day
(the position and link an operator stores outside the platform, and ``upgrader audit
--expect-head`` checks later). ``upgrader audit`` recomputes the chain from the log and
names the first event whose link does not match, and any position the chain has that the
log lost (a deleted event).

A rebuild (``upgrader projections rebuild event_chain``) recomputes the chain from the
log as it is *now*, so it also re-chains a tampered log: rebuild only after an audit has
passed. The daily heads an operator stored outside the platform still catch a rewrite.
"""

from __future__ import annotations

import bisect
from typing import Any
from uuid import UUID

from application.audit.chain import has_chain
from application.store.sql import execute_in_order
from domain.hash_chain import GENESIS, notification_link, utc_day


class _EveryTopic(frozenset):
    """A topic set that contains every topic: the chain covers every stored event."""

    def __contains__(self, topic: object) -> bool:
        return True


class HashChain:
    """Projection ``event_chain``: one link per stored event, in notification order.

    The runner hands over decoded events; the link needs the stored bytes, so the
    projection reads the raw notifications of the batch from the recorder (one query per
    batch) and chains every notification between the last chained position and the one
    it is called for.
    """

    name = "event_chain"
    topics: frozenset[str] = _EveryTopic()
    schema = [
        """CREATE TABLE IF NOT EXISTS event_chain (
            position BIGINT PRIMARY KEY,
            link TEXT NOT NULL,
            originator_id TEXT NOT NULL,
            originator_version BIGINT NOT NULL,
            topic TEXT NOT NULL,
            day TEXT NOT NULL)""",
        """CREATE TABLE IF NOT EXISTS chain_heads (
            day TEXT PRIMARY KEY,
            position BIGINT NOT NULL,
            link TEXT NOT NULL,
            events BIGINT NOT NULL)""",
    ]

    def __init__(self, recorder: Any, fetch_size: int = 500) -> None:
        self.recorder = recorder
        self.fetch_size = fetch_size
        self._cur: Any = None
        self._last: tuple[int, bytes] = (0, GENESIS)
        self._forget()

    def _forget(self) -> None:
        self._raw: list[Any] = []
        self._ids: list[int] = []
        self._from, self._to = 1, 0

    def process(self, cur: Any, event: Any, position: int) -> None:
        if cur is not self._cur:  # a new transaction: re-read where the chain ends
            self._cur = cur
            self._last = last_link(cur)
            self._forget()
        last_position, previous = self._last
        if position <= last_position:
            return  # already chained
        day = utc_day(event.timestamp)
        for notification in self._between(last_position, position):
            link = notification_link(previous, notification)
            originator = notification.originator_id
            cur.execute(
                "INSERT INTO event_chain (position, link, originator_id, originator_version, "
                "topic, day) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    notification.id,
                    link.hex(),
                    originator.hex if isinstance(originator, UUID) else str(originator),
                    notification.originator_version,
                    notification.topic,
                    day,
                ),
            )
            cur.execute(
                "INSERT INTO chain_heads (day, position, link, events) VALUES (?, ?, ?, 1) "
                "ON CONFLICT (day) DO UPDATE SET position = excluded.position, "
                "link = excluded.link, events = chain_heads.events + 1 "
                "WHERE chain_heads.position < excluded.position",
                (day, notification.id, link.hex()),
            )
            previous = link
        self._last = (position, previous)

    def process_batch(self, cur: Any, items: list[Any], after: int) -> None:
        """The links of a whole batch computed here, written with one ``executemany``,
        and one ``chain_heads`` upsert per UTC day of the batch (its last link and how
        many events it added), not one per event. Same rows as ``process`` per item."""
        last_position, previous = last_link(cur)
        if last_position < after:
            # the chain ends before the tracking position (not reached by the runner):
            # ``process`` fills the gap from the recorder
            for item in items:
                self.process(cur, item.event, item.position)
            return
        self._cur = None  # ``process`` re-reads the chain's end after this
        links: list[tuple[Any, ...]] = []
        heads: dict[str, list[Any]] = {}
        for item in items:
            if item.position <= last_position:
                continue  # already chained
            notification = item.notification
            link = notification_link(previous, notification)
            text = link.hex()
            day = utc_day(item.event.timestamp)
            originator = notification.originator_id
            links.append(
                (
                    notification.id,
                    text,
                    originator.hex if isinstance(originator, UUID) else str(originator),
                    notification.originator_version,
                    notification.topic,
                    day,
                )
            )
            head = heads.get(day)
            if head is None:
                heads[day] = [day, notification.id, text, 1]
            else:
                head[1], head[2], head[3] = notification.id, text, head[3] + 1
            previous = link
        if links and getattr(cur, "pipeline", None) is not None:
            # PostgreSQL: the batch's links as six arrays (binary) in one prepared statement
            cur.execute(_LINKS_UNNEST, [list(column) for column in zip(*links, strict=True)])
            links = []
        execute_in_order(
            cur,
            [(_LINK, row) for row in links] + [(_HEAD, tuple(head)) for head in heads.values()],
        )

    def _between(self, after: int, upto: int) -> list[Any]:
        """The stored notifications with ``after < id <= upto``, in order (read ahead)."""
        if not (self._from <= after + 1 and upto <= self._to):
            batch = self.recorder.select_notifications(after + 1, self.fetch_size)
            if not batch or batch[-1].id < upto:  # unusual: the range is longer than a batch
                batch = self.recorder.select_notifications(after + 1, upto - after, stop=upto)
            self._raw = list(batch)
            self._ids = [n.id for n in self._raw]
            self._from = after + 1
            self._to = max(upto, self._ids[-1] if self._ids else upto)
        low = bisect.bisect_right(self._ids, after)
        high = bisect.bisect_right(self._ids, upto)
        return self._raw[low:high]


_LINK = (
    "INSERT INTO event_chain (position, link, originator_id, originator_version, topic, day) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)
_LINKS_UNNEST = (
    "INSERT INTO event_chain (position, link, originator_id, originator_version, topic, day) "
    "SELECT * FROM unnest(%b::bigint[], %b::text[], %b::text[], %b::bigint[], %b::text[], "
    "%b::text[])"
)
_HEAD = (
    "INSERT INTO chain_heads (day, position, link, events) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (day) DO UPDATE SET position = excluded.position, "
    "link = excluded.link, events = chain_heads.events + excluded.events "
    "WHERE chain_heads.position < excluded.position"
)


def last_link(cur: Any) -> tuple[int, bytes]:
    """(position, link) where the stored chain ends; (0, GENESIS) when it is empty."""
    cur.execute("SELECT position, link FROM event_chain ORDER BY position DESC LIMIT 1")
    row = cur.fetchone()
    if row is None:
        return 0, GENESIS
    return int(row[0]), bytes.fromhex(row[1])


def stored_head(db: Any, day: str) -> tuple[int, str, int] | None:
    """(position, link, events) of ``chain_heads`` for a UTC day, or None."""
    if not has_chain(db):
        return None
    with db.transaction() as cur:
        cur.execute("SELECT position, link, events FROM chain_heads WHERE day = ?", (day,))
        row = cur.fetchone()
    return None if row is None else (int(row[0]), row[1], int(row[2]))

"""Tamper evidence: a hash chain over the whole event log, kept by a projection.

Each stored event (notification) ``n`` gets a link::

    link(n) = sha256( link(previous) || id || originator_id || version || len(topic) || topic
                      || state )

with ``link(previous)`` the 32 raw bytes of the previous link (32 zero bytes before the
first event), ``id`` the notification id and ``version`` the originator version as 8-byte
big-endian signed integers, ``originator_id`` the 16 bytes of the aggregate's UUID,
``len(topic)`` a 4-byte big-endian length, ``topic`` UTF-8 and ``state`` the event's stored
bytes exactly as the store holds them. The link is kept as lowercase hex.

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
import hashlib
import struct
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from application.sql import execute_in_order

GENESIS = bytes(32)
_FIXED = struct.Struct(">q16sqI")


def chain_link(
    previous: bytes, position: int, originator_id: UUID, version: int, topic: str, state: bytes
) -> bytes:
    """The 32-byte link of one stored event after ``previous``."""
    topic_bytes = topic.encode("utf-8")
    digest = hashlib.sha256(previous)
    digest.update(_FIXED.pack(position, originator_id.bytes, version, len(topic_bytes)))
    digest.update(topic_bytes)
    digest.update(bytes(state))
    return digest.digest()


def notification_link(previous: bytes, notification: Any) -> bytes:
    originator = notification.originator_id
    if not isinstance(originator, UUID):
        originator = UUID(str(originator))
    return chain_link(
        previous,
        notification.id,
        originator,
        notification.originator_version,
        notification.topic,
        notification.state,
    )


def utc_day(moment: datetime | float) -> str:
    if isinstance(moment, datetime):
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.astimezone(UTC).strftime("%Y-%m-%d")
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%d")


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


def has_chain(db: Any) -> bool:
    """Whether the ``event_chain`` table exists (the projection has run at least once)."""
    with db.transaction() as cur:
        if db.dialect == "sqlite":
            cur.execute(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'event_chain'"
            )
            return cur.fetchone()[0] > 0
        cur.execute("SELECT to_regclass('event_chain') IS NOT NULL")
        return bool(cur.fetchone()[0])


def stored_head(db: Any, day: str) -> tuple[int, str, int] | None:
    """(position, link, events) of ``chain_heads`` for a UTC day, or None."""
    if not has_chain(db):
        return None
    with db.transaction() as cur:
        cur.execute("SELECT position, link, events FROM chain_heads WHERE day = ?", (day,))
        row = cur.fetchone()
    return None if row is None else (int(row[0]), row[1], int(row[2]))

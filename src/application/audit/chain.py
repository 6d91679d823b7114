"""Recomputing the event log's hash chain against the stored one (``event_chain``).

Two chains are recomputed side by side:

* the *pure* chain, from the genesis link over the log as it is now: what an operator's
  stored daily head (``--expect-head POSITION:LINK``) is compared with;
* a *resynchronised* chain, which after every stored row continues from the stored link,
  so that every changed event is named on its own (not only the first), and a deleted
  event does not make all later links differ.

The stored chain may end before the log does (the projection lags, or the tail was
written after the copy was taken): those events are counted as unchained, not reported.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from eventsourcing.application import Application

from domain.hash_chain import GENESIS, notification_link, utc_day

# the fixed part of a link's input, as domain/hash_chain.py defines it:
# position, originator id (16 bytes), version, len(topic)
_pack = struct.Struct(">q16sqI").pack
_sha256 = hashlib.sha256


@dataclass
class ChainRow:
    position: int
    link: bytes
    originator_id: str
    originator_version: int
    topic: str


@dataclass
class ChainFinding:
    kind: str
    position: int
    message: str


@dataclass
class ChainVerifier:
    db: Any
    expected_heads: dict[int, str] = field(default_factory=dict)
    fetch_size: int = 2000
    available: bool = False
    end: int = 0
    links_checked: int = 0
    unchained: int = 0
    findings: list[ChainFinding] = field(default_factory=list)
    heads_checked: int = 0

    def __post_init__(self) -> None:
        # the stored rows not yet matched: a fetched page and the index of the next one
        # rows as tuples (position, link, originator_id, originator_version, topic)
        self._page: list[tuple[int, bytes, str, int, str]] = []
        self._next = 0
        self._after = 0
        self._exhausted = False
        self._pure = GENESIS
        self._resync = GENESIS
        self._seen_heads: set[int] = set()
        self._topics: dict[str, bytes] = {}
        if self.db is not None and has_chain(self.db):
            self.available = True
            with self.db.transaction() as cur:
                cur.execute("SELECT MAX(position) FROM event_chain")
                row = cur.fetchone()
            self.end = int(row[0]) if row and row[0] is not None else 0

    def _peek(self) -> tuple[int, bytes, str, int, str] | None:
        if self._next >= len(self._page) and not self._exhausted:
            with self.db.transaction() as cur:
                cur.execute(
                    "SELECT position, link, originator_id, originator_version, topic "
                    "FROM event_chain WHERE position > ? ORDER BY position LIMIT ?",
                    (self._after, self.fetch_size),
                )
                fetched = cur.fetchall()
            if not fetched:
                self._exhausted = True
            self._page = [
                (int(position), bytes.fromhex(link), originator, int(version), topic)
                for position, link, originator, version, topic in fetched
            ]
            self._next = 0
            if fetched:
                self._after = int(fetched[-1][0])
        return self._page[self._next] if self._next < len(self._page) else None

    def _deleted(self, stored: tuple[int, bytes, str, int, str]) -> None:
        row = ChainRow(*stored)
        self.findings.append(
            ChainFinding(
                "event_deleted",
                row.position,
                f"event {row.position} ({row.topic} of {row.originator_id} version "
                f"{row.originator_version}) is in the hash chain but no longer in the log",
            )
        )

    def _link(self, previous: bytes, notification: Any) -> bytes:
        """``projections.hash_chain.notification_link``, with the topic's bytes remembered."""
        topic = notification.topic
        topic_bytes = self._topics.get(topic)
        if topic_bytes is None:
            topic_bytes = self._topics[topic] = topic.encode("utf-8")
        originator = notification.originator_id
        if type(originator) is not UUID:
            originator = UUID(str(originator))
        fixed = _pack(
            notification.id,
            originator.int.to_bytes(16, "big"),  # UUID.bytes, without the property call
            notification.originator_version,
            len(topic_bytes),
        )
        return _sha256(b"".join((previous, fixed, topic_bytes, notification.state))).digest()

    def step(self, notification: Any) -> None:
        previous = self._pure
        position = notification.id
        pure = self._pure = self._link(previous, notification)
        if self.expected_heads:
            expected = self.expected_heads.get(position)
            if expected is not None:
                self._seen_heads.add(position)
                self.heads_checked += 1
                if pure.hex() != expected.lower():
                    self.findings.append(
                        ChainFinding(
                            "chain_head",
                            position,
                            f"the chain recomputed from the log gives {pure.hex()} at event "
                            f"{position}, the stored head says {expected.lower()}",
                        )
                    )
        if not self.available:
            return
        page, index = self._page, self._next
        row = page[index] if index < len(page) else self._peek()
        while row is not None and row[0] < position:
            self._deleted(row)
            self._resync = row[1]
            self._next += 1
            row = self._peek()
        if row is None or position > self.end:
            self.unchained += 1
            return
        if row[0] > position:
            self.findings.append(
                ChainFinding(
                    "event_inserted",
                    position,
                    f"event {position} ({notification.topic} of "
                    f"{_hex(notification.originator_id)} version "
                    f"{notification.originator_version}) is not in the hash chain, "
                    f"which covers events up to {self.end}",
                )
            )
            return
        # the resynchronised chain equals the pure one until the first divergence
        resync = self._resync
        link = pure if resync == previous else self._link(resync, notification)
        if link != row[1]:
            self.findings.append(
                ChainFinding(
                    "chain_mismatch",
                    position,
                    f"event {position} ({notification.topic} of "
                    f"{_hex(notification.originator_id)} version "
                    f"{notification.originator_version}) does not match its hash-chain link: "
                    "its stored bytes were changed after it was chained",
                )
            )
        else:
            self.links_checked += 1
        self._resync = row[1]
        self._next += 1

    def finish(self) -> None:
        if self.available:
            row = self._peek()
            while row is not None:
                self._deleted(row)
                self._next += 1
                row = self._peek()
        for position in sorted(set(self.expected_heads) - self._seen_heads):
            self.findings.append(
                ChainFinding(
                    "chain_head",
                    position,
                    f"the stored head names event {position}, which is not in the log",
                )
            )

    def summary(self) -> dict[str, Any]:
        return {
            "available": self.available,
            "chainEnd": self.end,
            "linksChecked": self.links_checked,
            "unchained": self.unchained,
            "headsChecked": self.heads_checked,
            "head": self._pure.hex() if self._pure != GENESIS else None,
        }


def _hex(originator: Any) -> str:
    return originator.hex if isinstance(originator, UUID) else str(originator)


def chain_head_of_day(events: Application, day: str) -> dict[str, Any] | None:
    """Recompute the chain from the log: the last link of the UTC ``day`` (or None)."""
    recorder = events.recorder
    previous = GENESIS
    found: dict[str, Any] | None = None
    position = 0
    while True:
        batch = recorder.select_notifications(position + 1, 1000)
        if not batch:
            return found
        for notification in batch:
            previous = notification_link(previous, notification)
            event = events.mapper.to_domain_event(notification)
            if utc_day(event.timestamp) == day:
                found = {
                    "day": day,
                    "position": notification.id,
                    "link": previous.hex(),
                    "events": (found or {}).get("events", 0) + 1,
                }
        position = batch[-1].id


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

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

from collections import deque
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from projections.hash_chain import GENESIS, has_chain, notification_link


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
        self._rows: deque[ChainRow] = deque()
        self._after = 0
        self._exhausted = False
        self._pure = GENESIS
        self._resync = GENESIS
        self._seen_heads: set[int] = set()
        if self.db is not None and has_chain(self.db):
            self.available = True
            with self.db.transaction() as cur:
                cur.execute("SELECT MAX(position) FROM event_chain")
                row = cur.fetchone()
            self.end = int(row[0]) if row and row[0] is not None else 0

    def _peek(self) -> ChainRow | None:
        if not self._rows and not self._exhausted:
            with self.db.transaction() as cur:
                cur.execute(
                    "SELECT position, link, originator_id, originator_version, topic "
                    "FROM event_chain WHERE position > ? ORDER BY position LIMIT ?",
                    (self._after, self.fetch_size),
                )
                fetched = cur.fetchall()
            if not fetched:
                self._exhausted = True
            for position, link, originator, version, topic in fetched:
                self._rows.append(
                    ChainRow(int(position), bytes.fromhex(link), originator, int(version), topic)
                )
            if fetched:
                self._after = int(fetched[-1][0])
        return self._rows[0] if self._rows else None

    def _deleted(self, row: ChainRow) -> None:
        self.findings.append(
            ChainFinding(
                "event_deleted",
                row.position,
                f"event {row.position} ({row.topic} of {row.originator_id} version "
                f"{row.originator_version}) is in the hash chain but no longer in the log",
            )
        )

    def step(self, notification: Any) -> None:
        previous = self._pure
        pure = notification_link(previous, notification)
        self._pure = pure
        expected = self.expected_heads.get(notification.id)
        if expected is not None:
            self._seen_heads.add(notification.id)
            self.heads_checked += 1
            if pure.hex() != expected.lower():
                self.findings.append(
                    ChainFinding(
                        "chain_head",
                        notification.id,
                        f"the chain recomputed from the log gives {pure.hex()} at event "
                        f"{notification.id}, the stored head says {expected.lower()}",
                    )
                )
        if not self.available:
            return
        row = self._peek()
        while row is not None and row.position < notification.id:
            self._deleted(row)
            self._resync = row.link
            self._rows.popleft()
            row = self._peek()
        if row is None or notification.id > self.end:
            self.unchained += 1
            return
        if row.position > notification.id:
            self.findings.append(
                ChainFinding(
                    "event_inserted",
                    notification.id,
                    f"event {notification.id} ({notification.topic} of "
                    f"{_hex(notification.originator_id)} version "
                    f"{notification.originator_version}) is not in the hash chain, "
                    f"which covers events up to {self.end}",
                )
            )
            return
        # the resynchronised chain equals the pure one until the first divergence
        link = pure if self._resync == previous else notification_link(self._resync, notification)
        if link != row.link:
            self.findings.append(
                ChainFinding(
                    "chain_mismatch",
                    notification.id,
                    f"event {notification.id} ({notification.topic} of "
                    f"{_hex(notification.originator_id)} version "
                    f"{notification.originator_version}) does not match its hash-chain link: "
                    "its stored bytes were changed after it was chained",
                )
            )
        else:
            self.links_checked += 1
        self._resync = row.link
        self._rows.popleft()

    def finish(self) -> None:
        if self.available:
            row = self._peek()
            while row is not None:
                self._deleted(row)
                self._rows.popleft()
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

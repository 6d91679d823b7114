"""Projection runner: reads the event log from each projection's tracking position and
applies a batch of events and the new position in ONE transaction (exactly once).

Works on both stores by polling ``select_notifications`` (eventsourcing's SQLite
recorder cannot subscribe). Several runners may race (several processes): the tracking
row is advanced with a compare-and-set, and the loser's transaction is rolled back.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
from typing import Any, NamedTuple, Protocol

from eventsourcing.application import Application

from application.audit.decode import EventDecoder
from application.store.sql import SqlDatabase

log = logging.getLogger("upgrader.projections")

TRACKING_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS projection_tracking (
        name TEXT PRIMARY KEY, position BIGINT NOT NULL)""",
]


_CREATES = re.compile(r"CREATE (?:TABLE|INDEX) IF NOT EXISTS (\w+)")


def _exists(db: SqlDatabase, name: str) -> bool:
    with db.transaction() as cur:
        if db.dialect == "sqlite":
            cur.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,))
            return cur.fetchone() is not None
        cur.execute("SELECT to_regclass(?) IS NOT NULL", (name,))
        return bool(cur.fetchone()[0])


def ensure_schema(db: SqlDatabase, statements: list[str]) -> None:
    """Create what is missing, one statement per transaction.

    Running ``CREATE ... IF NOT EXISTS`` for objects that exist still takes locks on
    PostgreSQL; a process starting while another projects could deadlock with it.
    """
    for statement in statements:
        match = _CREATES.search(statement)
        if match and _exists(db, match.group(1)):
            continue
        try:
            with db.transaction() as cur:
                cur.execute(statement)
        except Exception:
            # PostgreSQL: another process created it between our check and our CREATE
            # ("IF NOT EXISTS" does not cover that race: the catalog refuses the second
            # one, as a unique violation or "type ... already exists"). If the object
            # is there now, that is all we wanted; anything else is a real error.
            if not (match and _exists(db, match.group(1))):
                raise


class Item(NamedTuple):
    """One stored event of a batch: its notification id, the stored notification (topic,
    raw state) and the decoded domain event (``None`` when no projection of the pass
    subscribes to its topic)."""

    position: int
    notification: Any
    event: Any


class Projection(Protocol):
    """``process`` applies one event. A projection may also define
    ``process_batch(cur, items, after)``: apply the ``items`` (those of its topics, in
    notification order, all with ``position > after``; ``after`` is the tracking position
    the batch continues from) with the same result as ``process`` on each in turn."""

    name: str
    schema: list[str]
    topics: frozenset[str]

    def process(self, cur: Any, event: Any, position: int) -> None: ...


class ProjectionRunner:
    def __init__(
        self,
        events: Application,
        db: SqlDatabase,
        projections: list[Projection],
        batch_size: int = 500,
    ) -> None:
        self.events = events
        self.db = db
        self.projections = {p.name: p for p in projections}
        self.batch_size = batch_size
        self._locks = {p.name: threading.Lock() for p in projections}
        # msgspec where it decodes exactly what the mapper would (the audit's decoder)
        self._decoder = EventDecoder(events.mapper)
        ensure_schema(db, [*TRACKING_SCHEMA, *(st for p in projections for st in p.schema)])
        for projection in projections:
            with db.transaction() as cur:
                cur.execute(
                    "INSERT INTO projection_tracking (name, position) VALUES (?, 0) "
                    "ON CONFLICT (name) DO NOTHING",
                    (projection.name,),
                )

    def position(self, name: str) -> int:
        with self.db.transaction() as cur:
            cur.execute("SELECT position FROM projection_tracking WHERE name = ?", (name,))
            return cur.fetchone()[0]

    def positions(self) -> dict[str, int]:
        """Every projection's tracking position, in one query."""
        with self.db.transaction() as cur:
            cur.execute("SELECT name, position FROM projection_tracking")
            rows = cur.fetchall()
        known = {name: int(position) for name, position in rows}
        return {name: known[name] for name in self.projections}

    def head(self) -> int:
        return self.events.recorder.max_notification_id() or 0

    def _read(self, start: int, names: list[str]) -> list[Item]:
        """The next batch after ``start``, each event decoded once if any of ``names``
        subscribes to its topic."""
        notifications = self.events.recorder.select_notifications(start + 1, self.batch_size)
        topic_sets = [self.projections[name].topics for name in names]
        to_domain_event = self._decoder.decode
        return [
            Item(
                n.id,
                n,
                to_domain_event(n) if any(n.topic in t for t in topic_sets) else None,
            )
            for n in notifications
        ]

    def _apply(self, name: str, start: int, items: list[Item]) -> bool:
        """Apply ``items`` after ``start`` to one projection and move its tracking row
        from ``start`` to the batch's end in one transaction; False if another runner
        moved it first (nothing applied)."""
        try:
            return self._apply_together([name], start, items)
        except _Raced:
            return False

    def _apply_together(self, names: list[str], start: int, items: list[Item]) -> bool:
        """Apply ``items`` after ``start`` to every projection of ``names`` (all at
        ``start``) and move their tracking rows to the batch's end, in ONE transaction:
        one commit per pass instead of one per projection. False, with nothing applied,
        if another runner moved any of them first."""
        end = items[-1].position
        with self.db.transaction() as cur:
            if self.db.dialect == "postgresql":
                # A read model need not wait for its own WAL flush: a crash can lose only
                # whole recent transactions, rows and tracking position together, which
                # the next pass applies again from the log. Any later synchronous commit
                # (an event, a delivery record) flushes them first, as the WAL is one
                # sequence, so nothing acted on can be lost without what caused it.
                cur.execute("SET LOCAL synchronous_commit = off")
            marks = ", ".join("?" for _ in names)
            cur.execute(
                "UPDATE projection_tracking SET position = ? "  # noqa: S608 - only marks
                f"WHERE position = ? AND name IN ({marks})",
                (end, start, *names),
            )
            if cur.rowcount != len(names):
                raise _Raced  # rolls the whole transaction back
            for name in names:
                projection = self.projections[name]
                topics = projection.topics
                mine = [
                    it for it in items if it.position > start and it.notification.topic in topics
                ]
                if not mine:
                    continue
                process_batch = getattr(projection, "process_batch", None)
                if process_batch is not None:
                    process_batch(cur, mine, start)
                else:
                    for item in mine:
                        projection.process(cur, item.event, item.position)
        return True

    def step(self, name: str) -> int:
        """Apply one batch; returns how many notifications were consumed (0: up to date)."""
        with self._locks[name]:
            start = self.position(name)
            items = self._read(start, [name])
            if not items:
                return 0
            return len(items) if self._apply(name, start, items) else 0

    def catch_up(self, name: str | None = None, until: int | None = None) -> None:
        """Apply everything recorded up to ``until`` (default: the head now)."""
        target = self.head() if until is None else until
        for projection_name in [name] if name else list(self.projections):
            while self.position(projection_name) < target:
                self.step(projection_name)

    def run_pass(self) -> int:
        """One batch for every projection that is behind, read and decoded once and shared
        by all projections at the same position. A projection behind the others (after a
        rebuild) gets its own batch from where it is and so on, until every projection
        had one batch; returns how many notifications were consumed in all."""
        positions = self.positions()
        pending = sorted(self.projections, key=positions.__getitem__)
        consumed = 0
        while pending:
            start = positions[pending[0]]
            items = self._read(start, pending)
            if not items:
                break  # the others are at or past ``start``: nothing for them either
            end = items[-1].position
            group = [name for name in pending if positions[name] < end]
            pending = [name for name in pending if positions[name] >= end]
            for start_at, names in _by_start(group, positions):
                consumed += self._apply_group(names, start_at, items)
        return consumed

    def _apply_group(self, names: list[str], start: int, items: list[Item]) -> int:
        """The projections of ``names`` (all at ``start``) in one transaction; if that
        fails (a race, or one projection's error), each in its own, so that one failing
        projection does not hold the others back. Returns the notifications consumed."""
        after = sum(1 for it in items if it.position > start)
        with contextlib.ExitStack() as held:
            for name in names:  # always in the projections' order: no lock-order deadlock
                held.enter_context(self._locks[name])
            if len(names) > 1:
                try:
                    if self._apply_together(names, start, items):
                        return after * len(names)
                except _Raced:
                    pass
                except Exception:
                    log.warning("projections %s failed together; one by one now", names)
            consumed = 0
            failure: Exception | None = None
            for name in names:
                try:
                    if self._apply_together([name], start, items):
                        consumed += after
                except _Raced:
                    continue  # another runner applied this batch first
                except Exception as exc:  # the others still apply; raised after them
                    failure = failure or exc
            if failure is not None:
                raise failure
        return consumed


class _Raced(Exception):
    """Another runner moved a tracking position first: nothing of this batch applied."""


def _by_start(names: list[str], positions: dict[str, int]) -> list[tuple[int, list[str]]]:
    groups: dict[int, list[str]] = {}
    for name in names:
        groups.setdefault(positions[name], []).append(name)
    return list(groups.items())


def tables_of(projection: Projection) -> tuple[str, ...]:
    """The tables a rebuild empties: ``rebuild_tables`` if the projection names them (to
    keep operational state such as delivery or retry bookkeeping), else all it creates."""
    named = getattr(projection, "rebuild_tables", None)
    if named is not None:
        return tuple(named)
    return tuple(
        m.group(1)
        for statement in projection.schema
        if (m := re.search(r"CREATE TABLE IF NOT EXISTS (\w+)", statement))
    )


def rebuild(runner: ProjectionRunner, name: str) -> int:
    """Empty one projection's tables, rewind it to 0 and replay the log; returns the head."""
    projection = runner.projections[name]
    with runner._locks[name], runner.db.transaction() as cur:
        cur.execute("UPDATE projection_tracking SET position = 0 WHERE name = ?", (name,))
        for table in tables_of(projection):
            cur.execute(f"DELETE FROM {table}")  # noqa: S608 - names from our own DDL
    head = runner.head()
    runner.catch_up(name, until=head)
    return head


def status(runner: ProjectionRunner, now: float) -> list[dict[str, Any]]:
    """Per projection: position, head, lag in events and in seconds (age of the oldest
    event not yet applied; 0 when up to date)."""
    head = runner.head()
    rows = []
    for name in runner.projections:
        position = runner.position(name)
        lag_seconds = 0.0
        if position < head:
            first = runner.events.recorder.select_notifications(position + 1, 1)
            if first:
                event = runner.events.mapper.to_domain_event(first[0])
                lag_seconds = max(0.0, now - event.timestamp.timestamp())
        rows.append(
            {
                "name": name,
                "position": position,
                "head": head,
                "lag_events": head - position,
                "lag_seconds": round(lag_seconds, 3),
            }
        )
    return rows

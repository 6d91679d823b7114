"""A pass applies every projection at the same position in one transaction, and falls
back to one transaction per projection when that fails: a projection that raises, or
one another runner moved first, does not hold the others back, and nothing is applied
twice."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from uuid import UUID

import pytest
from eventsourcing.application import Application
from eventsourcing.domain import Aggregate, event
from eventsourcing.utils import get_topic

from application.store.database_url import ensure_schema, parse_database_url
from application.store.sql import open_database
from projections.runner import ProjectionRunner


class Tally(Aggregate):
    @event("Made")
    def __init__(self, n: int) -> None:
        self.n = n


MADE = get_topic(Tally.Made)


class Log(Application[UUID]):
    name = "upgrader"


class Seen:
    """Records each event's n in its own table; can be told to fail."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.schema = [f"CREATE TABLE IF NOT EXISTS {name} (n INTEGER PRIMARY KEY)"]
        self.topics = frozenset({MADE})
        self.fail = False

    def process(self, cur: Any, event: Any, position: int) -> None:
        if self.fail:
            raise RuntimeError(f"{self.name} is broken")
        cur.execute(f"INSERT INTO {self.name} (n) VALUES (?)", (event.n,))  # noqa: S608


@pytest.fixture
def store(database_url: str) -> Iterator[tuple[Log, Any]]:
    location = parse_database_url(database_url)
    ensure_schema(location)
    log = Log(env=location.eventsourcing_env())
    db = open_database(location, pool_size=2)
    yield log, db
    db.close()
    log.close()


def rows(db: Any, table: str) -> list[int]:
    with db.transaction() as cur:
        cur.execute(f"SELECT n FROM {table} ORDER BY n")  # noqa: S608
        return [row[0] for row in cur.fetchall()]


def test_a_failing_projection_does_not_hold_the_others_back(store: tuple[Log, Any]) -> None:
    log, db = store
    first, broken, last = Seen("seen_a"), Seen("seen_b"), Seen("seen_c")
    runner = ProjectionRunner(log, db, [first, broken, last])
    for n in range(5):
        log.save(Tally(n))
    broken.fail = True
    with pytest.raises(RuntimeError, match="seen_b is broken"):
        runner.run_pass()
    assert runner.positions() == {"seen_a": 5, "seen_b": 0, "seen_c": 5}
    assert rows(db, "seen_a") == rows(db, "seen_c") == [0, 1, 2, 3, 4]
    assert rows(db, "seen_b") == []
    broken.fail = False
    log.save(Tally(5))
    assert runner.run_pass() == 6 + 1 + 1  # seen_b's own batch, then the one new event
    assert runner.positions() == {"seen_a": 6, "seen_b": 6, "seen_c": 6}
    assert rows(db, "seen_b") == [0, 1, 2, 3, 4, 5]


def test_a_projection_another_runner_moved_is_skipped_not_applied_twice(
    store: tuple[Log, Any],
) -> None:
    log, db = store
    projections = [Seen("seen_a"), Seen("seen_b"), Seen("seen_c")]
    runner = ProjectionRunner(log, db, projections)
    other = ProjectionRunner(log, db, [Seen("seen_a"), Seen("seen_b"), Seen("seen_c")])
    for n in range(4):
        log.save(Tally(n))
    start = runner.positions()
    assert other.step("seen_b") == 4  # the other runner applies seen_b's batch first
    items = runner._read(0, list(runner.projections))
    assert runner._apply_group(["seen_a", "seen_b", "seen_c"], start["seen_a"], items) == 8
    assert runner.positions() == {"seen_a": 4, "seen_b": 4, "seen_c": 4}
    for table in ("seen_a", "seen_b", "seen_c"):
        assert rows(db, table) == [0, 1, 2, 3]

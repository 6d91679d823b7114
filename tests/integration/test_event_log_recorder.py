"""The PostgreSQL event-log recorder: one locked server-side insert per commit.

Its promise is eventsourcing's: notification ids commit in the order they are issued,
with no gaps a reader could pass over, a conflicting commit records nothing, and each
insert sends the channel's NOTIFY. These tests hold it to that under concurrent commits.
"""

from __future__ import annotations

import threading
from uuid import UUID, uuid4

import psycopg
import pytest
from eventsourcing.application import Application
from eventsourcing.domain import Aggregate, event
from eventsourcing.persistence import IntegrityError, PersistenceError, StoredEvent

from application.store.database_url import ensure_schema, parse_database_url
from application.store.pg_recorder import SerialInsertRecorder

pytestmark = pytest.mark.postgres


class Counter(Aggregate):
    @event("Made")
    def __init__(self, n: int) -> None:
        self.n = n

    @event("Bumped")
    def bump(self) -> None:
        self.n += 1


class Log(Application[UUID]):
    name = "upgrader"


def _open(url: str, app_class: type[Application[UUID]] = Log) -> Application[UUID]:
    location = parse_database_url(url)
    ensure_schema(location)
    return app_class(env=location.eventsourcing_env())


def test_concurrent_commits_get_contiguous_ids_in_commit_order(postgres_url: str) -> None:
    log = _open(postgres_url)
    try:
        assert type(log.recorder) is SerialInsertRecorder
        threads, per_thread = 8, 40

        def work(k: int) -> None:
            for i in range(per_thread):
                counter = Counter(k * 1000 + i)
                counter.bump()  # two events in one commit
                log.save(counter)

        workers = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        notifications = log.recorder.select_notifications(1, 10_000)
        assert [n.id for n in notifications] == list(range(1, threads * per_thread * 2 + 1))
        # the two events of one commit are adjacent: no other commit got ids in between
        for made, bumped in zip(notifications[::2], notifications[1::2], strict=True):
            assert made.originator_id == bumped.originator_id
            assert (made.originator_version, bumped.originator_version) == (1, 2)
    finally:
        log.close()


def test_a_conflicting_commit_records_nothing_and_returns_the_ids(postgres_url: str) -> None:
    log = _open(postgres_url)
    try:
        counter = Counter(1)
        recordings = log.save(counter)
        assert [r.notification.id for r in recordings] == [1]
        stale = log.repository.get(counter.id)
        counter.bump()
        log.save(counter)
        stale.bump()
        stale.bump()
        with pytest.raises(IntegrityError):
            log.save(stale)
        assert [n.id for n in log.recorder.select_notifications(1, 100)] == [1, 2]
        assert log.repository.get(counter.id).n == 2
    finally:
        log.close()


def test_each_commit_notifies_the_channel(postgres_url: str) -> None:
    # channels are per database, not per schema: a name of its own keeps other tests'
    # commits off this test's channel
    name = f"rt{uuid4().hex[:10]}"
    log = _open(postgres_url, type("Private", (Application,), {"name": name}))
    base = postgres_url.split("?")[0]
    try:
        with psycopg.connect(base, autocommit=True) as listener:
            listener.execute(f"LISTEN {log.recorder.channel_name}")
            log.save(Counter(1))
            log.save(Counter(2))
            heard = list(listener.notifies(timeout=2, stop_after=2))
        assert [n.channel for n in heard] == [f"{name}_events"] * 2
    finally:
        log.close()


def test_queued_inserts_commit_together_and_a_conflict_fails_only_its_caller(
    postgres_url: str,
) -> None:
    log = _open(postgres_url)
    base, schema = postgres_url.split("?schema=")
    try:
        first = Counter(0)
        log.save(first)
        stale = log.repository.get(first.id)
        first.bump()
        log.save(first)  # version 2 recorded: the stale copy's bump will conflict
        group = log.recorder.group
        sent_before = group.statements
        outcomes: dict[str, object] = {}

        def save(name: str, aggregate: Aggregate) -> None:
            try:
                log.save(aggregate)
                outcomes[name] = "saved"
            except IntegrityError:
                outcomes[name] = "conflict"

        stale.bump()
        fresh = [Counter(n) for n in (1, 2, 3)]
        with psycopg.connect(base) as holder:
            # hold the event-log lock so that the first insert waits inside its statement
            holder.execute(f'LOCK TABLE "{schema}".upgrader_events IN EXCLUSIVE MODE')
            leader = threading.Thread(target=save, args=("leader", fresh[0]))
            leader.start()
            while not group._busy:
                threading.Event().wait(0.01)
            followers = [
                threading.Thread(target=save, args=(name, aggregate))
                for name, aggregate in (("a", fresh[1]), ("stale", stale), ("b", fresh[2]))
            ]
            for follower in followers:
                follower.start()
            while len(group._queue) < 3:
                threading.Event().wait(0.01)
            holder.rollback()  # release the lock
        for thread in [leader, *followers]:
            thread.join()
        assert outcomes == {"leader": "saved", "a": "saved", "stale": "conflict", "b": "saved"}
        # the leader's statement, the followers' combined one (refused), then one each
        assert group.statements - sent_before == 1 + 1 + 3
        notifications = log.recorder.select_notifications(1, 100)
        assert [n.id for n in notifications][:2] == [1, 2]
        assert sorted(n.originator_id for n in notifications[2:]) == sorted(c.id for c in fresh)
        assert log.repository.get(first.id).n == 1
    finally:
        log.close()


def test_a_bad_row_in_a_combined_insert_fails_only_its_own_caller(postgres_url: str) -> None:
    log = _open(postgres_url)
    base, schema = postgres_url.split("?schema=")
    recorder = log.recorder
    try:

        def stored(topic: str) -> StoredEvent:
            return StoredEvent(
                originator_id=uuid4(), originator_version=1, topic=topic, state=b"{}"
            )

        outcomes: dict[str, object] = {}

        def insert(name: str, event: StoredEvent) -> None:
            try:
                outcomes[name] = len(recorder.insert_events([event]))
            except PersistenceError as exc:
                outcomes[name] = type(exc).__name__

        with psycopg.connect(base) as holder:
            holder.execute(f'LOCK TABLE "{schema}".upgrader_events IN EXCLUSIVE MODE')
            leader = threading.Thread(target=insert, args=("leader", stored("t:leader")))
            leader.start()
            while not recorder.group._busy:
                threading.Event().wait(0.01)
            followers = [
                threading.Thread(target=insert, args=(name, stored(topic)))
                for name, topic in (("a", "t:a"), ("bad", "t:\x00bad"), ("b", "t:b"))
            ]
            for follower in followers:
                follower.start()
            while len(recorder.group._queue) < 3:
                threading.Event().wait(0.01)
            holder.rollback()
        for thread in [leader, *followers]:
            thread.join()
        assert outcomes == {"leader": 1, "a": 1, "bad": "DataError", "b": 1}
        topics = sorted(n.topic for n in recorder.select_notifications(1, 100))
        assert topics == ["t:a", "t:b", "t:leader"]
    finally:
        log.close()

"""The PostgreSQL event-log recorder: one server-side statement per insert.

eventsourcing's recorder serialises inserts with ``LOCK TABLE ... IN EXCLUSIVE MODE`` so
that notification ids commit in the order they are issued (a reader tailing the log by
id then never passes over a gap that fills in later). It sends the lock, ``NOTIFY`` and
the ``INSERT`` in a pipeline inside an explicit transaction, then commits in a second
round trip. Between the two the lock is held while the client thread waits for the
network, for its turn at the GIL and for the rest of its Python work: under load most
backends of the platform queued on that lock (docs/performance.md).

This recorder keeps the same guarantee with a shorter critical section: the lock, the
``NOTIFY`` and the ``INSERT`` run inside one plpgsql function, called as one statement
on an autocommit connection. The lock is taken after the statement starts and is
released by the statement's own commit, so it is held for the insert and the commit's
WAL flush only, never across a round trip to the application.

eventsourcing's own ``POSTGRES_ENABLE_DB_FUNCTIONS`` function is not used: it takes no
table lock, so ids could commit out of order and a projection would skip events.

Group commit: the inserts of one process are serialised by that lock anyway, so threads
that want to insert while another insert of this process is running queue up, and the
next of them inserts everything queued in one statement (one lock, one commit, one WAL
flush for several requests). A lone insert goes straight through. When a combined
statement fails, nothing of it was recorded: if the statement was refused (a conflict,
a bad row) it is retried insert by insert, so only the caller it belongs to sees the
error; if the connection or the server failed, every caller gets that error and its
retry policy decides as before.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from eventsourcing.persistence import (
    InterfaceError,
    OperationalError,
    StoredEvent,
)
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore
from eventsourcing.utils import retry
from psycopg.sql import SQL, Identifier, Literal

from application.store.pool_check import check_unless_recent

TOPIC = "application.store.pg_recorder:SerialInsertRecorder"


class _Insert:
    __slots__ = ("done", "error", "ids", "rows")

    def __init__(self, rows: list[Any]) -> None:
        self.rows = rows
        self.ids: list[int] = []
        self.error: BaseException | None = None
        self.done = False


class GroupCommit:
    """Leader/follower batching of one process's inserts (see the module docstring)."""

    def __init__(self, execute: Callable[[list[Any]], list[int]]) -> None:
        self._execute = execute
        self._cond = threading.Condition()
        self._queue: list[_Insert] = []
        self._busy = False
        self.statements = 0  # combined statements sent (for tests and benchmarks)

    def insert(self, rows: list[Any]) -> list[int]:
        mine = _Insert(rows)
        with self._cond:
            self._queue.append(mine)
            while self._busy and not mine.done:
                self._cond.wait()
            if not mine.done:  # lead: take everything queued so far
                self._busy = True
                batch, self._queue = self._queue, []
        if not mine.done:
            try:
                self._flush(batch)
            finally:
                with self._cond:
                    self._busy = False
                    for insert in batch:
                        if not insert.ids and insert.error is None:  # the flush broke off
                            insert.error = OperationalError("the insert was not attempted")
                        insert.done = True
                    self._cond.notify_all()
        if mine.error is not None:
            raise mine.error
        return mine.ids

    def _flush(self, batch: list[_Insert]) -> None:
        rows = [row for insert in batch for row in insert.rows]
        try:
            self.statements += 1
            ids = self._execute(rows)
        except (OperationalError, InterfaceError) as exc:
            for insert in batch:  # the connection or server failed: each caller's retry
                insert.error = exc
            return
        except Exception as exc:
            if len(batch) == 1:
                batch[0].error = exc
                return
            # a conflict or a bad row refused the combined statement, which recorded
            # nothing: insert one by one, so only the caller it belongs to sees it
            for insert in batch:
                try:
                    self.statements += 1
                    insert.ids = self._execute(insert.rows)
                except Exception as each:  # handed to its own caller
                    insert.error = each
            return
        start = 0
        for insert in batch:
            insert.ids = ids[start : start + len(insert.rows)]
            start += len(insert.rows)


class SerialInsertRecorder(PostgresApplicationRecorder):
    def __init__(
        self, datastore: PostgresDatastore, *, events_table_name: str = "stored_events"
    ) -> None:
        super().__init__(datastore, events_table_name=events_table_name)
        id_type = datastore.originator_id_type  # "uuid" or "text", checked by eventsourcing
        self.locked_insert_function = f"upgrader_locked_insert_columns_{id_type}"
        schema = Identifier(datastore.schema)
        # Four arrays of plain types rather than one array of a composite type: psycopg
        # sends them in binary without composing each row in Python.
        # Created only where it is missing: every process runs these statements at
        # start-up, and concurrent CREATE OR REPLACE of one function fails with "tuple
        # concurrently updated" (serve --workers N creates it once, before its processes).
        signature = f'"{datastore.schema}"."{self.locked_insert_function}"'
        signature += f"({id_type}[], bigint[], text[], bytea[])"
        self.sql_create_statements.append(
            SQL(
                "DO $create$ BEGIN IF to_regprocedure({signature}) IS NULL THEN "
                "CREATE FUNCTION {schema}.{function}("
                "ids {id_type}[], versions bigint[], topics text[], states bytea[]) "
                "RETURNS SETOF bigint LANGUAGE plpgsql AS $BODY$ "
                "BEGIN "
                "SET LOCAL lock_timeout = '{lock_timeout}s'; "
                "LOCK TABLE {schema}.{table} IN EXCLUSIVE MODE; "
                "NOTIFY {channel}; "
                "RETURN QUERY INSERT INTO {schema}.{table} AS t "
                "(originator_id, originator_version, topic, state) "
                "SELECT * FROM unnest(ids, versions, topics, states) "
                "RETURNING notification_id; "
                "END; $BODY$; "
                "END IF; END $create$"
            ).format(
                signature=Literal(signature),
                schema=schema,
                function=Identifier(self.locked_insert_function),
                id_type=SQL(id_type),
                lock_timeout=datastore.lock_timeout,
                table=Identifier(self.events_table_name),
                channel=Identifier(self.channel_name),
            )
        )
        self.sql_locked_insert = SQL(
            "SELECT * FROM {schema}.{function}(%b::{id_type}[], %b::bigint[], %b, %b)"
        ).format(
            schema=schema, function=Identifier(self.locked_insert_function), id_type=SQL(id_type)
        )
        self.group = GroupCommit(self._locked_insert)
        if datastore.pre_ping and getattr(datastore.pool, "_check", None) is not None:
            datastore.pool._check = check_unless_recent

    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        if not stored_events:
            return []
        rows = [(e.originator_id, e.originator_version, e.topic, e.state) for e in stored_events]
        return self.group.insert(rows)

    def _locked_insert(self, rows: list[Any]) -> list[int]:
        ids, versions, topics, states = (list(column) for column in zip(*rows, strict=True))
        with self.datastore.get_connection() as conn, conn.cursor() as curs:
            curs.execute(self.sql_locked_insert, (ids, versions, topics, states), prepare=True)
            return [row[self.locked_insert_function] for row in curs.fetchall()]

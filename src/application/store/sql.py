"""Our own tables (sessions, launch redemptions, read models) beside the event store.

One small interface over sqlite3 and psycopg: SQL is written with ``?`` placeholders and
portable statements (``INSERT ... ON CONFLICT``), and ``transaction()`` yields a cursor.
Connection faults become ``StoreUnavailable`` (answered 503), uniqueness faults
``DuplicateRow``; callers decide what a duplicate means.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Protocol

from application.store.database_url import DatabaseLocation


class StoreUnavailable(Exception):
    """The database cannot be reached or is locked for too long."""


class DuplicateRow(Exception):
    """A uniqueness constraint refused the write."""


class Cursor(Protocol):
    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...


class SqlDatabase(Protocol):
    dialect: str

    def transaction(self) -> Any: ...
    def close(self) -> None: ...


class SQLiteDatabase:
    dialect = "sqlite"

    def __init__(self, path: str, timeout_seconds: float = 15.0) -> None:
        self.path = path
        self.timeout = timeout_seconds
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    def _connection(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(
                self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
            )
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Cursor]:
        conn = self._connection()
        try:
            conn.execute("BEGIN IMMEDIATE")
            cursor = conn.cursor()
            yield cursor
            conn.execute("COMMIT")
        except sqlite3.IntegrityError as exc:
            conn.execute("ROLLBACK")
            raise DuplicateRow(str(exc)) from exc
        except sqlite3.OperationalError as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise StoreUnavailable(str(exc)) from exc
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()


_PLACEHOLDER = re.compile(r"\?")


class _PgCursor:
    def __init__(self, cursor: Any) -> None:
        self._cursor = cursor

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._cursor.execute(_PLACEHOLDER.sub("%s", sql), tuple(params))

    def executemany(self, sql: str, params_seq: Iterable[Sequence[Any]]) -> Any:
        """psycopg 3 pipelines the statements: about one round trip for all of them."""
        return self._cursor.executemany(
            _PLACEHOLDER.sub("%s", sql), [tuple(params) for params in params_seq]
        )

    def pipeline(self) -> AbstractContextManager[Any]:
        """Queue the statements sent inside without waiting for each result (one sync at
        the end, or where a result is fetched)."""
        return self._cursor.connection.pipeline()

    def fetchone(self) -> Any:
        return self._cursor.fetchone()

    def fetchall(self) -> list[Any]:
        return self._cursor.fetchall()

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount


class PostgresDatabase:
    dialect = "postgresql"

    def __init__(self, location: DatabaseLocation, pool_size: int = 8) -> None:
        import psycopg_pool

        from application.store.pool_check import check_unless_recent

        self._pool = psycopg_pool.ConnectionPool(
            location.conninfo(),
            min_size=1,
            max_size=pool_size,
            kwargs={"options": f"-c search_path={location.schema} -c lock_timeout=5000"},
            open=True,
            timeout=3,  # wait for a connection: below the request's store deadline
            check=check_unless_recent,  # drop stale ones after a restart (pool_check.py)
        )

    @contextmanager
    def transaction(self) -> Iterator[_PgCursor]:
        import psycopg

        try:
            with self._pool.connection() as conn, conn.transaction():
                yield _PgCursor(conn.cursor())
        except psycopg.errors.UniqueViolation as exc:
            raise DuplicateRow(str(exc).splitlines()[0]) from exc
        except (psycopg.OperationalError, TimeoutError) as exc:
            raise StoreUnavailable(type(exc).__name__) from exc
        except Exception as exc:
            import psycopg_pool

            if isinstance(exc, psycopg_pool.PoolTimeout):
                raise StoreUnavailable("connection pool timeout") from exc
            raise

    def close(self) -> None:
        self._pool.close()


def execute_in_order(cur: Any, statements: Sequence[tuple[str, Sequence[Any]]]) -> None:
    """Run ``(sql, params)`` statements in their order: consecutive ones with the same SQL
    as one ``executemany``, all inside one pipeline on PostgreSQL (no wait per statement;
    an error surfaces when the pipeline ends, aborting the transaction as usual)."""
    if not statements:
        return
    pipeline = getattr(cur, "pipeline", None)
    with pipeline() if pipeline is not None else nullcontext():
        start = 0
        while start < len(statements):
            sql = statements[start][0]
            stop = start + 1
            while stop < len(statements) and statements[stop][0] == sql:
                stop += 1
            if stop - start == 1:
                cur.execute(sql, statements[start][1])
            else:
                cur.executemany(sql, [params for _, params in statements[start:stop]])
            start = stop


def open_database(
    location: DatabaseLocation, pool_size: int = 8
) -> SQLiteDatabase | PostgresDatabase:
    if location.kind == "sqlite":
        return SQLiteDatabase(location.path)
    return PostgresDatabase(location, pool_size=pool_size)

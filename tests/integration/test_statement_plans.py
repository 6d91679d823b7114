"""Every statement uses an index on every table that grows (issue 18, item 1).

The statements are found by reading ``src/`` (tests/support/plans.py), so a new one
cannot escape: it is planned here, or the test names it and asks for a rendering. Every
table is filled with ``ROWS`` generated rows and ANALYZEd; at that size the planner
already prefers an index for the batch statements that join an ``unnest`` of keys (at
2,000 rows it still scans), so a sequential scan of a growing table in a plan means
that no index serves the statement. Growing is every table but the few that hold one
row per projection, operator or service secret.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from application.platform import Platform
from entrypoints.runtime import Runtime
from tests.conftest import fresh_postgres_url
from tests.support import plans
from tests.support.config import make_config

ROWS = 8000
SMALL = {"projection_tracking", "webhook_operators", "service_secrets"}

# Statements found in src/ that are not planned here, with the reason.
EXEMPT = {
    "SELECT 1 FROM sqlite_master": "SQLite only (a table's existence)",
    "SELECT COUNT(*) FROM sqlite_master": "SQLite only (a table's existence)",
    "\nWITH heads AS (": "SQLite only (the dispatcher's claim; PostgreSQL's is planned)",
    "DELETE FROM {}": "`projections rebuild` empties a read model's tables: all rows by design",
    "SELECT {} FROM {} WHERE {} GROUP BY": "`upgrader report`: an analyst's query over a "
    "date range, on a daily table (one row per operator, day, currency and preset, game or "
    "box version)",
}
NEW_INDEXES = ("wallet_debit_attempts_round", "wallet_credit_attempts_cashout")


@pytest.fixture(scope="module")
def filled() -> Iterator[tuple[Any, Any, str]]:
    """A store with every table created (as a process creates them at start-up), filled
    and analysed (once for the module); a connection that prepares nothing on its own."""
    urls = fresh_postgres_url()
    url = next(urls)
    platform = Platform(make_config(url, wallet_url="http://127.0.0.1:9/wallet"))
    Runtime(platform, workers=())
    schema = platform.location.schema
    try:
        with psycopg.connect(
            platform.location.conninfo(),
            autocommit=True,
            prepare_threshold=None,
            options=f"-c search_path={schema}",
        ) as conn:
            plans.fill(conn, schema, ROWS)
            conn.execute("SET plan_cache_mode = force_generic_plan")
            yield conn, platform.events.recorder, schema
    finally:
        platform.close()
        next(urls, None)  # drops the schema


def _tables(conn: Any, schema: str) -> set[str]:
    rows = conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,)
    ).fetchall()
    return {row[0] for row in rows}


@pytest.mark.postgres
def test_no_statement_reads_a_growing_table_whole(filled) -> None:
    conn, recorder, schema = filled
    growing = _tables(conn, schema) - SMALL
    found = list(plans.statements(recorder, conn))
    unplanned, failed, scanning = [], [], []
    planned = 0
    for statement in found:
        if any(statement.text.startswith(start) for start in EXEMPT):
            continue
        if not statement.sql:
            unplanned.append(f"{statement.where}: {statement.text[:80]!r}")
        for sql in statement.sql:
            try:
                root = plans.plan(conn, sql)
            except psycopg.Error as exc:
                failed.append(f"{statement.where}: {str(exc).splitlines()[0]}")
                continue
            planned += 1
            bad = plans.full_scans(root, growing)
            if bad:
                scanning.append(f"{statement.where}: {bad} in {sql[:120]!r}")
    for sql in plans.library_statements(recorder, conn):
        planned += 1
        bad = plans.full_scans(plans.plan(conn, sql), growing)
        if bad:
            scanning.append(f"eventsourcing: {bad} in {sql[:120]!r}")
    assert unplanned == [], "statements formatted at run time need a rendering in plans.py"
    assert failed == []
    assert scanning == []
    assert planned >= 120  # the scan found the statements (126 when this was written)


@pytest.mark.postgres
def test_a_missing_index_shows_as_a_full_scan(filled) -> None:
    """The check itself: without the new index, the projection's batch update of the
    debit attempts reads the whole table, as it did before (issue 18)."""
    conn, _, schema = filled
    from projections.wallet_ops import _ANSWERED_UNNEST

    growing = _tables(conn, schema) - SMALL
    assert plans.full_scans(plans.plan(conn, _ANSWERED_UNNEST), growing) == []
    conn.execute("BEGIN")
    try:
        conn.execute("DROP INDEX wallet_debit_attempts_round")
        assert plans.full_scans(plans.plan(conn, _ANSWERED_UNNEST), growing) == [
            "Seq Scan on wallet_debit_attempts"
        ]
    finally:
        conn.execute("ROLLBACK")  # the index is back for the other tests


def _indexes(platform: Platform) -> set[str]:
    with platform.db.transaction() as cur:
        if platform.db.dialect == "sqlite":
            cur.execute("SELECT name FROM sqlite_master WHERE type = 'index'")
        else:
            cur.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = ?",
                (platform.location.schema,),
            )
        return {row[0] for row in cur.fetchall()}


def test_start_up_adds_the_new_indexes_to_an_existing_store(database_url: str) -> None:
    config = make_config(database_url, wallet_url="http://127.0.0.1:9/wallet")
    platform = Platform(config)
    Runtime(platform, workers=())
    assert set(NEW_INDEXES) <= _indexes(platform)
    with platform.db.transaction() as cur:  # a store from before these indexes
        for name in NEW_INDEXES:
            cur.execute(f"DROP INDEX {name}")
    assert not set(NEW_INDEXES) & _indexes(platform)
    platform.close()

    again = Platform(config)
    Runtime(again, workers=())
    assert set(NEW_INDEXES) <= _indexes(again)
    again.close()


def test_sqlite_uses_the_index_for_the_debit_attempt_update(tmp_path) -> None:
    """SQLite runs the ordered statements; its planner finds the index too."""
    config = make_config(f"sqlite:///{tmp_path}/store.db", wallet_url="http://127.0.0.1:9/w")
    platform = Platform(config)
    Runtime(platform, workers=())
    platform.close()
    from projections.wallet_ops import _ANSWERED, _CREDIT_ANSWERED

    with sqlite3.connect(tmp_path / "store.db") as conn:
        for sql, index in (
            (_ANSWERED, "wallet_debit_attempts_round"),
            (_CREDIT_ANSWERED, "wallet_credit_attempts_cashout"),
        ):
            detail = " ".join(
                row[-1] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", ("s", 1.0, "r", 1))
            )
            assert f"USING INDEX {index}" in detail, detail

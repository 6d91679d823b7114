"""The golden event log's files, and what a store is compared with them by.

Shared by the recorder (``tests/golden/record.py``, run by hand) and the test
(``tests/integration/test_golden_log.py``), so both read and write the files one way:

* ``events.jsonl``: one stored event per line, in log order: ``position`` (the
  notification id it had), ``originator_id`` (UUID text), ``originator_version``,
  ``topic`` and ``state`` (the stored bytes as UTF-8 text: the store keeps JSON,
  uncompressed and unencrypted);
* ``expected.json``: ``audit`` (the ``upgrader audit --json`` summary without the
  wall-clock ``seconds``), ``chainHeads`` (per UTC day: position, link, events),
  ``tables`` (every projection table: its columns and rows in a stable order),
  ``topics`` (each topic and how many events have it) and ``config`` (the configuration
  in force at the end of the log, as the raw dict of ``shared/spec/config.md``, with
  ``database_url`` left empty).
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any
from uuid import UUID

from eventsourcing.persistence import StoredEvent

GOLDEN = Path(__file__).resolve().parent
EVENTS_FILE = GOLDEN / "events.jsonl"
EXPECTED_FILE = GOLDEN / "expected.json"
# the second log (``--scenario boxes``): box rounds and cancels, in the same two formats
BOXES_EVENTS_FILE = GOLDEN / "events_boxes.jsonl"
BOXES_EXPECTED_FILE = GOLDEN / "expected_boxes.json"
# what the audit summary holds that depends on the wall clock of the audit run
WALL_CLOCK_AUDIT_KEYS = ("seconds",)


# -- the event log ----------------------------------------------------------------------------


def read_log(recorder: Any, page: int = 1000) -> list[dict[str, Any]]:
    """Every stored event of the store, in log order, as the lines of ``events.jsonl``."""
    rows: list[dict[str, Any]] = []
    position = 0
    while batch := recorder.select_notifications(position + 1, page):
        for notification in batch:
            rows.append(
                {
                    "position": notification.id,
                    "originator_id": str(UUID(str(notification.originator_id))),
                    "originator_version": notification.originator_version,
                    "topic": notification.topic,
                    "state": bytes(notification.state).decode("utf-8"),
                }
            )
        position = batch[-1].id
    return rows


def write_log(path: Path, rows: list[dict[str, Any]]) -> None:
    lines = [json.dumps(row, separators=(",", ":"), ensure_ascii=False) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def load_log(path: Path = EVENTS_FILE) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def write_expected(path: Path, expected: dict[str, Any]) -> None:
    """``expected.json`` with one table row per line (readable, and a reasonable size)."""
    path.write_text(_readable(expected) + "\n", encoding="utf-8")


def _readable(value: Any, indent: int = 0) -> str:
    pad = " " * indent
    if isinstance(value, dict) and value:
        items = [f"{pad} {json.dumps(k)}: {_readable(v, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, list) and value and all(isinstance(v, list) for v in value):
        rows = [pad + " " + json.dumps(v, ensure_ascii=False) for v in value]
        return "[\n" + ",\n".join(rows) + "\n" + pad + "]"
    return json.dumps(value, ensure_ascii=False)


def stored_events(rows: list[dict[str, Any]]) -> list[StoredEvent]:
    """The rows as the recorder stores them (the state's exact bytes)."""
    return [
        StoredEvent(
            originator_id=UUID(row["originator_id"]),
            originator_version=row["originator_version"],
            topic=row["topic"],
            state=row["state"].encode("utf-8"),
        )
        for row in rows
    ]


# -- read models --------------------------------------------------------------------------------


def _sort_key(row: list[Any]) -> tuple:
    return tuple((True, 0) if value is None else (False, value) for value in row)


def dump_table(db: Any, table: str, columns: list[str]) -> list[list[Any]]:
    """The rows of ``columns`` of ``table``, sorted in Python (a server's text collation
    would order them differently on SQLite and PostgreSQL)."""
    with db.transaction() as cur:
        cur.execute(f"SELECT {', '.join(columns)} FROM {table}")  # noqa: S608 - recorded names
        rows = [list(row) for row in cur.fetchall()]
    return sorted(rows, key=_sort_key)


def dump_tables(db: Any, tables: dict[str, list[str]]) -> dict[str, dict[str, Any]]:
    return {
        table: {"columns": columns, "rows": dump_table(db, table, columns)}
        for table, columns in tables.items()
    }


def chain_heads(db: Any) -> dict[str, dict[str, Any]]:
    with db.transaction() as cur:
        cur.execute("SELECT day, position, link, events FROM chain_heads")
        rows = cur.fetchall()
    return {
        day: {"position": int(position), "link": link, "events": int(events)}
        for day, position, link, events in sorted(rows)
    }


# -- the audit command ----------------------------------------------------------------------------


def run_cli(*argv: str) -> tuple[int, str]:
    """``upgrader ARGV`` in this process: its exit status and what it printed."""
    from entrypoints.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(argv))
    return code, out.getvalue()


def audit_summary(database_url: str, *extra: str) -> tuple[int, dict[str, Any]]:
    """``upgrader audit --json`` of the store, without the wall-clock keys."""
    code, out = run_cli("audit", "--database-url", database_url, "--json", "--no-progress", *extra)
    report = json.loads(out.strip().splitlines()[-1])
    for key in WALL_CLOCK_AUDIT_KEYS:
        report.pop(key, None)
    return code, report

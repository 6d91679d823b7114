"""Every SQL statement in ``src/``, found by reading the source, and its PostgreSQL plan.

``statements()`` walks the syntax tree of every module under ``src/`` and keeps each
string that starts like a statement (``SELECT``, ``INSERT``, ``UPDATE``, ``DELETE``,
``WITH``), docstrings excepted. A module-level constant is taken as the module computes
it (so an f-string or a call such as ``insert_sql(...)`` is rendered); a literal inside a
function is taken as written. A statement the code completes or formats at run time (a
``{keys}`` list, a fragment such as ``_LEASE + "= ANY(?)"``, an f-string inside a
function) has its renderings in ``RENDERINGS``, keyed by the start of its text: a new
one that has none fails ``explainable`` with its file and line, so no statement can be
added without being planned.

``plan()`` prepares a statement on PostgreSQL (placeholders ``?``, ``%s``, ``%b`` become
``$n``) and explains it with a generic plan (``plan_cache_mode = force_generic_plan``,
NULL for every parameter): the plan the server uses for any parameter values, so no
values have to be invented, and nothing is executed.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SRC = Path(__file__).resolve().parents[2] / "src"
_STATEMENT = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\s")


@dataclass(frozen=True)
class Found:
    """One statement literal: where it is, its text, and the texts to plan for it."""

    where: str  # path:line
    text: str
    sql: tuple[str, ...]  # the statements to explain (empty: no rendering known)


def _keys(sql: str) -> str:
    return sql.format(keys="?, ?, ?")


def _renderings(recorder: Any, conn: Any) -> dict[str, Callable[[], list[str]]]:
    """Statement starts -> the complete statements the code makes of them (the event
    store's ``recorder`` and a connection render the SQL its recorder composes)."""
    from application.access import rate_limits
    from projections import analytics_boxes, analytics_tables, dispatcher

    return {
        # pg_recorder.SerialInsertRecorder: the locked insert, composed per schema
        "SELECT * FROM {schema}.{function}(": lambda: [recorder.sql_locked_insert.as_string(conn)],
        # rate_limits.chain_sql: one statement per chain length (a play: 2)
        "SELECT {}, $1::bigint, 1 FROM h{}": lambda: [rate_limits.chain_sql(n) for n in (1, 2, 3)],
        "WITH {} SELECT {}": lambda: [rate_limits.chain_sql(n) for n in (2, 3)],
        # Analytics.process (one event at a time): the module's own statements
        "INSERT INTO analytics_rounds ({}) VALUES ({})": lambda: [analytics_tables._FACT],
        "INSERT INTO analytics_item_flows ({}) VALUES ({})": lambda: [analytics_tables._FLOW],
        "INSERT INTO analytics_daily ({}) VALUES ({})": lambda: [analytics_tables._DAILY],
        # Analytics.process: which settled rounds already have a fact row, in either table
        "SELECT round_id FROM {} WHERE round_id IN ({keys})": lambda: [
            _keys(f"SELECT round_id FROM {table} WHERE round_id IN ({{keys}})")  # noqa: S608
            for table in ("analytics_rounds", "analytics_box_rounds")
        ],
        # analytics_boxes._upsert: the per-game and per-box daily rows
        "INSERT INTO {} ({}) VALUES ({}) ON CONFLICT ({}) DO UPDATE SET {}": lambda: [
            analytics_boxes.GAME_DAILY,
            analytics_boxes.BOX_DAILY,
        ],
        # projections.unnest.insert_sql: its two users
        "INSERT INTO {} ({}) SELECT * FROM unnest({}) {}": lambda: [
            analytics_tables._FACT_UNNEST,
            analytics_tables._FLOW_UNNEST,
        ],
        # ProjectionRunner._apply_together: one mark per projection of the pass
        "UPDATE projection_tracking SET position = ? WHERE position = ? AND name IN ({})": (
            lambda: [
                "UPDATE projection_tracking SET position = ? WHERE position = ? "
                "AND name IN (?, ?, ?)"
            ]
        ),
        # WebhookDispatcher: the lease and the delivered mark, by id list (PostgreSQL)
        "UPDATE webhook_deliveries SET leased_until = ?, lease_owner = ? WHERE webhook_id ": (
            lambda: [dispatcher._LEASE + "= ANY(?::text[])"]
        ),
        "UPDATE webhook_deliveries SET state = 'delivered'": lambda: [
            dispatcher._DELIVERED + "= ANY(?::text[])"
        ],
    }


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(SRC).with_suffix("").parts)


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
        ):
            found.add(id(body[0].value))
    return found


def _text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    return None


def _module_constants(tree: ast.Module) -> dict[int, str]:
    """id(value node) -> the name it is assigned to, for module-level assignments whose
    value is, or contains, a statement literal."""
    names: dict[int, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                for inner in ast.walk(node.value):
                    names[id(inner)] = target.id
    return names


def _parts_of_fstrings(tree: ast.AST) -> set[int]:
    return {
        id(part)
        for node in ast.walk(tree)
        if isinstance(node, ast.JoinedStr)
        for part in node.values
    }


def statements(recorder: Any, conn: Any) -> Iterator[Found]:
    renderings = _renderings(recorder, conn)
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree) | _parts_of_fstrings(tree)
        constants = _module_constants(tree)
        module = None
        for node in ast.walk(tree):
            text = _text(node)
            if text is None or id(node) in docs or not _STATEMENT.match(text):
                continue
            where = f"{path.relative_to(SRC.parent)}:{node.lineno}"
            rendered = next((r for start, r in renderings.items() if text.startswith(start)), None)
            if rendered is not None:
                yield Found(where, text, tuple(rendered()))
                continue
            name = constants.get(id(node))
            if name is not None:  # as the module computes it
                module = module or importlib.import_module(_module_name(path))
                value = getattr(module, name)
                if isinstance(value, str) and _STATEMENT.match(value):
                    text = value
            if isinstance(node, ast.JoinedStr) and name is None:
                yield Found(where, text, ())  # formatted at run time: needs a rendering
                continue
            yield Found(where, text, (_keys(text) if "{keys}" in text else text,))


_PLACEHOLDER = re.compile(r"\?|%[sb]")


def numbered(sql: str) -> str:
    """``?``, ``%s`` and ``%b`` placeholders as ``$1``, ``$2``, ... (``$n`` kept)."""
    counter = iter(range(1, 1000))
    return _PLACEHOLDER.sub(lambda _: f"${next(counter)}", sql)


def plan(conn: Any, sql: str) -> dict[str, Any]:
    """The generic plan of ``sql`` (JSON, as EXPLAIN gives it); nothing is executed."""
    conn.execute(f"PREPARE planned AS {numbered(sql)}")
    count = conn.execute(
        "SELECT cardinality(parameter_types) FROM pg_prepared_statements WHERE name = 'planned'"
    ).fetchone()[0]
    args = ", ".join("NULL" for _ in range(count))
    row = conn.execute(
        f"EXPLAIN (FORMAT JSON) EXECUTE planned{f'({args})' if count else ''}"
    ).fetchone()
    document = row[0] if not isinstance(row[0], str) else json.loads(row[0])
    conn.execute("DEALLOCATE planned")
    return document[0]["Plan"]


def nodes(node: dict[str, Any], parents: tuple[str, ...] = ()) -> Iterator[tuple[dict, tuple]]:
    """Every plan node with the node types above it."""
    yield node, parents
    for child in node.get("Plans", []):
        yield from nodes(child, (*parents, node["Node Type"]))


def full_scans(root: dict[str, Any], growing: set[str]) -> list[str]:
    """The scans that read a growing table whole: a sequential scan, or an index scan
    with no index condition that no LIMIT stops early."""
    bad = []
    for node, parents in nodes(root):
        relation = node.get("Relation Name")
        if relation not in growing:
            continue
        kind = node["Node Type"]
        if kind == "Seq Scan":
            bad.append(f"Seq Scan on {relation}")
        elif (
            kind in ("Index Scan", "Index Only Scan")
            and not node.get("Index Cond")
            and "Limit" not in parents
        ):
            bad.append(f"{kind} of all of {relation} ({node.get('Index Name')})")
    return bad


def fill(conn: Any, schema: str, rows: int) -> None:
    """``rows`` generated rows in every table of ``schema`` (distinct values in every
    column, so every key and index is as selective as it can be), then ANALYZE."""
    columns = conn.execute(
        "SELECT table_name, column_name, data_type, column_default FROM "
        "information_schema.columns WHERE table_schema = %s ORDER BY table_name, "
        "ordinal_position",
        (schema,),
    ).fetchall()
    by_table: dict[str, list[tuple[str, str]]] = {}
    for table, column, kind, default in columns:
        if default is not None and default.startswith("nextval("):
            continue  # a serial: its own values
        by_table.setdefault(table, []).append((column, kind))
    values = {
        "text": "'v' || i",
        "bigint": "i",
        "integer": "i",
        "double precision": "i::float8",
        "bytea": "convert_to('v' || i, 'UTF8')",
        "uuid": "md5(i::text)::uuid",
    }
    for table, cols in by_table.items():
        names = ", ".join(f'"{c}"' for c, _ in cols)
        exprs = ", ".join(values[kind] for _, kind in cols)
        conn.execute(
            f'INSERT INTO "{schema}"."{table}" ({names}) '  # noqa: S608 - catalog names
            f"SELECT {exprs} FROM generate_series(1, {int(rows)}) AS i"
        )
        conn.execute(f'ANALYZE "{schema}"."{table}"')


def library_statements(recorder: Any, conn: Any) -> list[str]:
    """The statements eventsourcing's PostgreSQL recorder composes per call, in the forms
    the platform uses: the log's head, a page of the log (projections, the hash chain,
    ``projections status``), and an aggregate's events (whole, or after a version the
    fairness cache holds)."""
    from psycopg.sql import SQL, Identifier

    table = SQL("{}.{}").format(
        Identifier(recorder.datastore.schema), Identifier(recorder.events_table_name)
    )
    events = recorder.select_events_statement
    composed = [
        recorder.max_notification_id_statement,
        SQL("SELECT * FROM {} WHERE notification_id>=%s ORDER BY notification_id LIMIT %s").format(
            table
        ),
        SQL(
            "SELECT * FROM {} WHERE notification_id>=%s AND notification_id <= %s "
            "ORDER BY notification_id LIMIT %s"
        ).format(table),
        events + SQL(" ORDER BY originator_version ASC"),
        events + SQL(" AND originator_version > %s ORDER BY originator_version ASC"),
        events + SQL(" ORDER BY originator_version DESC LIMIT %s"),
    ]
    return [statement.as_string(conn) for statement in composed]

"""PostgreSQL: a batch's writes to one table as one statement over arrays.

``executemany`` in a pipeline still costs Python work per row in psycopg. On PostgreSQL
the projections send a table's rows instead as one array per column to a statement of
fixed text (``INSERT ... SELECT ... FROM unnest(%b::bigint[], ...)``, ``UPDATE ... FROM
unnest(...)``, ``DELETE ... WHERE key = ANY(...)``), which psycopg prepares once. The
arrays go in binary (``%b``, left alone by the ``?`` translation): psycopg composes a text
array literal in Python, escaping every element, which for the JSON columns cost more
than the ``executemany`` it replaces. SQLite keeps the statements in event order
(``execute_in_order``).

One statement must not touch a key twice (``ON CONFLICT DO UPDATE`` refuses that, and an
``UPDATE ... FROM`` would apply only one of the rows), so the batch's ordered statements
on a table are first reduced to their net effect, per key, where that is provably the
same (the functions below say why); where it is not, the caller keeps the ordered path.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any


def on_postgres(cur: Any) -> bool:
    """Whether ``cur`` is the PostgreSQL cursor (SQLite's has no ``pipeline``)."""
    return getattr(cur, "pipeline", None) is not None


def columns(rows: Sequence[Sequence[Any]]) -> list[list[Any]]:
    """The rows as one list per column (the arrays of an ``unnest``)."""
    return [list(column) for column in zip(*rows, strict=True)]


def floats(values: Iterable[Any]) -> list[float | None]:
    """A ``double precision[]`` column: psycopg refuses a list mixing int and float; the
    float of an int is what PostgreSQL's cast to double precision gives too."""
    return [None if value is None else float(value) for value in values]


def first_per_key(rows: Iterable[Sequence[Any]], key: Callable[[Sequence[Any]], Hashable]) -> list:
    """``INSERT ... ON CONFLICT DO NOTHING`` rows of a table the batch deletes nothing
    from: after a key's first insert the key exists (inserted, or there already), so its
    later inserts do nothing. The first row per key, in order."""
    seen: dict[Hashable, Sequence[Any]] = {}
    for row in rows:
        seen.setdefault(key(row), row)
    return list(seen.values())


def last_per_key(rows: Iterable[Sequence[Any]], key: Callable[[Sequence[Any]], Hashable]) -> list:
    """Statements that each overwrite the same columns of a key's row with values of their
    own (an upsert of every column, an ``UPDATE`` setting constants): the last one per key
    is the net effect."""
    last: dict[Hashable, Sequence[Any]] = {}
    for row in rows:
        last[key(row)] = row
    return list(last.values())


def net_insert_delete(
    ops: Iterable[tuple[bool, Hashable, Sequence[Any] | None]],
) -> tuple[list[Hashable], list[Sequence[Any]]]:
    """Ordered ``(is_insert, key, row)`` on one table keyed by ``key`` alone, an insert
    being ``ON CONFLICT (key) DO NOTHING`` and a delete ``WHERE key = ?``: the keys to
    delete and then the rows to insert (``DO NOTHING``) for the same table afterwards.

    For a key deleted in the batch: after its last delete, the first insert lands and the
    later ones do nothing; so delete it, then insert that first row (if any). A key never
    deleted: only its first insert can land (as in ``first_per_key``)."""
    deleted: dict[Hashable, None] = {}
    rows: dict[Hashable, Sequence[Any] | None] = {}  # None: deleted, nothing inserted since
    for is_insert, key, row in ops:
        if is_insert:
            if rows.get(key) is None:
                rows[key] = row
        else:
            deleted[key] = None
            rows[key] = None
    return list(deleted), [row for row in rows.values() if row is not None]


def net_upsert_delete(
    ops: Iterable[tuple[bool, Hashable, Sequence[Any] | None]],
) -> tuple[list[Hashable], list[Sequence[Any]]]:
    """Ordered ``(is_upsert, key, row)`` on one table keyed by ``key`` alone, an upsert
    overwriting every other column (``ON CONFLICT (key) DO UPDATE SET`` all of them) and a
    delete ``WHERE key = ?``: the keys to delete and then the rows to upsert. A key ends
    as its last statement left it: absent after a delete, the last upsert's row after an
    upsert; deleting every key deleted in the batch first changes neither."""
    deleted: dict[Hashable, None] = {}
    rows: dict[Hashable, Sequence[Any] | None] = {}
    for is_upsert, key, row in ops:
        if is_upsert:
            rows[key] = row
        else:
            deleted[key] = None
            rows[key] = None
    return list(deleted), [row for row in rows.values() if row is not None]


def column_types(ddl: str, names: Sequence[str]) -> tuple[str, ...]:
    """The SQL types of ``names`` as ``ddl`` (a ``CREATE TABLE``) declares them."""
    found = dict(re.findall(r"^\s*(\w+) (TEXT|BIGINT|INTEGER|DOUBLE PRECISION)\b", ddl, re.M))
    return tuple(found[name].lower() for name in names)


def insert_sql(table: str, names: Sequence[str], types: Sequence[str], conflict: str) -> str:
    """``INSERT INTO table (names) SELECT * FROM unnest(one array per column) conflict``."""
    marks = ", ".join(f"%b::{kind}[]" for kind in types)
    return f"INSERT INTO {table} ({', '.join(names)}) SELECT * FROM unnest({marks}) {conflict}"  # noqa: S608


def arrays(rows: Sequence[Sequence[Any]], types: Sequence[str]) -> list[list[Any]]:
    """The rows as the arrays of an ``unnest`` over columns of ``types``."""
    return [
        floats(column) if kind == "double precision" else column
        for column, kind in zip(columns(rows), types, strict=True)
    ]

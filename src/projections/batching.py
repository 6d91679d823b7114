"""Helpers for the projections' ``process_batch``: read the rows a batch needs in a few
queries instead of one per event."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

CHUNK = 400  # keys per query: below SQLite's bound-parameter limit on any version


def select_in(cur: Any, sql: str, keys: Iterable[Any]) -> list[Any]:
    """The rows of ``sql`` (with one ``{keys}`` where a ``?, ?, ...`` list goes) for all
    ``keys``, queried in chunks; no query when there are none."""
    unique = list(dict.fromkeys(keys))
    rows: list[Any] = []
    for start in range(0, len(unique), CHUNK):
        chunk = unique[start : start + CHUNK]
        cur.execute(sql.format(keys=", ".join("?" for _ in chunk)), tuple(chunk))
        rows.extend(cur.fetchall())
    return rows

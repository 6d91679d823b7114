"""What a cancelled round (decisions §11) changes in the analyst tables (``analytics.py``
applies it): its bet came back and its items were taken back, so it no longer counts.

- ``analytics_rounds``: its fact row is removed (the table is the rounds that stand);
- ``analytics_daily``: its increments are subtracted from its settle day's row, the
  ratios recomputed, and a row left with no round removed;
- ``analytics_item_flows``: each of its items gets a ``cancelled`` movement (``MOVES`` in
  ``analytics.py``), referencing the round.
A held round still counts: its cancel may never complete (a refused credit leaves it
held until a new cancel), and its bet stays with the operator until it does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from eventsourcing.utils import get_topic

from domain.round import Round
from projections.analytics_facts import daily_increments
from projections.analytics_tables import (
    _DROP_EMPTY,
    _UNFACT,
    DAILY_KEY_OF_FACT,
    DAILY_SUMS,
    FACT_COLUMNS,
)
from projections.batching import select_in

CANCELLED = get_topic(Round.RoundCancelled)
_FACTS = f"SELECT {', '.join(FACT_COLUMNS)} FROM analytics_rounds WHERE round_id IN ({{keys}})"  # noqa: S608


def recorded_facts(cur: Any, round_ids: list[str]) -> dict[str, dict[str, Any]]:
    """The fact rows of ``round_ids`` that ``analytics_rounds`` holds."""
    rows = select_in(cur, _FACTS, round_ids)
    return {row[0]: dict(zip(FACT_COLUMNS, row, strict=True)) for row in rows}


def daily_key(fact: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(fact[c] for c in DAILY_KEY_OF_FACT)


def signed_increments(fact: dict[str, Any], sign: int) -> list[int]:
    """The fact's daily sums in ``DAILY_SUMS`` order, added (1) or taken back (-1)."""
    sums = daily_increments(fact)
    return [sign * sums[column] for column in DAILY_SUMS]


def add_to_day(daily: dict[tuple[Any, ...], list[Any]], fact: dict[str, Any], sign: int) -> None:
    """A batch's daily sums: the fact's increments added to its key's (``sign`` -1: taken
    back), upserted once per key at the end of the batch."""
    key, sums = daily_key(fact), signed_increments(fact, sign)
    entry = daily.get(key)
    if entry is None:
        daily[key] = [fact["currency_exponent"], *sums]
    else:
        for index, value in enumerate(sums, start=1):
            entry[index] += value


def take_back(
    cur: Any, round_id: str, add_daily: Callable[[Any, dict[str, Any], int], None]
) -> None:
    """One cancelled round, alone (``Analytics.process``): its fact row removed, its
    increments taken back from its day (``add_daily``), the day's row removed if empty."""
    fact = recorded_facts(cur, [round_id]).get(round_id)
    if fact is not None:
        cur.execute(_UNFACT, (round_id,))
        add_daily(cur, fact, -1)
        cur.execute(_DROP_EMPTY, daily_key(fact))

"""What a cancelled round (decisions §11) changes in the analyst tables (``analytics.py``
applies it): its bet came back and its items were taken back, so it no longer counts.

- its fact row (``analytics_rounds``, or ``analytics_box_rounds`` for a box round) is
  removed: those tables are the rounds that stand;
- its increments are taken back from the daily rows it added to (``analytics_daily`` for
  an Upgrader round, ``analytics_game_daily``, ``analytics_box_daily`` for a box round),
  with the batch's other sums (their ratios recomputed), and a row left with no round is
  removed;
- each of its items gets a ``cancelled`` movement in ``analytics_item_flows`` (``MOVES``
  in ``analytics.py``), referencing the round.
A held round still counts: its cancel may never complete (a refused credit leaves it held
until a new cancel), and its bet stays with the operator until it does.
"""

from __future__ import annotations

from typing import Any

from eventsourcing.utils import get_topic

from domain.round import Round
from projections.analytics_boxes import (
    BOX_FACT_COLUMNS,
    BOX_KEY_OF_FACT,
    BOXES,
    DailySums,
    box_increments,
    box_sums,
    game_sums,
)
from projections.analytics_facts import daily_increments
from projections.analytics_tables import (
    _DAILY,
    _RATIOS,
    DAILY_KEY_OF_FACT,
    DAILY_SUMS,
    FACT_COLUMNS,
)
from projections.batching import select_in

CANCELLED = get_topic(Round.RoundCancelled)
# what a movement's ``reference`` is, for the movements whose event names it plainly
REFERENCE = {"shipping_requested": "shipment_public_id", "cancelled": "round_public_id"}

_UPGRADER_FACTS = (
    f"SELECT {', '.join(FACT_COLUMNS)} FROM analytics_rounds "  # noqa: S608 - our own names
    "WHERE round_id IN ({keys})"
)
_BOX_FACTS = (
    f"SELECT {', '.join(BOX_FACT_COLUMNS)} FROM analytics_box_rounds "  # noqa: S608
    "WHERE round_id IN ({keys})"
)
_UPGRADER_UNFACT = "DELETE FROM analytics_rounds WHERE round_id = ?"
_BOX_UNFACT = "DELETE FROM analytics_box_rounds WHERE round_id = ?"
_FACTS = {
    "upgrader": (FACT_COLUMNS, _UPGRADER_FACTS, _UPGRADER_UNFACT),
    BOXES: (BOX_FACT_COLUMNS, _BOX_FACTS, _BOX_UNFACT),
}
# a daily row left with no round (its key's columns, as DAILY_KEY, GAME_KEY and BOX_KEY)
DROP_DAILY = (
    "DELETE FROM analytics_daily WHERE operator_id = ? AND day = ? AND currency = ? "
    "AND mode = ? AND chance_bps = ? AND rounds = 0"
)
DROP_GAME_DAILY = (
    "DELETE FROM analytics_game_daily WHERE operator_id = ? AND day = ? AND currency = ? "
    "AND game = ? AND mode = ? AND rounds = 0"
)
DROP_BOX_DAILY = (
    "DELETE FROM analytics_box_daily WHERE operator_id = ? AND day = ? AND currency = ? "
    "AND box_id = ? AND box_version_id = ? AND rounds = 0"
)


def recorded_facts(cur: Any, round_ids: list[str]) -> dict[str, tuple[str, dict[str, Any]]]:
    """round id -> (game, its fact row) for the rounds the fact tables hold."""
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for game, (names, select, _) in _FACTS.items():
        for row in select_in(cur, select, round_ids):
            found[row[0]] = (game, dict(zip(names, row, strict=True)))
    return found


def add_to_day(daily: dict[tuple[Any, ...], list[Any]], fact: dict[str, Any], sign: int) -> None:
    """A batch's ``analytics_daily`` sums: an Upgrader fact's increments added to its key's
    (``sign`` -1: taken back), upserted once per key at the end of the batch."""
    sums = daily_increments(fact)
    key, values = tuple(fact[c] for c in DAILY_KEY_OF_FACT), [sign * sums[s] for s in DAILY_SUMS]
    entry = daily.get(key)
    if entry is None:
        daily[key] = [fact["currency_exponent"], *values]
    else:
        for index, value in enumerate(values, start=1):
            entry[index] += value


def take_back(
    game: str,
    fact: dict[str, Any],
    daily: dict[tuple[Any, ...], list[Any]],
    games: DailySums,
    boxes: DailySums,
) -> tuple[tuple[str, tuple[Any, ...]], list[tuple[str, tuple[Any, ...]]]]:
    """A cancelled round's fact: its increments taken back in the batch's sums; answers the
    delete of its fact row (now) and the removals of emptied rows (after the sums)."""
    bet, paid = fact["bet_minor"], fact["payout_minor"]
    day = (fact["operator_id"], fact["settled_day"], fact["currency"])
    game_key = (*day, game, fact.get("mode", "balance"))
    back = {"rounds": -1, "wagered_minor": -bet, "paid_out_minor": -paid, "ggr_minor": paid - bet}
    games.add(game_key, [fact["currency_exponent"]], back)
    drops = [(DROP_GAME_DAILY, game_key)]
    if game == BOXES:
        box_key = tuple(fact[c] for c in BOX_KEY_OF_FACT)
        fixed = [fact["currency_exponent"], fact["base_currency"], fact["total_tickets"]]
        boxes.add(box_key, fixed, {k: -v for k, v in box_increments(fact).items()})
        drops.append((DROP_BOX_DAILY, box_key))
    else:
        add_to_day(daily, fact, -1)
        drops.append((DROP_DAILY, tuple(fact[c] for c in DAILY_KEY_OF_FACT)))
    return (_FACTS[game][2], (fact["round_id"],)), drops


class BatchCancels:
    """The cancels of one batch (``Analytics.process_batch``): the facts they take back,
    read before any write or kept as the batch's own settles make them."""

    def __init__(self, cur: Any, items: list[Any]) -> None:
        self.rounds = {
            i.event.originator_id.hex for i in items if i.notification.topic == CANCELLED
        }
        self.facts = recorded_facts(cur, sorted(self.rounds))
        self.drops: list[tuple[str, tuple[Any, ...]]] = []

    def settled(self, round_id: str, game: str, fact: dict[str, Any]) -> None:
        if round_id in self.rounds:
            self.facts[round_id] = (game, fact)

    def cancelled(
        self, event: Any, daily: dict[tuple[Any, ...], list[Any]], games: Any, boxes: Any
    ) -> list[tuple[str, tuple[Any, ...]]]:
        found = self.facts.pop(event.originator_id.hex, None)
        if found is None:
            return []  # not a round the tables hold (or taken back already)
        delete, drops = take_back(*found, daily, games, boxes)
        self.drops += drops
        return [delete]


def take_back_alone(cur: Any, round_id: str) -> None:
    """One cancelled round, alone (``Analytics.process``, event by event)."""
    found = recorded_facts(cur, [round_id]).get(round_id)
    if found is None:
        return
    daily: dict[tuple[Any, ...], list[Any]] = {}
    games, boxes = game_sums(), box_sums()
    delete, drops = take_back(*found, daily, games, boxes)
    statements = [delete, *((_DAILY, (*key, *entry)) for key, entry in daily.items())]
    statements += [(_RATIOS, key) for key in daily] + games.statements() + boxes.statements()
    for sql, params in [*statements, *drops]:
        cur.execute(sql, params)

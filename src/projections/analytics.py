"""Analyst read models (``docs/analytics.md`` documents each table with example SQL).

One projection, ``analytics``, keeps in one transaction per batch:

* ``analytics_rounds``: the rounds fact table, one row per settled Upgrader round (a
  cancelled round is taken back from every table: ``analytics_cancels.py``);
* ``analytics_item_flows``: one row per item movement (granted, consumed, cashed_back,
  shipping_requested, shipped);
* ``analytics_daily``: per operator, UTC day (of the settle time), currency, mode and
  chance preset: rounds, wagered, paid out, GGR, Nuggets, realised and theoretical RTP;
* ``analytics_game_daily`` (every game), ``analytics_box_rounds`` and
  ``analytics_box_daily`` (box rounds): ``analytics_boxes.py``;
* two internal staging tables: ``analytics_open_rounds`` (the opening of a round until it
  settles or is voided) and ``analytics_stakes`` (what a staked item counted for, until
  its ``ItemConsumed`` is seen).

Only portable SQL (``?`` placeholders, ``INSERT ... ON CONFLICT``, ``BIGINT``,
``DOUBLE PRECISION``), so the same statements run on SQLite and PostgreSQL. Amounts are
integers in minor units of the row's currency; ratios are ``DOUBLE PRECISION``.

Theoretical RTP (decisions §2): the band's upper bound is
``floor(W * ((10000 - e) * 100 - (10000 - p) * c) / (p * 100))``, so a round aimed at the
top of the band returns ``p * upper / W = (1 - e) - (1 - p) * c`` in items, plus Nuggets
worth ``W`` on the ``1 - p`` losses, which cost the operator ``c``: in total ``1 - e``.
``theoretical_rtp`` is that total, ``(10000 - feeBps) / 10000`` (wager-weighted when the
fee changed within a day); ``theoretical_item_rtp`` is the items part alone
(``= theoretical_rtp`` without no-loss), the one to compare with ``realised_rtp`` =
paid / wagered. ``realised_rtp_with_nuggets`` adds the Nuggets at cost ``c``.
``expected_rtp`` is ``sum(p * target value) / wagered`` for the targets actually chosen
(lower in the band gives less, down to 10/11 of the upper bound).

The tables' DDL and statements are in ``analytics_tables.py``, the rows computed from
events in ``analytics_facts.py``, the report's reading in ``analytics_report.py``.
"""

from __future__ import annotations

import json
from typing import Any

from eventsourcing.utils import get_topic

from application.store.sql import execute_in_order
from domain.inventory import InventoryItem
from domain.round import Round, game_of
from projections import analytics_cancels as cancels
from projections.analytics_boxes import (
    BOX_FACT,
    BOX_FACT_COLUMNS,
    BOXES,
    add_round,
    box_fact,
    box_sums,
    game_sums,
)
from projections.analytics_boxes import SCHEMA as BOX_SCHEMA
from projections.analytics_facts import _flow_row, _json, daily_increments, round_fact
from projections.analytics_tables import (
    _CLOSE,
    _DAILY,
    _FACT,
    _FLOW,
    _GRANT_FIELDS,
    _OPEN,
    _RATIOS,
    _STAKE,
    _UNSTAKE,
    DAILY_KEY_OF_FACT,
    DAILY_SUMS,
    FACT_COLUMNS,
    FLOW_COLUMNS,
    SCHEMA,
    _write_unnest,
)
from projections.batching import select_in
from projections.unnest import on_postgres

OPENED = get_topic(Round.Opened)
SETTLED = get_topic(Round.RoundSettled)
VOIDED = get_topic(Round.RoundVoided)
GRANTED = get_topic(InventoryItem.ItemGranted)
MOVES = {
    get_topic(InventoryItem.ItemConsumed): "consumed",
    get_topic(InventoryItem.ItemCashedBack): "cashed_back",
    get_topic(InventoryItem.ItemShippingRequested): "shipping_requested",
    get_topic(InventoryItem.ItemShipped): "shipped",
    get_topic(InventoryItem.ItemCancelled): "cancelled",  # with its round (decisions §11)
}
MOVEMENTS = ("granted", *MOVES.values())


class Analytics:
    name = "analytics"
    topics = frozenset({OPENED, SETTLED, VOIDED, GRANTED, cancels.CANCELLED, *MOVES})
    schema = [*SCHEMA, *BOX_SCHEMA]

    def process(self, cur: Any, event: Any, position: int) -> None:
        topic = get_topic(type(event))
        if topic == OPENED:
            self._opened(cur, event, position)
        elif topic == SETTLED:
            self._settled(cur, event, position)
        elif topic == VOIDED:
            cur.execute(
                "DELETE FROM analytics_open_rounds WHERE round_id = ?", (event.originator_id.hex,)
            )
        elif topic == GRANTED:
            self._granted(cur, event, position)
        elif topic == cancels.CANCELLED:
            cancels.take_back_alone(cur, event.originator_id.hex)
        else:
            self._moved(cur, event, position, MOVES[topic])

    def process_batch(self, cur: Any, items: list[Any], after: int) -> None:
        """As ``process`` per item. What the events read back (open rounds, rounds already
        recorded, granted flows, stakes) is fetched in a few queries before any write and
        kept up to date in memory as the batch's own events change it; the daily sums are
        added up here and upserted once per key; the other writes go in event order,
        pipelined."""
        round_ids, settled, moved = [], [], []
        for item in items:
            topic = item.notification.topic
            if topic in (OPENED, SETTLED, VOIDED):
                round_ids.append(item.event.originator_id.hex)
                if topic == SETTLED:
                    settled.append(item.event.originator_id.hex)
            elif topic not in (GRANTED, cancels.CANCELLED):
                moved.append(item.event.originator_id.hex)
        open_rounds: dict[str, str | None] = dict(
            select_in(
                cur,
                "SELECT round_id, opening FROM analytics_open_rounds WHERE round_id IN ({keys})",
                round_ids,
            )
        )
        recorded = {
            row[0]
            for table in ("analytics_rounds", "analytics_box_rounds")
            for row in select_in(
                cur,
                f"SELECT round_id FROM {table} WHERE round_id IN ({{keys}})",  # noqa: S608
                settled,
            )
        }
        granted: dict[str, tuple[Any, ...]] = {}
        for row in select_in(
            cur,
            "SELECT aggregate_id, inventory_item_id, operator_id, player_external_id, item_id, "
            "value_minor, currency, value_base_minor, base_currency FROM analytics_item_flows "
            "WHERE movement = 'granted' AND aggregate_id IN ({keys})",
            moved,
        ):
            granted.setdefault(row[0], tuple(row[1:]))
        item_ids = {granted[a][0] for a in moved if a in granted}
        item_ids.update(
            it.event.grant["inventory_item_id"] for it in items if it.notification.topic == GRANTED
        )
        stakes: dict[Any, tuple[Any, ...] | None] = {
            row[0]: tuple(row[1:])
            for row in select_in(
                cur,
                "SELECT inventory_item_id, round_public_id, value_minor, currency "
                "FROM analytics_stakes WHERE inventory_item_id IN ({keys})",
                sorted(item_ids),
            )
        }
        statements: list[tuple[str, tuple[Any, ...]]] = []
        daily: dict[tuple[Any, ...], list[Any]] = {}
        games, boxes, cancelled = game_sums(), box_sums(), cancels.BatchCancels(cur, items)
        for item in items:
            event, position, topic = item.event, item.position, item.notification.topic
            if topic == OPENED:
                round_id, opening = event.originator_id.hex, event.opening
                text = _json(opening)
                statements.append((_OPEN, (round_id, text)))
                if open_rounds.get(round_id) is None:
                    open_rounds[round_id] = text
                for staked in (opening.get("stake") or {}).get("items") or []:
                    row = (
                        staked["inventoryItemId"],
                        opening["public_id"],
                        staked["valueMinor"],
                        staked.get("currency") or opening["currency"],
                    )
                    statements.append((_STAKE, row))
                    stakes[row[0]] = row[1:]
            elif topic == SETTLED:
                round_id = event.originator_id.hex
                stored = open_rounds.get(round_id)
                if stored is None or round_id in recorded:
                    continue  # no opening (the auditor reports it), or recorded already
                opening = json.loads(stored)
                game = game_of(opening)
                recorded.add(round_id)
                statements.append((_CLOSE, (round_id,)))
                open_rounds[round_id] = None
                if game == BOXES:
                    fact = {"round_id": round_id, **box_fact(opening, event.settlement)}
                    fact["position"] = position
                    statements.append((BOX_FACT, tuple(fact[c] for c in BOX_FACT_COLUMNS)))
                    add_round(games, boxes, game, fact)
                    cancelled.settled(round_id, game, fact)
                    continue
                fact = {"round_id": round_id, **round_fact(opening, event.settlement)}
                fact["position"] = position
                statements.append((_FACT, tuple(fact[c] for c in FACT_COLUMNS)))
                add_round(games, boxes, game, fact)
                cancels.add_to_day(daily, fact, 1)
                cancelled.settled(round_id, game, fact)
            elif topic == cancels.CANCELLED:  # the round no longer counts
                statements += cancelled.cancelled(event, daily, games, boxes)
            elif topic == VOIDED:
                round_id = event.originator_id.hex
                statements.append((_CLOSE, (round_id,)))
                open_rounds[round_id] = None
            elif topic == GRANTED:
                grant = event.grant
                at = float(grant.get("granted_at") or event.timestamp.timestamp())
                row = _flow_row(
                    position,
                    event.originator_id.hex,
                    grant,
                    "granted",
                    grant["value_minor"],
                    grant["currency"],
                    grant.get("round_public_id"),
                    at,
                )
                statements.append((_FLOW, row))
                granted.setdefault(row[2], (row[1], *row[3:6], *row[7:11]))
            else:
                aggregate_id = event.originator_id.hex
                found = granted.get(aggregate_id)
                if found is None:
                    continue  # a move of an item never granted: the auditor reports it
                grant = dict(zip(_GRANT_FIELDS, found, strict=True))
                movement = MOVES[topic]
                at = float(getattr(event, "at", None) or event.timestamp.timestamp())
                amount, currency, reference = found[4], found[5], None
                if movement == "consumed":
                    reference = event.round_public_id
                    staked = stakes.get(found[0])
                    if staked is not None and staked[0] == reference:
                        amount, currency = staked[1], staked[2]
                        statements.append((_UNSTAKE, (found[0],)))
                        stakes[found[0]] = None
                elif movement == "cashed_back":
                    amount, currency = event.credited_minor, event.currency
                    reference = event.cashout_public_id
                elif movement in cancels.REFERENCE:
                    reference = getattr(event, cancels.REFERENCE[movement])
                statements.append(
                    (
                        _FLOW,
                        _flow_row(
                            position, aggregate_id, grant, movement, amount, currency, reference, at
                        ),
                    )
                )
        for key, entry in daily.items():
            statements.append((_DAILY, (*key, *entry)))
        for key in daily:
            statements.append((_RATIOS, key))
        statements += games.statements() + boxes.statements() + cancelled.drops
        if on_postgres(cur):
            _write_unnest(cur, statements)
        else:
            execute_in_order(cur, statements)

    # -- rounds -----------------------------------------------------------------------------

    def _opened(self, cur: Any, event: Any, position: int) -> None:
        opening = event.opening
        cur.execute(
            "INSERT INTO analytics_open_rounds (round_id, opening) VALUES (?, ?) "
            "ON CONFLICT (round_id) DO NOTHING",
            (event.originator_id.hex, _json(opening)),
        )
        stake = opening.get("stake") or {}
        for item in stake.get("items") or []:
            cur.execute(
                "INSERT INTO analytics_stakes (inventory_item_id, round_public_id, value_minor, "
                "currency) VALUES (?, ?, ?, ?) ON CONFLICT (inventory_item_id) DO UPDATE SET "
                "round_public_id = excluded.round_public_id, value_minor = excluded.value_minor, "
                "currency = excluded.currency",
                (
                    item["inventoryItemId"],
                    opening["public_id"],
                    item["valueMinor"],
                    item.get("currency") or opening["currency"],
                ),
            )

    def _settled(self, cur: Any, event: Any, position: int) -> None:
        round_id = event.originator_id.hex
        cur.execute("SELECT opening FROM analytics_open_rounds WHERE round_id = ?", (round_id,))
        row = cur.fetchone()
        if row is None:
            return  # a settle without an opening: the auditor reports it
        opening = json.loads(row[0])
        game = game_of(opening)
        facts = (box_fact, BOX_FACT_COLUMNS) if game == BOXES else (round_fact, FACT_COLUMNS)
        fact = {"round_id": round_id, **facts[0](opening, event.settlement)}
        fact["position"] = position
        cur.execute(BOX_FACT if game == BOXES else _FACT, tuple(fact[c] for c in facts[1]))
        if cur.rowcount == 0:
            return
        cur.execute("DELETE FROM analytics_open_rounds WHERE round_id = ?", (round_id,))
        games, boxes = game_sums(), box_sums()
        add_round(games, boxes, game, fact)
        for sql, params in games.statements() + boxes.statements():
            cur.execute(sql, params)
        if game != BOXES:
            self._add_daily(cur, fact)

    def _add_daily(self, cur: Any, fact: dict[str, Any]) -> None:
        key = tuple(fact[c] for c in DAILY_KEY_OF_FACT)
        sums = daily_increments(fact)
        cur.execute(_DAILY, (*key, fact["currency_exponent"], *(sums[s] for s in DAILY_SUMS)))
        cur.execute(_RATIOS, key)

    # -- items ------------------------------------------------------------------------------

    def _granted(self, cur: Any, event: Any, position: int) -> None:
        grant = event.grant
        at = float(grant.get("granted_at") or event.timestamp.timestamp())
        self._flow(
            cur,
            position,
            event.originator_id.hex,
            grant,
            "granted",
            grant["value_minor"],
            grant["currency"],
            grant.get("round_public_id"),
            at,
        )

    def _moved(self, cur: Any, event: Any, position: int, movement: str) -> None:
        aggregate_id = event.originator_id.hex
        cur.execute(
            "SELECT inventory_item_id, operator_id, player_external_id, item_id, value_minor, "
            "currency, value_base_minor, base_currency FROM analytics_item_flows "
            "WHERE aggregate_id = ? AND movement = 'granted'",
            (aggregate_id,),
        )
        row = cur.fetchone()
        if row is None:
            return  # a move of an item never granted: the auditor reports it
        grant = {
            "inventory_item_id": row[0],
            "operator_id": row[1],
            "player_external_id": row[2],
            "item_id": row[3],
            "value_minor": row[4],
            "currency": row[5],
            "grant_value_base_minor": row[6],
            "base_currency": row[7],
        }
        at = float(getattr(event, "at", None) or event.timestamp.timestamp())
        amount, currency, reference = row[4], row[5], None
        if movement == "consumed":
            reference = event.round_public_id
            cur.execute(
                "SELECT value_minor, currency FROM analytics_stakes WHERE inventory_item_id = ? "
                "AND round_public_id = ?",
                (row[0], reference),
            )
            staked = cur.fetchone()
            if staked is not None:
                amount, currency = staked[0], staked[1]
                cur.execute("DELETE FROM analytics_stakes WHERE inventory_item_id = ?", (row[0],))
        elif movement == "cashed_back":
            amount, currency = event.credited_minor, event.currency
            reference = event.cashout_public_id
        elif movement in cancels.REFERENCE:
            reference = getattr(event, cancels.REFERENCE[movement])
        self._flow(cur, position, aggregate_id, grant, movement, amount, currency, reference, at)

    def _flow(
        self,
        cur: Any,
        position: int,
        aggregate_id: str,
        grant: dict[str, Any],
        movement: str,
        amount: int | None,
        amount_currency: str | None,
        reference: str | None,
        at: float,
    ) -> None:
        cur.execute(
            f"INSERT INTO analytics_item_flows ({', '.join(FLOW_COLUMNS)}) "  # noqa: S608
            f"VALUES ({', '.join('?' for _ in FLOW_COLUMNS)}) ON CONFLICT (position) DO NOTHING",
            _flow_row(
                position, aggregate_id, grant, movement, amount, amount_currency, reference, at
            ),
        )

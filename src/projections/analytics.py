"""Analyst read models (``docs/analytics.md`` documents each table with example SQL).

One projection, ``analytics``, keeps in one transaction per batch:

* ``analytics_rounds``: the rounds fact table, one row per settled round;
* ``analytics_item_flows``: one row per item movement (granted, consumed, cashed_back,
  shipping_requested, shipped);
* ``analytics_daily``: per operator, UTC day (of the settle time), currency, mode and
  chance preset: rounds, wagered, paid out, GGR, Nuggets, realised and theoretical RTP;
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
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from operator import itemgetter
from typing import Any

from eventsourcing.utils import get_topic

from application.sql import execute_in_order
from domain.inventory import InventoryItem
from domain.round import Round
from projections.batching import select_in
from projections.unnest import (
    arrays,
    column_types,
    columns,
    first_per_key,
    insert_sql,
    net_insert_delete,
    net_upsert_delete,
    on_postgres,
)

OPENED = get_topic(Round.Opened)
SETTLED = get_topic(Round.RoundSettled)
VOIDED = get_topic(Round.RoundVoided)
GRANTED = get_topic(InventoryItem.ItemGranted)
MOVES = {
    get_topic(InventoryItem.ItemConsumed): "consumed",
    get_topic(InventoryItem.ItemCashedBack): "cashed_back",
    get_topic(InventoryItem.ItemShippingRequested): "shipping_requested",
    get_topic(InventoryItem.ItemShipped): "shipped",
}
MOVEMENTS = ("granted", *MOVES.values())
BPS = 10000

PUBLIC_TABLES = ("analytics_rounds", "analytics_item_flows", "analytics_daily")

DAILY_KEY = ("operator_id", "day", "currency", "mode", "chance_bps")
DAILY_SUMS = (
    "rounds",
    "wins",
    "wagered_minor",
    "paid_out_minor",
    "ggr_minor",
    "nuggets_minor",
    "nuggets_cost_pct_minor",
    "expected_paid_bps_minor",
    "theoretical_return_bps_minor",
    "theoretical_item_return_ppm_minor",
)


def utc_day(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d")


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def round_fact(opening: dict[str, Any], settlement: dict[str, Any]) -> dict[str, Any]:
    """The fact-table row of one settled round (also used by tests and the report)."""
    won = settlement.get("won_item") or {}
    no_loss = bool(opening["no_loss"])
    return {
        "public_id": opening["public_id"],
        "operator_id": opening["operator_id"],
        "player_external_id": opening["player_external_id"],
        "mode": opening["mode"],
        "currency": opening["currency"],
        "currency_exponent": opening["currency_exponent"],
        "base_currency": opening["base_currency"],
        "fx_rate": opening["fx_rate"],
        "bet_minor": opening["wager_minor"],
        "payout_minor": settlement["payout_minor"],
        "chance_bps": opening["chance_bps"],
        "fee_bps": opening["fee_bps"],
        "no_loss": 1 if no_loss else 0,
        "nuggets_cost_percent": opening["nuggets_cost_percent"] if no_loss else 0,
        "is_win": 1 if settlement["is_win"] else 0,
        "rolled_bps": settlement["rolled_bps"],
        "target_item_id": opening["target"]["item_id"],
        "target_value_minor": opening["target"]["value_minor"],
        "target_value_base_minor": opening["target_value_base_minor"],
        "nuggets_minor": settlement.get("nuggets_minor") or 0,
        "won_inventory_item_id": won.get("inventory_item_id"),
        "opened_at": float(opening["opened_at"]),
        "settled_at": float(settlement["settled_at"]),
        "settled_day": utc_day(settlement["settled_at"]),
    }


def daily_increments(fact: dict[str, Any]) -> dict[str, int]:
    """What one fact row adds to its ``analytics_daily`` row (all integers)."""
    bet, fee, chance = fact["bet_minor"], fact["fee_bps"], fact["chance_bps"]
    c = fact["nuggets_cost_percent"]
    return {
        "rounds": 1,
        "wins": fact["is_win"],
        "wagered_minor": bet,
        "paid_out_minor": fact["payout_minor"],
        "ggr_minor": bet - fact["payout_minor"],
        "nuggets_minor": fact["nuggets_minor"],
        "nuggets_cost_pct_minor": fact["nuggets_minor"] * c,
        "expected_paid_bps_minor": chance * fact["target_value_minor"],
        "theoretical_return_bps_minor": bet * (BPS - fee),
        "theoretical_item_return_ppm_minor": bet * ((BPS - fee) * 100 - (BPS - chance) * c),
    }


FACT_COLUMNS = (
    "round_id",
    "public_id",
    "operator_id",
    "player_external_id",
    "mode",
    "currency",
    "currency_exponent",
    "base_currency",
    "fx_rate",
    "bet_minor",
    "payout_minor",
    "chance_bps",
    "fee_bps",
    "no_loss",
    "nuggets_cost_percent",
    "is_win",
    "rolled_bps",
    "target_item_id",
    "target_value_minor",
    "target_value_base_minor",
    "nuggets_minor",
    "won_inventory_item_id",
    "opened_at",
    "settled_at",
    "settled_day",
    "position",
)

FLOW_COLUMNS = (
    "position",
    "inventory_item_id",
    "aggregate_id",
    "operator_id",
    "player_external_id",
    "item_id",
    "movement",
    "value_minor",
    "currency",
    "value_base_minor",
    "base_currency",
    "amount_minor",
    "amount_currency",
    "reference",
    "at",
    "day",
)

# ratios recomputed from the sums after every increment (portable arithmetic)
_RATIOS = (
    "UPDATE analytics_daily SET "
    "realised_rtp = CAST(paid_out_minor AS DOUBLE PRECISION) / wagered_minor, "
    "realised_rtp_with_nuggets = (CAST(paid_out_minor AS DOUBLE PRECISION) "
    "+ CAST(nuggets_cost_pct_minor AS DOUBLE PRECISION) / 100) / wagered_minor, "
    "expected_rtp = CAST(expected_paid_bps_minor AS DOUBLE PRECISION) / 10000 / wagered_minor, "
    "theoretical_rtp = CAST(theoretical_return_bps_minor AS DOUBLE PRECISION) "
    "/ 10000 / wagered_minor, "
    "theoretical_item_rtp = CAST(theoretical_item_return_ppm_minor AS DOUBLE PRECISION) "
    "/ 1000000 / wagered_minor "
    "WHERE operator_id = ? AND day = ? AND currency = ? AND mode = ? AND chance_bps = ? "
    "AND wagered_minor > 0"
)


class Analytics:
    name = "analytics"
    topics = frozenset({OPENED, SETTLED, VOIDED, GRANTED, *MOVES})
    schema = [
        """CREATE TABLE IF NOT EXISTS analytics_rounds (
            round_id TEXT PRIMARY KEY,
            public_id TEXT NOT NULL,
            operator_id TEXT NOT NULL,
            player_external_id TEXT NOT NULL,
            mode TEXT NOT NULL,
            currency TEXT NOT NULL,
            currency_exponent INTEGER NOT NULL,
            base_currency TEXT NOT NULL,
            fx_rate TEXT NOT NULL,
            bet_minor BIGINT NOT NULL,
            payout_minor BIGINT NOT NULL,
            chance_bps INTEGER NOT NULL,
            fee_bps INTEGER NOT NULL,
            no_loss INTEGER NOT NULL,
            nuggets_cost_percent INTEGER NOT NULL,
            is_win INTEGER NOT NULL,
            rolled_bps INTEGER NOT NULL,
            target_item_id BIGINT NOT NULL,
            target_value_minor BIGINT NOT NULL,
            target_value_base_minor BIGINT NOT NULL,
            nuggets_minor BIGINT NOT NULL,
            won_inventory_item_id BIGINT,
            opened_at DOUBLE PRECISION NOT NULL,
            settled_at DOUBLE PRECISION NOT NULL,
            settled_day TEXT NOT NULL,
            position BIGINT NOT NULL)""",
        """CREATE INDEX IF NOT EXISTS analytics_rounds_day
            ON analytics_rounds (operator_id, settled_day)""",
        """CREATE TABLE IF NOT EXISTS analytics_item_flows (
            position BIGINT PRIMARY KEY,
            inventory_item_id BIGINT NOT NULL,
            aggregate_id TEXT NOT NULL,
            operator_id TEXT NOT NULL,
            player_external_id TEXT NOT NULL,
            item_id BIGINT NOT NULL,
            movement TEXT NOT NULL,
            value_minor BIGINT NOT NULL,
            currency TEXT NOT NULL,
            value_base_minor BIGINT NOT NULL,
            base_currency TEXT NOT NULL,
            amount_minor BIGINT,
            amount_currency TEXT,
            reference TEXT,
            at DOUBLE PRECISION NOT NULL,
            day TEXT NOT NULL)""",
        """CREATE INDEX IF NOT EXISTS analytics_item_flows_item
            ON analytics_item_flows (aggregate_id, movement)""",
        """CREATE INDEX IF NOT EXISTS analytics_item_flows_day
            ON analytics_item_flows (operator_id, day)""",
        """CREATE TABLE IF NOT EXISTS analytics_daily (
            operator_id TEXT NOT NULL,
            day TEXT NOT NULL,
            currency TEXT NOT NULL,
            mode TEXT NOT NULL,
            chance_bps INTEGER NOT NULL,
            currency_exponent INTEGER NOT NULL,
            rounds BIGINT NOT NULL,
            wins BIGINT NOT NULL,
            wagered_minor BIGINT NOT NULL,
            paid_out_minor BIGINT NOT NULL,
            ggr_minor BIGINT NOT NULL,
            nuggets_minor BIGINT NOT NULL,
            nuggets_cost_pct_minor BIGINT NOT NULL,
            expected_paid_bps_minor BIGINT NOT NULL,
            theoretical_return_bps_minor BIGINT NOT NULL,
            theoretical_item_return_ppm_minor BIGINT NOT NULL,
            realised_rtp DOUBLE PRECISION,
            realised_rtp_with_nuggets DOUBLE PRECISION,
            expected_rtp DOUBLE PRECISION,
            theoretical_rtp DOUBLE PRECISION,
            theoretical_item_rtp DOUBLE PRECISION,
            PRIMARY KEY (operator_id, day, currency, mode, chance_bps))""",
        """CREATE TABLE IF NOT EXISTS analytics_open_rounds (
            round_id TEXT PRIMARY KEY,
            opening TEXT NOT NULL)""",
        """CREATE TABLE IF NOT EXISTS analytics_stakes (
            inventory_item_id BIGINT PRIMARY KEY,
            round_public_id TEXT NOT NULL,
            value_minor BIGINT NOT NULL,
            currency TEXT NOT NULL)""",
    ]

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
            elif topic != GRANTED:
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
            for row in select_in(
                cur, "SELECT round_id FROM analytics_rounds WHERE round_id IN ({keys})", settled
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
                fact = {"round_id": round_id, **round_fact(json.loads(stored), event.settlement)}
                fact["position"] = position
                statements.append((_FACT, tuple(fact[c] for c in FACT_COLUMNS)))
                recorded.add(round_id)
                statements.append((_CLOSE, (round_id,)))
                open_rounds[round_id] = None
                key = tuple(fact[c] for c in DAILY_KEY_OF_FACT)
                sums = daily_increments(fact)
                entry = daily.get(key)
                if entry is None:
                    daily[key] = [fact["currency_exponent"], *(sums[s] for s in DAILY_SUMS)]
                else:
                    for index, column in enumerate(DAILY_SUMS, start=1):
                        entry[index] += sums[column]
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
                elif movement == "shipping_requested":
                    reference = event.shipment_public_id
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
        fact = {"round_id": round_id, **round_fact(json.loads(row[0]), event.settlement)}
        fact["position"] = position
        columns = ", ".join(FACT_COLUMNS)
        marks = ", ".join("?" for _ in FACT_COLUMNS)
        cur.execute(
            f"INSERT INTO analytics_rounds ({columns}) VALUES ({marks}) "  # noqa: S608
            "ON CONFLICT (round_id) DO NOTHING",
            tuple(fact[c] for c in FACT_COLUMNS),
        )
        if cur.rowcount == 0:
            return
        cur.execute("DELETE FROM analytics_open_rounds WHERE round_id = ?", (round_id,))
        self._add_daily(cur, fact)

    def _add_daily(self, cur: Any, fact: dict[str, Any]) -> None:
        key = (
            fact["operator_id"],
            fact["settled_day"],
            fact["currency"],
            fact["mode"],
            fact["chance_bps"],
        )
        sums = daily_increments(fact)
        columns = (*DAILY_KEY, "currency_exponent", *DAILY_SUMS)
        updates = ", ".join(f"{s} = analytics_daily.{s} + excluded.{s}" for s in DAILY_SUMS)
        cur.execute(
            f"INSERT INTO analytics_daily ({', '.join(columns)}) "  # noqa: S608
            f"VALUES ({', '.join('?' for _ in columns)}) "
            f"ON CONFLICT ({', '.join(DAILY_KEY)}) DO UPDATE SET {updates}",
            (*key, fact["currency_exponent"], *(sums[s] for s in DAILY_SUMS)),
        )
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
        elif movement == "shipping_requested":
            reference = event.shipment_public_id
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
        row = {
            "position": position,
            "inventory_item_id": grant["inventory_item_id"],
            "aggregate_id": aggregate_id,
            "operator_id": grant["operator_id"],
            "player_external_id": grant["player_external_id"],
            "item_id": grant["item_id"],
            "movement": movement,
            "value_minor": grant["value_minor"],
            "currency": grant["currency"],
            "value_base_minor": grant["grant_value_base_minor"],
            "base_currency": grant["base_currency"],
            "amount_minor": amount,
            "amount_currency": amount_currency,
            "reference": reference,
            "at": at,
            "day": utc_day(at),
        }
        cur.execute(
            f"INSERT INTO analytics_item_flows ({', '.join(FLOW_COLUMNS)}) "  # noqa: S608
            f"VALUES ({', '.join('?' for _ in FLOW_COLUMNS)}) ON CONFLICT (position) DO NOTHING",
            tuple(row[c] for c in FLOW_COLUMNS),
        )


DAILY_KEY_OF_FACT = ("operator_id", "settled_day", "currency", "mode", "chance_bps")
_GRANT_FIELDS = (
    "inventory_item_id",
    "operator_id",
    "player_external_id",
    "item_id",
    "value_minor",
    "currency",
    "grant_value_base_minor",
    "base_currency",
)
_OPEN = (
    "INSERT INTO analytics_open_rounds (round_id, opening) VALUES (?, ?) "
    "ON CONFLICT (round_id) DO NOTHING"
)
_STAKE = (
    "INSERT INTO analytics_stakes (inventory_item_id, round_public_id, value_minor, "
    "currency) VALUES (?, ?, ?, ?) ON CONFLICT (inventory_item_id) DO UPDATE SET "
    "round_public_id = excluded.round_public_id, value_minor = excluded.value_minor, "
    "currency = excluded.currency"
)
_UNSTAKE = "DELETE FROM analytics_stakes WHERE inventory_item_id = ?"
_CLOSE = "DELETE FROM analytics_open_rounds WHERE round_id = ?"
_FACT = (
    f"INSERT INTO analytics_rounds ({', '.join(FACT_COLUMNS)}) "  # noqa: S608
    f"VALUES ({', '.join('?' for _ in FACT_COLUMNS)}) ON CONFLICT (round_id) DO NOTHING"
)
_FLOW = (
    f"INSERT INTO analytics_item_flows ({', '.join(FLOW_COLUMNS)}) "  # noqa: S608
    f"VALUES ({', '.join('?' for _ in FLOW_COLUMNS)}) ON CONFLICT (position) DO NOTHING"
)
_DAILY_COLUMNS = (*DAILY_KEY, "currency_exponent", *DAILY_SUMS)
_DAILY = (
    f"INSERT INTO analytics_daily ({', '.join(_DAILY_COLUMNS)}) "  # noqa: S608
    f"VALUES ({', '.join('?' for _ in _DAILY_COLUMNS)}) "
    f"ON CONFLICT ({', '.join(DAILY_KEY)}) DO UPDATE SET "
    + ", ".join(f"{s} = analytics_daily.{s} + excluded.{s}" for s in DAILY_SUMS)
)


def _ddl(table: str) -> str:
    return next(st for st in Analytics.schema if f"EXISTS {table} (" in st)


_FACT_TYPES = column_types(_ddl("analytics_rounds"), FACT_COLUMNS)
_FACT_UNNEST = insert_sql(
    "analytics_rounds", FACT_COLUMNS, _FACT_TYPES, "ON CONFLICT (round_id) DO NOTHING"
)
_FLOW_TYPES = column_types(_ddl("analytics_item_flows"), FLOW_COLUMNS)
_FLOW_UNNEST = insert_sql(
    "analytics_item_flows", FLOW_COLUMNS, _FLOW_TYPES, "ON CONFLICT (position) DO NOTHING"
)
_OPEN_UNNEST = (
    "INSERT INTO analytics_open_rounds (round_id, opening) "
    "SELECT * FROM unnest(%b::text[], %b::text[]) ON CONFLICT (round_id) DO NOTHING"
)
_CLOSE_ANY = "DELETE FROM analytics_open_rounds WHERE round_id = ANY(%b::text[])"
_STAKE_UNNEST = (
    "INSERT INTO analytics_stakes (inventory_item_id, round_public_id, value_minor, "
    "currency) SELECT * FROM unnest(%b::bigint[], %b::text[], %b::bigint[], %b::text[]) "
    "ON CONFLICT (inventory_item_id) DO UPDATE SET "
    "round_public_id = excluded.round_public_id, value_minor = excluded.value_minor, "
    "currency = excluded.currency"
)
_UNSTAKE_ANY = "DELETE FROM analytics_stakes WHERE inventory_item_id = ANY(%b::bigint[])"


def _write_unnest(cur: Any, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
    """PostgreSQL: the batch's statements with the same result, a few over arrays. No
    statement reads another table than its own, so each table is written on its own:
    ``analytics_open_rounds`` by ``net_insert_delete``, ``analytics_stakes`` (upserts of
    every column, deletes) by ``net_upsert_delete``; ``analytics_rounds`` and
    ``analytics_item_flows``, never deleted from, by ``first_per_key``;
    ``analytics_daily`` (one upsert per key of the batch, then its ratios) as before."""
    closed, opened = net_insert_delete(
        (sql is _OPEN, row[0], row) for sql, row in statements if sql is _OPEN or sql is _CLOSE
    )
    unstaked, staked = net_upsert_delete(
        (sql is _STAKE, row[0], row) for sql, row in statements if sql is _STAKE or sql is _UNSTAKE
    )
    facts = first_per_key((row for sql, row in statements if sql is _FACT), itemgetter(0))
    flows = first_per_key((row for sql, row in statements if sql is _FLOW), itemgetter(0))
    writes: list[tuple[str, Any]] = []
    if closed:
        writes.append((_CLOSE_ANY, (closed,)))
    if opened:
        writes.append((_OPEN_UNNEST, columns(opened)))
    if unstaked:
        writes.append((_UNSTAKE_ANY, (unstaked,)))
    if staked:
        writes.append((_STAKE_UNNEST, columns(staked)))
    if facts:
        writes.append((_FACT_UNNEST, arrays(facts, _FACT_TYPES)))
    if flows:
        writes.append((_FLOW_UNNEST, arrays(flows, _FLOW_TYPES)))
    writes += [(sql, row) for sql, row in statements if sql is _DAILY or sql is _RATIOS]
    execute_in_order(cur, writes)


def _flow_row(
    position: int,
    aggregate_id: str,
    grant: dict[str, Any],
    movement: str,
    amount: int | None,
    amount_currency: str | None,
    reference: str | None,
    at: float,
) -> tuple[Any, ...]:
    """An ``analytics_item_flows`` row in ``FLOW_COLUMNS`` order (as ``Analytics._flow``)."""
    return (
        position,
        grant["inventory_item_id"],
        aggregate_id,
        grant["operator_id"],
        grant["player_external_id"],
        grant["item_id"],
        movement,
        grant["value_minor"],
        grant["currency"],
        grant["grant_value_base_minor"],
        grant["base_currency"],
        amount,
        amount_currency,
        reference,
        at,
        utc_day(at),
    )


# -- reading (the report) ---------------------------------------------------------------------


REPORT_KEY = ("operator_id", "currency", "chance_bps")


def report_rows(
    db: Any,
    day_from: str,
    day_to: str,
    operator_id: str | None = None,
    by_mode: bool = False,
) -> list[dict[str, Any]]:
    """GGR and RTP per operator, currency and chance preset (and mode) over [from, to]."""
    key = (*REPORT_KEY, "mode") if by_mode else REPORT_KEY
    sums = DAILY_SUMS
    where = "day >= ? AND day <= ?"
    params: list[Any] = [day_from, day_to]
    if operator_id is not None:
        where += " AND operator_id = ?"
        params.append(operator_id)
    select = ", ".join((*key, "MAX(currency_exponent)", *(f"SUM({s})" for s in sums)))
    with db.transaction() as cur:
        cur.execute(
            f"SELECT {select} FROM analytics_daily WHERE {where} "  # noqa: S608
            f"GROUP BY {', '.join(key)} ORDER BY {', '.join(key)}",
            tuple(params),
        )
        fetched = cur.fetchall()
    rows = []
    for record in fetched:
        row = dict(zip(key, record[: len(key)], strict=True))
        row["currency_exponent"] = int(record[len(key)])
        row.update(
            {name: int(value) for name, value in zip(sums, record[len(key) + 1 :], strict=True)}
        )
        wagered = row["wagered_minor"]
        row["realised_rtp"] = row["paid_out_minor"] / wagered if wagered else None
        row["realised_rtp_with_nuggets"] = (
            (row["paid_out_minor"] + row["nuggets_cost_pct_minor"] / 100) / wagered
            if wagered
            else None
        )
        row["expected_rtp"] = row["expected_paid_bps_minor"] / BPS / wagered if wagered else None
        row["theoretical_rtp"] = (
            row["theoretical_return_bps_minor"] / BPS / wagered if wagered else None
        )
        row["theoretical_item_rtp"] = (
            row["theoretical_item_return_ppm_minor"] / 1_000_000 / wagered if wagered else None
        )
        rows.append(row)
    return rows

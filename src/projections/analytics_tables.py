"""The analyst tables (``docs/analytics.md``): their DDL, columns and the statements
that write them, portable (``?``) and, on PostgreSQL, over arrays (``_write_unnest``)."""

from __future__ import annotations

from operator import itemgetter
from typing import Any

from application.store.sql import execute_in_order
from projections.unnest import (
    arrays,
    column_types,
    columns,
    first_per_key,
    insert_sql,
    net_insert_delete,
    net_upsert_delete,
)

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

SCHEMA = [
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
    return next(st for st in SCHEMA if f"EXISTS {table} (" in st)


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
    ``analytics_daily`` (one upsert per key of the batch, then its ratios) as before, and
    the other statements (``analytics_boxes.py``'s tables) in their order."""
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
    unnested = (_OPEN, _CLOSE, _STAKE, _UNSTAKE, _FACT, _FLOW)
    # the rest in order: the daily upserts and ratios, the games' and boxes' rows
    writes += [(sql, row) for sql, row in statements if not any(sql is u for u in unnested)]
    execute_in_order(cur, writes)

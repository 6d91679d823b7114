"""The analyst tables of games and boxes (``docs/analytics.md``): their DDL, rows and
statements, written by the ``analytics`` projection (``analytics.py``) beside its
Upgrader tables, whose rows they leave as they were.

* ``analytics_game_daily``: per operator, UTC settle day, currency, game and mode:
  rounds, wagered, paid out, GGR and realised RTP. Upgrader rounds count their bet and
  the value of the item won (Nuggets apart, as in ``analytics_daily``); box rounds their
  price and the value of the items won.
* ``analytics_box_rounds``: one row per settled box round (decisions §10).
* ``analytics_box_daily``: per operator, UTC settle day, currency, box and version:
  rounds, boxes opened, wagered, paid out, GGR, and RTP realised against theoretical.

RTP of a box, two ways, each from the table the round pinned (its entries' weights,
values and cash-back terms, in the base currency; the price of one box):

* ``rtp_bps`` (the catalogue's ``rtpBps``): ``floor(10000 x sum(weight x value x
  cashback_bps / 10000) / (totalTickets x price))``, what the items would pay back in
  cash; compare it with the *realised cash-back RTP*: the won items' cash-back value over
  the price paid (base currency);
* ``value_rtp_bps``: the same with the items' face value, ``floor(10000 x sum(weight x
  value) / (totalTickets x price))``; compare it with the *realised RTP*: ``payoutMinor``
  (the won items' values) over the bet, as for the Upgrader.
"""

from __future__ import annotations

from typing import Any

from domain.hash_chain import utc_day

BPS = 10000
BOXES = "boxes"  # domain/box_round.GAME_KEY
PUBLIC_TABLES = ("analytics_game_daily", "analytics_box_rounds", "analytics_box_daily")

GAME_KEY = ("operator_id", "day", "currency", "game", "mode")
GAME_SUMS = ("rounds", "wagered_minor", "paid_out_minor", "ggr_minor")

BOX_FACT_COLUMNS = (
    "round_id",
    "public_id",
    "operator_id",
    "player_external_id",
    "currency",
    "currency_exponent",
    "base_currency",
    "fx_rate",
    "box_id",
    "box_version_id",
    "odds_hash",
    "total_tickets",
    "box_count",
    "price_minor",
    "price_base_minor",
    "bet_minor",
    "payout_minor",
    "payout_base_minor",
    "won_cashback_bps_base_minor",
    "rtp_bps",
    "value_rtp_bps",
    "opened_at",
    "settled_at",
    "settled_day",
    "position",
)
BOX_KEY = ("operator_id", "day", "currency", "box_id", "box_version_id")
BOX_KEY_OF_FACT = ("operator_id", "settled_day", "currency", "box_id", "box_version_id")
BOX_SUMS = (
    "rounds",
    "opens",
    "wagered_minor",
    "paid_out_minor",
    "ggr_minor",
    "wagered_base_minor",
    "paid_out_base_minor",
    "won_cashback_bps_base_minor",
    "theoretical_return_bps_minor",
    "expected_return_bps_minor",
)

SCHEMA = [
    """CREATE TABLE IF NOT EXISTS analytics_game_daily (
            operator_id TEXT NOT NULL,
            day TEXT NOT NULL,
            currency TEXT NOT NULL,
            game TEXT NOT NULL,
            mode TEXT NOT NULL,
            currency_exponent INTEGER NOT NULL,
            rounds BIGINT NOT NULL,
            wagered_minor BIGINT NOT NULL,
            paid_out_minor BIGINT NOT NULL,
            ggr_minor BIGINT NOT NULL,
            realised_rtp DOUBLE PRECISION,
            PRIMARY KEY (operator_id, day, currency, game, mode))""",
    """CREATE TABLE IF NOT EXISTS analytics_box_rounds (
            round_id TEXT PRIMARY KEY,
            public_id TEXT NOT NULL,
            operator_id TEXT NOT NULL,
            player_external_id TEXT NOT NULL,
            currency TEXT NOT NULL,
            currency_exponent INTEGER NOT NULL,
            base_currency TEXT NOT NULL,
            fx_rate TEXT NOT NULL,
            box_id BIGINT NOT NULL,
            box_version_id BIGINT NOT NULL,
            odds_hash TEXT NOT NULL,
            total_tickets BIGINT NOT NULL,
            box_count INTEGER NOT NULL,
            price_minor BIGINT NOT NULL,
            price_base_minor BIGINT NOT NULL,
            bet_minor BIGINT NOT NULL,
            payout_minor BIGINT NOT NULL,
            payout_base_minor BIGINT NOT NULL,
            won_cashback_bps_base_minor BIGINT NOT NULL,
            rtp_bps INTEGER NOT NULL,
            value_rtp_bps INTEGER NOT NULL,
            opened_at DOUBLE PRECISION NOT NULL,
            settled_at DOUBLE PRECISION NOT NULL,
            settled_day TEXT NOT NULL,
            position BIGINT NOT NULL)""",
    """CREATE INDEX IF NOT EXISTS analytics_box_rounds_day
            ON analytics_box_rounds (operator_id, settled_day)""",
    """CREATE TABLE IF NOT EXISTS analytics_box_daily (
            operator_id TEXT NOT NULL,
            day TEXT NOT NULL,
            currency TEXT NOT NULL,
            box_id BIGINT NOT NULL,
            box_version_id BIGINT NOT NULL,
            currency_exponent INTEGER NOT NULL,
            base_currency TEXT NOT NULL,
            total_tickets BIGINT NOT NULL,
            rounds BIGINT NOT NULL,
            opens BIGINT NOT NULL,
            wagered_minor BIGINT NOT NULL,
            paid_out_minor BIGINT NOT NULL,
            ggr_minor BIGINT NOT NULL,
            wagered_base_minor BIGINT NOT NULL,
            paid_out_base_minor BIGINT NOT NULL,
            won_cashback_bps_base_minor BIGINT NOT NULL,
            theoretical_return_bps_minor BIGINT NOT NULL,
            expected_return_bps_minor BIGINT NOT NULL,
            realised_rtp DOUBLE PRECISION,
            expected_rtp DOUBLE PRECISION,
            realised_cashback_rtp DOUBLE PRECISION,
            theoretical_rtp DOUBLE PRECISION,
            PRIMARY KEY (operator_id, day, currency, box_id, box_version_id))""",
]


def _upsert(table: str, key: tuple[str, ...], fixed: tuple[str, ...], sums: tuple[str, ...]) -> str:
    names = (*key, *fixed, *sums)
    updates = ", ".join(f"{s} = {table}.{s} + excluded.{s}" for s in sums)
    return (
        f"INSERT INTO {table} ({', '.join(names)}) "  # noqa: S608 - our own names
        f"VALUES ({', '.join('?' for _ in names)}) "
        f"ON CONFLICT ({', '.join(key)}) DO UPDATE SET {updates}"
    )


_KEY_MATCH = " AND ".join(f"{k} = ?" for k in GAME_KEY)
GAME_DAILY = _upsert("analytics_game_daily", GAME_KEY, ("currency_exponent",), GAME_SUMS)
GAME_RATIOS = (
    "UPDATE analytics_game_daily SET "  # noqa: S608 - our own names
    "realised_rtp = CAST(paid_out_minor AS DOUBLE PRECISION) / wagered_minor "
    f"WHERE {_KEY_MATCH} AND wagered_minor > 0"
)
BOX_FACT = (
    f"INSERT INTO analytics_box_rounds ({', '.join(BOX_FACT_COLUMNS)}) "  # noqa: S608
    f"VALUES ({', '.join('?' for _ in BOX_FACT_COLUMNS)}) ON CONFLICT (round_id) DO NOTHING"
)
BOX_DAILY = _upsert(
    "analytics_box_daily",
    BOX_KEY,
    ("currency_exponent", "base_currency", "total_tickets"),
    BOX_SUMS,
)
BOX_RATIOS = (
    "UPDATE analytics_box_daily SET "
    "realised_rtp = CAST(paid_out_minor AS DOUBLE PRECISION) / wagered_minor, "
    "expected_rtp = CAST(expected_return_bps_minor AS DOUBLE PRECISION) / 10000 "
    "/ wagered_minor, "
    "realised_cashback_rtp = CAST(won_cashback_bps_base_minor AS DOUBLE PRECISION) / 10000 "
    "/ wagered_base_minor, "
    "theoretical_rtp = CAST(theoretical_return_bps_minor AS DOUBLE PRECISION) / 10000 "
    "/ wagered_minor "
    "WHERE operator_id = ? AND day = ? AND currency = ? AND box_id = ? AND box_version_id = ? "
    "AND wagered_minor > 0 AND wagered_base_minor > 0"
)
WRITES = frozenset({GAME_DAILY, GAME_RATIOS, BOX_FACT, BOX_DAILY, BOX_RATIOS})


def table_rtp_bps(entries: list[dict[str, Any]], price_base_minor: int) -> tuple[int, int]:
    """(``rtp_bps``, ``value_rtp_bps``) of a pinned table: the items' cash-back value and
    face value per ticket over the price of a box, base currency, floored to bps."""
    total = sum(entry["weight"] for entry in entries)
    cashback = sum(
        entry["weight"] * entry["value_base_minor"] * (entry.get("cashback_bps") or 0)
        for entry in entries
    )
    value = sum(entry["weight"] * entry["value_base_minor"] for entry in entries)
    cost = total * price_base_minor
    return cashback // cost, BPS * value // cost


def box_fact(opening: dict[str, Any], settlement: dict[str, Any]) -> dict[str, Any]:
    """The ``analytics_box_rounds`` row of one settled box round (without ``round_id`` and
    ``position``). A won item's terms are its reel's entry's, as granted."""
    entries = opening["entries"]
    won = [entries[reel["entry_index"]] for reel in settlement["reels"]]
    rtp, value_rtp = table_rtp_bps(entries, opening["price_base_minor"])
    return {
        "public_id": opening["public_id"],
        "operator_id": opening["operator_id"],
        "player_external_id": opening["player_external_id"],
        "currency": opening["currency"],
        "currency_exponent": opening["currency_exponent"],
        "base_currency": opening["base_currency"],
        "fx_rate": opening["fx_rate"],
        "box_id": opening["box_id"],
        "box_version_id": opening["box_version_id"],
        "odds_hash": opening["odds_hash"],
        "total_tickets": opening["total_tickets"],
        "box_count": opening["count"],
        "price_minor": opening["price_minor"],
        "price_base_minor": opening["price_base_minor"],
        "bet_minor": opening["wager_minor"],
        "payout_minor": settlement["payout_minor"],
        "payout_base_minor": sum(entry["value_base_minor"] for entry in won),
        "won_cashback_bps_base_minor": sum(
            entry["value_base_minor"] * (entry.get("cashback_bps") or 0) for entry in won
        ),
        "rtp_bps": rtp,
        "value_rtp_bps": value_rtp,
        "opened_at": float(opening["opened_at"]),
        "settled_at": float(settlement["settled_at"]),
        "settled_day": utc_day(settlement["settled_at"]),
    }


def box_increments(fact: dict[str, Any]) -> dict[str, int]:
    """What one box fact adds to its ``analytics_box_daily`` row."""
    bet, paid = fact["bet_minor"], fact["payout_minor"]
    return {
        "rounds": 1,
        "opens": fact["box_count"],
        "wagered_minor": bet,
        "paid_out_minor": paid,
        "ggr_minor": bet - paid,
        "wagered_base_minor": fact["box_count"] * fact["price_base_minor"],
        "paid_out_base_minor": fact["payout_base_minor"],
        "won_cashback_bps_base_minor": fact["won_cashback_bps_base_minor"],
        "theoretical_return_bps_minor": bet * fact["rtp_bps"],
        "expected_return_bps_minor": bet * fact["value_rtp_bps"],
    }


class DailySums:
    """A batch's increments of one daily table, added up per key, then written as one
    upsert and one update of the ratios per key (in first-seen order)."""

    def __init__(self, upsert: str, ratios: str, names: tuple[str, ...]) -> None:
        self.upsert, self.ratios, self.names = upsert, ratios, names
        self.rows: dict[tuple[Any, ...], tuple[list[Any], list[int]]] = {}

    def add(self, key: tuple[Any, ...], fixed: list[Any], sums: dict[str, int]) -> None:
        entry = self.rows.get(key)
        if entry is None:
            self.rows[key] = (fixed, [sums[name] for name in self.names])
            return
        totals = entry[1]
        for index, name in enumerate(self.names):
            totals[index] += sums[name]

    def statements(self) -> list[tuple[str, tuple[Any, ...]]]:
        written = [(self.upsert, (*key, *fixed, *sums)) for key, (fixed, sums) in self.rows.items()]
        return written + [(self.ratios, key) for key in self.rows]


def game_sums() -> DailySums:
    return DailySums(GAME_DAILY, GAME_RATIOS, GAME_SUMS)


def box_sums() -> DailySums:
    return DailySums(BOX_DAILY, BOX_RATIOS, BOX_SUMS)


def add_round(
    games: DailySums,
    boxes: DailySums,
    game: str,
    fact: dict[str, Any],
) -> None:
    """A settled round's increments: its game's row, and a box round's box row."""
    bet, paid = fact["bet_minor"], fact["payout_minor"]
    key = (fact["operator_id"], fact["settled_day"], fact["currency"], game)
    games.add(
        (*key, fact.get("mode", "balance")),
        [fact["currency_exponent"]],
        {"rounds": 1, "wagered_minor": bet, "paid_out_minor": paid, "ggr_minor": bet - paid},
    )
    if game == BOXES:
        boxes.add(
            tuple(fact[c] for c in BOX_KEY_OF_FACT),
            [fact["currency_exponent"], fact["base_currency"], fact["total_tickets"]],
            box_increments(fact),
        )

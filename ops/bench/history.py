"""A store with a past: N settled balance rounds, written in bulk in the stored format.

``seed_history`` writes, for each past round, the events a balance play records, in the
platform's order and shape: ``Round`` ``Opened`` and ``DebitAttempted`` (the intent),
then ``WagerDebited``, ``RoundSettled``, the player's ``PlayerFairness`` (``SeedPairStarted``
on the first round, ``NonceUsed``) and, for a win, an ``InventoryItem`` ``ItemGranted``.
The values come from the platform's own functions (ops/bench/history_rounds.py): the
opening from ``round_opening`` of a real quote and target, the roll from ``roll`` with the
player's seed pair (its server seed in ``seed_vault``), the settlement from
``settlement_record``, the grant from ``_grant``; each event's state is encoded by the
event store's own transcoder. Only the aggregates' bookkeeping is skipped, which is what
made a round cost milliseconds.

The read-model rows are written beside the events, built by the projections' own row
functions (``round_wire``, ``render_payload``, ``round_fact``, ``daily_increments``,
``_flow_row``, ``chain_link``) into the rows each projection would write; the webhooks
of these past rounds are marked delivered. Everything goes in with ``COPY``, a chunk of
rounds per transaction, with consecutive notification ids after the log's head.

``tests/integration/test_history_seed.py`` proves on a small sample that the events equal
those the real aggregates record (every field, every topic, every version), that every
read model equals a rebuild by the real projection code from the seeded log, and that
``upgrader audit`` passes over it.

Run alone: ``python -m ops.bench.history --config FILE --rounds N --players P`` (the
configuration's ``database_url`` says where; its first operator plays, W=1000 at 50 %,
aiming at the in-band prizes in turn; no platform process may serve the store meanwhile).
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ops.bench.history_rounds import WAGER, PastRounds
from projections.analytics_boxes import add_round, box_sums, game_sums

CHUNK_ROUNDS = 5000

TABLES = {
    "seed_vault": ("server_seed_hash", "server_seed", "created_at"),
    "round_history": (
        "round_id",
        "public_id",
        "operator_id",
        "player_external_id",
        "mode",
        "status",
        "position",
        "opening",
        "view",
    ),
    "wallet_debit_attempts": (
        "debit_key",
        "round_id",
        "attempt",
        "amount_minor",
        "currency",
        "state",
        "attempted_at",
        "settled_at",
    ),
    "inventory": (
        "inventory_item_id",
        "aggregate_id",
        "operator_id",
        "player_external_id",
        "item_id",
        "state",
        "position",
        "grant_record",
    ),
    "webhook_outbox": (
        "webhook_id",
        "round_id",
        "operator_id",
        "player_external_id",
        "position",
        "created_at",
        "payload",
    ),
    "webhook_deliveries": (
        "webhook_id",
        "state",
        "attempts",
        "next_attempt_at",
        "last_attempt_at",
        "delivered_at",
    ),
    "event_chain": ("position", "link", "originator_id", "originator_version", "topic", "day"),
}


@dataclass
class Seeded:
    rounds: int = 0
    events: int = 0
    players: int = 0
    seconds: float = 0.0
    figures: dict[str, Any] = field(default_factory=dict)


class HistoryWriter:
    """Writes generated rounds into the log and every read model (see the docstring)."""

    def __init__(self, platform: Any, operator_id: str) -> None:
        from domain.hash_chain import GENESIS

        self.platform = platform
        self.rounds = PastRounds(platform, operator_id)
        self.encode = platform.events.mapper.transcoder.encode
        recorder = platform.events.recorder
        self.table = f'"{recorder.datastore.schema}"."{recorder.events_table_name}"'
        self.max_id = recorder.max_notification_id_statement
        self.webhook_url: str | None = None
        self.last = (0, GENESIS)
        self.heads: dict[str, list[Any]] = {}  # day -> [position, link, events added]
        self.daily: dict[tuple[Any, ...], list[int]] = {}
        self.games = game_sums()  # analytics_game_daily, added up as the projection does

    def start(self, conn: Any) -> None:
        from projections.hash_chain import last_link

        cursor = conn.cursor()
        self.last = last_link(_QmarkCursor(cursor))
        row = conn.execute(
            "SELECT webhook_url FROM webhook_operators WHERE operator_id = %s",
            (self.rounds.operator_id,),
        ).fetchone()
        self.webhook_url = row[0] if row else None

    def write(self, conn: Any, players: Sequence[str]) -> int:
        """One chunk: a round for each of ``players``, in one transaction; returns the
        number of events."""
        from application.games.upgrader.answers import round_wire
        from domain.hash_chain import chain_link, utc_day
        from domain.upgrader_round import UpgraderOpening, UpgraderSettlement
        from projections.analytics_facts import _flow_row, daily_increments, round_fact
        from projections.analytics_tables import DAILY_KEY_OF_FACT, DAILY_SUMS, FACT_COLUMNS
        from projections.outbox import render_payload, webhook_id
        from projections.rounds import _json

        head = conn.execute(self.max_id).fetchone()[0] or 0
        rows: dict[str, list[tuple[Any, ...]]] = {name: [] for name in TABLES}
        rows["events"] = []
        rows["analytics_rounds"] = []
        rows["analytics_item_flows"] = []
        position, previous = head, self.last[1]
        operator = self.rounds.operator_id
        for player in players:
            past = self.rounds.next_round(player)
            rid_hex, opening, settlement = past.rid.hex, past.opening, past.settlement
            positions = {}
            day = utc_day(past.events[0][3]["timestamp"])  # one moment per round
            for topic, originator, version, state in past.events:
                position += 1
                data = self.encode(state)
                rows["events"].append((position, originator, version, topic, data))
                previous = chain_link(previous, position, originator, version, topic, data)
                link = previous.hex()
                rows["event_chain"].append((position, link, originator.hex, version, topic, day))
                entry = self.heads.setdefault(day, [0, "", 0])
                entry[0], entry[1], entry[2] = position, link, entry[2] + 1
                positions[topic] = position
            topics = self.rounds.topics
            settled_at = positions[topics["settled"]]
            if past.started_pair:
                pair = self.rounds.pairs[player]
                rows["seed_vault"].append(
                    (pair.server_seed_hash, pair.server_seed, opening["opened_at"])
                )
            typed = UpgraderOpening.of(opening), UpgraderSettlement.of(settlement)
            view = round_wire(*typed)
            rows["round_history"].append(
                (
                    rid_hex,
                    opening["public_id"],
                    operator,
                    player,
                    "balance",
                    "settled",
                    settled_at,
                    _json(opening),
                    _json(view),
                )
            )
            debit = past.debit
            rows["wallet_debit_attempts"].append(
                (
                    debit["idempotency_key"],
                    rid_hex,
                    1,
                    WAGER,
                    opening["currency"],
                    "debited",
                    debit["at"],
                    debit["at"],
                )
            )
            if self.webhook_url:
                hook = webhook_id(past.rid)
                at = settlement["settled_at"]
                payload = render_payload(hook, _json(opening), settlement)
                rows["webhook_outbox"].append(
                    (hook, rid_hex, operator, player, settled_at, at, payload)
                )
                rows["webhook_deliveries"].append((hook, "delivered", 1, at, at, at))
            fact = {"round_id": rid_hex, **round_fact(opening, settlement), "position": settled_at}
            rows["analytics_rounds"].append(tuple(fact[c] for c in FACT_COLUMNS))
            key = tuple(fact[c] for c in DAILY_KEY_OF_FACT)
            sums = daily_increments(fact)
            add_round(self.games, box_sums(), "upgrader", fact)
            entry = self.daily.get(key)
            if entry is None:
                self.daily[key] = [fact["currency_exponent"], *(sums[s] for s in DAILY_SUMS)]
            else:
                for index, column in enumerate(DAILY_SUMS, start=1):
                    entry[index] += sums[column]
            grant = past.grant
            if grant is not None:
                granted_at = positions[topics["granted"]]
                item = past.events[-1][1].hex
                rows["inventory"].append(
                    (
                        grant["inventory_item_id"],
                        item,
                        operator,
                        player,
                        grant["item_id"],
                        "unresolved",
                        granted_at,
                        _grant_json(grant),
                    )
                )
                rows["analytics_item_flows"].append(
                    _flow_row(
                        granted_at,
                        item,
                        grant,
                        "granted",
                        grant["value_minor"],
                        grant["currency"],
                        grant.get("round_public_id"),
                        float(grant["granted_at"]),
                    )
                )
        with conn.transaction():
            self._copy(
                conn,
                self.table,
                ("notification_id", "originator_id", "originator_version", "topic", "state"),
                rows.pop("events"),
            )
            from projections.analytics_tables import FLOW_COLUMNS

            self._copy(conn, "analytics_rounds", FACT_COLUMNS, rows.pop("analytics_rounds"))
            self._copy(conn, "analytics_item_flows", FLOW_COLUMNS, rows.pop("analytics_item_flows"))
            for table, cols in TABLES.items():
                self._copy(conn, table, cols, rows[table])
            conn.execute(
                f"SELECT setval(pg_get_serial_sequence('{self.table}', 'notification_id'), %s)",
                (position,),
            )
            conn.execute("UPDATE projection_tracking SET position = %s", (position,))
        self.last = (position, previous)
        return position - head

    @staticmethod
    def _copy(conn: Any, table: str, columns: Sequence[str], rows: list[tuple[Any, ...]]) -> None:
        if not rows:
            return
        sql = f"COPY {table} ({', '.join(columns)}) FROM STDIN"
        with conn.cursor().copy(sql) as copy:
            for row in rows:
                copy.write_row(row)

    def finish(self, conn: Any) -> None:
        """The sums the chunks added up: the chain's day heads and the daily analytics,
        with the projections' own statements."""
        from projections.analytics_tables import _DAILY, _RATIOS
        from projections.hash_chain import _HEAD

        cursor = _QmarkCursor(conn.cursor())
        with conn.transaction():
            for day, (position, link, events) in self.heads.items():
                cursor.execute(_HEAD, (day, position, link, events))
            for key, entry in self.daily.items():
                cursor.execute(_DAILY, (*key, *entry))
                cursor.execute(_RATIOS, key)
            for sql, params in self.games.statements():
                cursor.execute(sql, params)
        self.heads, self.daily, self.games = {}, {}, game_sums()


def _grant_json(grant: dict[str, Any]) -> str:
    import json

    return json.dumps(grant, separators=(",", ":"))


class _QmarkCursor:
    """The projections' ``?`` statements on a plain psycopg cursor."""

    def __init__(self, cursor: Any) -> None:
        from application.store.sql import _PgCursor

        self._cursor = _PgCursor(cursor)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._cursor.execute(sql, params)

    def fetchone(self) -> Any:
        return self._cursor.fetchone()


def seed_history(
    platform: Any,
    players: Sequence[str],
    rounds: int,
    *,
    operator_id: str | None = None,
    chunk: int = CHUNK_ROUNDS,
    progress: Callable[[int, int], None] | None = None,
) -> Seeded:
    """``rounds`` settled balance rounds, round-robin over ``players``, into the store of
    ``platform`` (PostgreSQL; its configuration recorded, no process serving it)."""
    import psycopg

    from application.platform import ensure_tables
    from application.rounds.fairness import SCHEMA as FAIRNESS_SCHEMA
    from entrypoints.runtime import all_projections
    from projections.runner import ProjectionRunner

    started = time.monotonic()
    ensure_tables(platform.db, FAIRNESS_SCHEMA)
    runner = ProjectionRunner(platform.events, platform.db, all_projections(platform))
    runner.catch_up()  # the configuration's events: every read model at the log's head
    writer = HistoryWriter(platform, operator_id or platform.config.operators[0].id)
    location = platform.location
    result = Seeded(players=len(players))
    cycle = itertools.cycle(players)
    with psycopg.connect(
        location.conninfo(), autocommit=True, options=f"-c search_path={location.schema}"
    ) as conn:
        conn.execute("SET synchronous_commit = off")  # one flush at the end is enough
        writer.start(conn)
        while result.rounds < rounds:
            names = list(itertools.islice(cycle, min(chunk, rounds - result.rounds)))
            result.events += writer.write(conn, names)
            result.rounds += len(names)
            if progress is not None:
                progress(result.rounds, result.events)
        writer.finish(conn)
        conn.execute("SET synchronous_commit = on")
        conn.execute("SELECT txid_current()")  # a synchronous commit flushes the rest
        result.seconds = time.monotonic() - started
        tables = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s "
            "AND table_type = 'BASE TABLE'",
            (location.schema,),
        ).fetchall()
        for (name,) in tables:  # fresh statistics, as autovacuum would give them
            conn.execute(f'ANALYZE "{location.schema}"."{name}"')
    result.figures["analyse_seconds"] = round(time.monotonic() - started - result.seconds, 1)
    return result


def history_players(prefix: str, count: int, extra: int) -> list[str]:
    """The bench's players (``prefix`` + 5 digits) and ``extra`` players who are not in
    the bench (``past-`` + 6 digits): the rounds go round-robin over all of them."""
    return [f"{prefix}{n:05d}" for n in range(count)] + [f"past-{n:06d}" for n in range(extra)]


def main(argv: list[str] | None = None) -> int:
    from application.config.load import load_config
    from application.platform import Platform

    parser = argparse.ArgumentParser(prog="python -m ops.bench.history", description=__doc__)
    parser.add_argument("--config", required=True)
    parser.add_argument("--rounds", type=int, required=True)
    parser.add_argument("--players", type=int, default=2000)
    parser.add_argument("--prefix", default="player-")
    args = parser.parse_args(argv)
    platform = Platform(load_config(args.config))
    try:
        platform.record_configuration()
        players = history_players(args.prefix, args.players, 0)

        def report(rounds: int, events: int) -> None:
            if rounds % 50_000 < CHUNK_ROUNDS:
                print(f"history: {rounds:,} rounds, {events:,} events", flush=True)

        seeded = seed_history(platform, players, args.rounds, progress=report)
    finally:
        platform.close()
    print(
        f"history: {seeded.rounds:,} rounds ({seeded.events:,} events) for "
        f"{seeded.players:,} players in {seeded.seconds:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

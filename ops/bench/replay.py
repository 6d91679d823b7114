"""Replay benchmark: how fast ``upgrader audit`` re-checks the event log.

Generates a log of about ``--events`` (default 100,000) events in a SQLite store in a
temporary directory, fast: rounds are written straight through the domain and
application objects (quote, band, target check, opening, debit, roll, settle, grant, seed
rotations), many rounds per commit, not over HTTP. Then it runs the hash-chain
projection over the log (so the audit also recomputes the chain) and the audit, and
prints events per second for each, by wall-clock time and by the CPU time of this
process (``time.process_time``: the figure that other work on the machine blurs least).
It is not a test: nothing is asserted but that the audit of the generated log finds
nothing wrong.

    .venv/bin/python ops/bench/replay.py [--events 100000] [--keep DIR]
        [--database-url postgresql://postgres@127.0.0.1:5432/test] [--repeat N]

With ``--database-url`` (PostgreSQL) the log is written into a fresh schema
``replay_<pid>_<hex>`` of that database, dropped at the end. ``--repeat N`` runs the
audit N times over the same log and prints each run and the best.
"""

from __future__ import annotations

import argparse
import bisect
import os
import random
import secrets
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from application.audit.auditor import Auditor  # noqa: E402
from application.clock import ManualClock  # noqa: E402
from application.config.load import parse_config  # noqa: E402
from application.games.upgrader.opening import round_opening  # noqa: E402
from application.games.upgrader.quote import check_target, quote, upgrader_settings  # noqa: E402
from application.games.upgrader.settlement import _grant, settlement_record  # noqa: E402
from application.platform import Platform  # noqa: E402
from domain.fairness import is_win, roll, seed_hash  # noqa: E402
from domain.ids import round_id  # noqa: E402
from domain.money import reprice  # noqa: E402
from domain.player_fairness import PlayerFairness  # noqa: E402
from domain.round import Round  # noqa: E402
from projections.analytics import Analytics  # noqa: E402
from projections.hash_chain import HashChain  # noqa: E402
from projections.runner import ProjectionRunner  # noqa: E402

PLAYERS = 40
ROTATE_EVERY = 50  # rounds per seed pair
ROUNDS_PER_COMMIT = 200


def bench_config(database_url: str) -> Any:
    return parse_config(
        {
            "service": {"database_url": database_url},
            "operators": [
                {
                    "id": "bench",
                    "base_currency": "EUR",
                    "outbound_secret": "bench-outbound",
                    "wallet_url": "http://127.0.0.1:9/wallet",
                    "enabled_games": ["upgrader"],
                    "keys": [{"key_id": "bench-key", "secret": "bench-secret"}],
                    "currencies": [
                        {"code": "EUR", "rate": "1", "exponent": 2},
                        {"code": "USD", "rate": "1.08", "exponent": 2},
                    ],
                }
            ],
            "catalog": {
                "items": [
                    {
                        "item_id": i,
                        "name": {"en": f"Item {i}"},
                        "value_minor": 100 + i * 37,
                        "cashback_bps": 9000,
                    }
                    for i in range(1, 400)
                ]
            },
        },
        source="bench",
    )


class Seeds:
    """Each player's active pair, with its server seed kept here (no vault needed)."""

    def __init__(self, rng: random.Random, clock: ManualClock) -> None:
        self.rng = rng
        self.clock = clock
        self.pairs: dict[str, tuple[PlayerFairness, str]] = {}

    def _seed(self) -> str:
        return f"{self.rng.getrandbits(256):064x}"

    def pair(self, player: str) -> tuple[PlayerFairness, str]:
        if player not in self.pairs:
            seed = self._seed()
            pair = PlayerFairness(
                operator_id="bench",
                player_external_id=player,
                server_seed_hash=seed_hash(seed),
                client_seed=f"{self.rng.getrandbits(64):016x}",
                at=self.clock.now(),
            )
            self.pairs[player] = (pair, seed)
        return self.pairs[player]

    def rotate(self, player: str) -> None:
        pair, seed = self.pairs[player]
        fresh = self._seed()
        pair.rotate(seed, seed_hash(fresh), f"{self.rng.getrandbits(64):016x}", self.clock.now())
        self.pairs[player] = (pair, fresh)


def pick_target(rng: random.Random, by_value: list[tuple[int, int]], quoted: Any) -> int | None:
    """A catalogue item in the quote's band (found by base value, checked exactly)."""
    rate = quoted.currency.rate / quoted.operator.base.rate
    scale = rate * 10 ** (quoted.currency.exponent - quoted.operator.base.exponent)
    low = bisect.bisect_left(by_value, (int(quoted.band.lower_minor / scale) - 1, 0))
    high = bisect.bisect_right(by_value, (int(quoted.band.upper_minor / scale) + 1, 1 << 60))
    candidates = [
        item_id
        for value, item_id in by_value[low:high]
        if quoted.band.contains(reprice(value, quoted.operator.base, quoted.currency))
    ]
    return rng.choice(candidates) if candidates else None


class RoundMaker:
    """Settled balance rounds of random players, built straight through the domain and
    application objects (quote, band, target check, opening, debit, roll, settle, grant),
    with a seed rotation every ``ROTATE_EVERY`` rounds of a player."""

    def __init__(self, platform: Platform, rng: random.Random, clock: ManualClock) -> None:
        self.platform = platform
        self.rng = rng
        self.clock = clock
        self.operator = platform.directory.operators["bench"]
        self.catalog = platform.directory.catalog
        self.seeds = Seeds(rng, clock)
        self.presets = upgrader_settings(self.operator).chance_presets_bps
        self.by_value = sorted((i.value_minor, i.item_id) for i in self.catalog.values())
        self.played: dict[str, int] = {}

    def make(self, number: int) -> list[Any]:
        """Round number ``number``: the aggregates to save (round, then a granted item),
        or nothing when the random stake has no prize in its band."""
        platform, rng, clock, seeds = self.platform, self.rng, self.clock, self.seeds
        player = f"p-{rng.randrange(PLAYERS)}"
        currency = "USD" if rng.random() < 0.2 else "EUR"
        quoted = quote(
            self.operator,
            currency,
            rng.randrange(100, 20_000),
            rng.choice(self.presets),
            for_play=True,
        )
        target = pick_target(rng, self.by_value, quoted)
        if target is None:
            return []
        item, prize = check_target(quoted, self.catalog, target, None)
        action = f"a-{number}"
        rid = round_id("bench", player, action)
        clock.advance(0.5)
        opening = round_opening(
            platform,
            quoted,
            item,
            prize,
            rid=rid,
            player=player,
            client_action_id=action,
            mode="balance",
            fingerprint="bench",
        )
        round_ = Round(opening.record())
        key = f"{opening.public_id}:1"
        attempt = round_.attempt_debit(key, quoted.wager_minor, currency, clock.now())
        pair, server_seed = seeds.pair(player)
        nonce = pair.use_nonce(opening.public_id)
        rolled = roll(server_seed, pair.client_seed, nonce)
        won = is_win(rolled, opening.chance_bps)
        now = clock.now()
        won_item = granted = None
        if won:
            granted, won_item = _grant(opening, rid, now)
        settlement = settlement_record(opening, pair, nonce, rolled, won_item, None, now)
        debit = {
            "attempt": attempt,
            "idempotency_key": key,
            "balance_after_minor": None,
            "provider_txn_ref": None,
            "at": now,
        }
        round_.settle(debit, settlement.record())
        made: list[Any] = [round_]  # the order settle_round saves in: round, (pair), item
        if granted is not None:
            made.append(granted)
        self.played[player] = self.played.get(player, 0) + 1
        if self.played[player] % ROTATE_EVERY == 0:
            seeds.rotate(player)
        return made

    def touched_pairs(self) -> list[Any]:
        return [pair for pair, _ in self.seeds.pairs.values() if pair.pending_events]


def generate(database_url: str, events: int, seed: int = 7) -> tuple[Platform, int]:
    """Write rounds until the log holds at least ``events`` events; returns the rounds."""
    clock = ManualClock(start=1_800_000_000.0)
    platform = Platform(bench_config(database_url), clock=clock)
    platform.record_configuration()
    rng = random.Random(seed)
    maker = RoundMaker(platform, rng, clock)
    written = platform.events.recorder.max_notification_id() or 0
    rounds = 0
    while written < events:
        batch: list[Any] = []
        for _ in range(ROUNDS_PER_COMMIT):
            made = maker.make(rounds)
            if made:
                batch.extend(made)
                rounds += 1
        platform.events.save(*batch, *maker.touched_pairs())
        written = platform.events.recorder.max_notification_id() or 0
    return platform, rounds


def rate(count: int, seconds: float) -> str:
    return f"{count / seconds:,.0f}" if seconds > 0 else "inf"


def timed_audit(platform: Platform) -> tuple[Any, float, float]:
    started, cpu = time.perf_counter(), time.process_time()
    report = Auditor(platform.events, platform.db).run()
    return report, time.perf_counter() - started, time.process_time() - cpu


def run(database_url: str, events: int, repeat: int) -> int:
    started = time.perf_counter()
    platform, rounds = generate(database_url, events)
    total = platform.events.recorder.max_notification_id() or 0
    print(f"generated {total} events ({rounds} rounds) in {time.perf_counter() - started:.1f} s")
    try:
        runner = ProjectionRunner(
            platform.events,
            platform.db,
            [HashChain(platform.events.recorder), Analytics()],
            batch_size=1000,
        )
        for name in ("event_chain", "analytics"):
            started, cpu = time.perf_counter(), time.process_time()
            runner.catch_up(name)
            elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
            print(
                f"projection {name}: {rate(total, elapsed)} events/s wall ({elapsed:.2f} s), "
                f"{rate(total, cpu)} events/CPU s ({cpu:.2f} CPU s)"
            )
        runs = []
        for attempt in range(max(repeat, 1)):
            report, elapsed, cpu = timed_audit(platform)
            runs.append((cpu, elapsed))
            n = report.events_replayed
            print(
                f"audit replay{f' run {attempt + 1}' if repeat > 1 else ''}: {n:,} events; "
                f"wall {elapsed:.2f} s = {rate(n, elapsed)} events/s; "
                f"CPU {cpu:.2f} s = {rate(n, cpu)} events/CPU s "
                f"({report.rounds_checked} rounds, {report.fairness_verified} verified, "
                f"{report.fairness_committed} committed, {len(report.violations)} violations)"
            )
        if repeat > 1:
            cpu, elapsed = min(runs)
            print(
                f"audit replay best of {repeat}: CPU {cpu:.2f} s = "
                f"{rate(report.events_replayed, cpu)} events/CPU s; best wall "
                f"{min(w for _, w in runs):.2f} s = "
                f"{rate(report.events_replayed, min(w for _, w in runs))} events/s"
            )
        for violation in report.violations[:5]:
            print(f"  {violation.as_json()}")
        return 0 if report.ok else 1
    finally:
        platform.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--keep", metavar="DIR", help="write the SQLite store here and keep it")
    parser.add_argument(
        "--database-url",
        metavar="URL",
        help="a PostgreSQL database to write the log into (a fresh schema, dropped after)",
    )
    parser.add_argument("--repeat", type=int, default=1, help="audit the log N times")
    args = parser.parse_args(argv)
    if args.database_url:
        import psycopg

        if not args.database_url.startswith(("postgresql://", "postgres://")):
            parser.error("--database-url must be a postgresql:// URL (SQLite is the default)")
        base = args.database_url.split("?", 1)[0]
        schema = f"replay_{os.getpid()}_{secrets.token_hex(3)}"
        try:
            return run(f"{base}?schema={schema}", args.events, args.repeat)
        finally:
            with psycopg.connect(base, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    with tempfile.TemporaryDirectory(prefix="upgrader-bench-") as temp:
        directory = Path(args.keep) if args.keep else Path(temp)
        directory.mkdir(parents=True, exist_ok=True)
        return run(f"sqlite:///{directory}/bench.db", args.events, args.repeat)


if __name__ == "__main__":
    sys.exit(main())

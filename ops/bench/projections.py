"""Projection benchmark: how fast the projections catch up with a PostgreSQL event log.

Fills a fresh schema (``?schema=bench_proj_<pid>``, dropped at the end) with ``--rounds``
balance rounds written straight through the domain objects (as ``ops/bench/replay.py``
does, many rounds per commit), then times catching each projection up from position 0
on its own, and all of them together through ``ProjectionRunner.run_pass`` (what the
background worker runs). Prints events per second; nothing is asserted.

    .venv/bin/python -m ops.bench.projections [--rounds 4000] [--url postgresql://...]
        [--batch-size 500] [--per-event]

``--per-event`` hides the projections' ``process_batch`` so the runner applies events one
by one through ``process`` (the pre-batching write path, for comparison).

Measured on the 2-core box (PostgreSQL 15, shared with other jobs; 23,196 events, batch
500), the runner before batching -> with it, run back to back, in events per second: all 7
through ``run_pass`` 1,501 -> 6,754 (5.56 -> 1.98 s CPU); alone: event_chain 5,058 ->
31,627, analytics 8,151 -> 30,445, webhook_outbox 13,450 -> 33,512, round_history 16,371
-> 36,181, wallet_debit_attempts 19,535 -> 31,895, inventory 52,610 -> 77,779.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from application.clock import ManualClock  # noqa: E402
from application.platform import Platform  # noqa: E402
from entrypoints.runtime import all_projections  # noqa: E402
from ops.bench.replay import RoundMaker, bench_config  # noqa: E402
from projections.runner import ProjectionRunner, tables_of  # noqa: E402

ROUNDS_PER_COMMIT = 100
DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test"


def config(database_url: str) -> Any:
    cfg = bench_config(database_url)
    # a webhook URL, so the outbox renders and enqueues a webhook per settled round
    operator = msgspec.structs.replace(cfg.operators[0], webhook_url="http://127.0.0.1:9/hooks")
    return msgspec.structs.replace(cfg, operators=[operator])


def generate(platform: Platform, clock: ManualClock, rounds: int, seed: int = 11) -> None:
    maker = RoundMaker(platform, random.Random(seed), clock)
    done = 0
    while done < rounds:
        batch: list[Any] = []
        for _ in range(min(ROUNDS_PER_COMMIT, rounds - done)):
            made = maker.make(done)
            if made:
                batch.extend(made)
                done += 1
        platform.events.save(*batch, *maker.touched_pairs())


def projections(platform: Platform) -> list[Any]:
    return all_projections(platform)


class PerEvent:
    """A projection seen without its ``process_batch``: the runner applies event by event."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.name, self.schema, self.topics = inner.name, inner.schema, inner.topics
        if hasattr(inner, "rebuild_tables"):
            self.rebuild_tables = inner.rebuild_tables

    def process(self, cur: Any, event: Any, position: int) -> None:
        self._inner.process(cur, event, position)


def reset(platform: Platform, runner: ProjectionRunner) -> None:
    with platform.db.transaction() as cur:
        for name, projection in runner.projections.items():
            cur.execute("UPDATE projection_tracking SET position = 0 WHERE name = ?", (name,))
            for table in tables_of(projection):
                cur.execute(f"DELETE FROM {table}")  # noqa: S608 - our own table names
            if name == "webhook_outbox":
                cur.execute("DELETE FROM webhook_deliveries")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4000)
    parser.add_argument(
        "--url", default=os.environ.get("UPGRADER_TEST_POSTGRES_URL") or DEFAULT_URL
    )
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--per-event", action="store_true")
    args = parser.parse_args(argv)
    schema = f"bench_proj_{os.getpid()}"
    url = f"{args.url.split('?')[0]}?schema={schema}"
    clock = ManualClock(start=1_800_000_000.0)
    platform = Platform(config(url), clock=clock)
    try:
        platform.record_configuration()
        started = time.perf_counter()
        generate(platform, clock, args.rounds)
        total = platform.events.recorder.max_notification_id() or 0
        print(
            f"generated {total} events ({args.rounds} rounds) in "
            f"{time.perf_counter() - started:.1f} s; batch size {args.batch_size}"
            f"{'; per-event process' if args.per_event else ''}"
        )
        wrap = PerEvent if args.per_event else (lambda p: p)
        for projection in projections(platform):
            runner = ProjectionRunner(
                platform.events, platform.db, [wrap(projection)], batch_size=args.batch_size
            )
            started, cpu = time.perf_counter(), time.process_time()
            runner.catch_up(projection.name)
            elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
            print(
                f"  {projection.name:24s} {total / elapsed:9,.0f} events/s "
                f"({elapsed:6.2f} s, {cpu:6.2f} s CPU)"
            )
        runner = ProjectionRunner(
            platform.events,
            platform.db,
            [wrap(p) for p in projections(platform)],
            batch_size=args.batch_size,
        )
        reset(platform, runner)
        started, cpu = time.perf_counter(), time.process_time()
        while runner.run_pass():
            pass
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        assert all(runner.position(name) == total for name in runner.projections)
        print(
            f"  {'all 7 (run_pass)':24s} {total / elapsed:9,.0f} events/s "
            f"({elapsed:6.2f} s, {cpu:6.2f} s CPU)"
        )
    finally:
        platform.close()
        import psycopg

        with psycopg.connect(platform.location.conninfo(), autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    return 0


if __name__ == "__main__":
    sys.exit(main())

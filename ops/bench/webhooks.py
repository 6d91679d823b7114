"""Webhook dispatcher benchmark: how fast ``round_settled`` webhooks leave the outbox.

On PostgreSQL, in a fresh schema (``?schema=bench_wh_<pid>``, dropped at the end):

1. enqueues ``--webhooks`` pending webhooks for ``--players`` players with the outbox
   projection's own INSERT statements (players interleaved in settle order, ~1 KB bodies);
2. times the dispatcher's claim (``WebhookDispatcher._claim``: the claim query plus the
   leases, median of 5, leases cleared after each) with no delivered history, then again
   after adding ``--delivered`` already delivered rows (lower positions, same players),
   and at the end with 100 pending rows behind all of those delivered (a steady state);
3. starts the reference operator's receiver (``ops/reference_operator/wallet.py``, which
   verifies every signature) in a child process on loopback, runs the dispatcher's
   ``run_forever`` until every webhook is recorded ``delivered`` and prints webhooks per
   second and the CPU milliseconds per webhook of this (the dispatcher's) process
   (``time.process_time``; the receiver and PostgreSQL are other processes).

    .venv/bin/python -m ops.bench.webhooks [--webhooks 5000] [--players 500]
        [--delivered 100000] [--concurrency N] [--url postgresql://...]

Nothing is asserted; the receiver's counts (stored, distinct, refused) are printed.

Measured on the 2-core box (PostgreSQL 15, shared with other jobs; 5,000 webhooks, 500
players, 100,000 delivered), before -> after batching and the heads-only claim, run back
to back: delivery 141 webhooks/s at 0.728 ms CPU per webhook (concurrency 16) -> 1,108
webhooks/s at 0.179 ms (concurrency 64; 278 webhooks/s, 0.391 ms at 16); claim with
100,000 delivered rows 64.3 -> 29.4 ms (5,000 pending) and 63.1 -> 11.9 ms (100 pending).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from application.platform import Platform  # noqa: E402
from application.store.sql import execute_in_order  # noqa: E402
from ops.bench.replay import bench_config  # noqa: E402
from projections import outbox  # noqa: E402
from projections.dispatcher import WebhookDispatcher  # noqa: E402
from projections.runner import ProjectionRunner  # noqa: E402

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test"
OPERATOR = "bench"
SECRET = "bench-outbound"
PENDING_BASE = 10_000_000  # pending positions come after every delivered one
CLAIM_LIMIT = 64


# --------------------------------------------------------------------------- receiver


def _receiver(conn: Any) -> None:
    """Child process: the reference receiver, plus GET /bench/count."""
    from aiohttp import web

    from ops.reference_operator.wallet import Faults, Ledger, make_app

    async def main() -> None:
        ledger = Ledger()
        app = make_app(ledger, Faults(), {OPERATOR: SECRET})

        async def count(request: web.Request) -> web.Response:
            ids = [hook["id"] for hook in ledger.received_webhooks]
            return web.json_response(
                {
                    "received": len(ids),
                    "distinct": len(set(ids)),
                    "attempts": ledger.webhook_attempts,
                    "auth_failures": len(ledger.auth_failures),
                }
            )

        app.router.add_get("/bench/count", count)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        conn.send(runner.addresses[0][1])
        await asyncio.get_running_loop().run_in_executor(None, conn.recv)  # "stop"
        await runner.cleanup()

    asyncio.run(main())


# --------------------------------------------------------------------------- filling


def _payload(hook_id: str, player: str, index: int) -> str:
    body = {
        "id": hook_id,
        "type": outbox.WEBHOOK_TYPE,
        "createdAt": "2027-01-15T08:00:00.000Z",
        "operatorId": OPERATOR,
        "playerExternalId": player,
        "data": {
            "round": {"publicId": f"R{index:012d}", "mode": "balance", "padding": "x" * 600},
            "wonItem": None,
            "stake": None,
            "facts": {"rolledBps": index % 10_000, "chanceBps": 5000, "nonce": index},
        },
    }
    return json.dumps(body, separators=(",", ":"))


def enqueue_pending(
    platform: Platform, count: int, players: int, now: float, first: int = 0
) -> None:
    """``count`` pending webhooks through the outbox projection's own statements."""
    for start in range(first, first + count, 2000):
        statements: list[tuple[str, tuple[Any, ...]]] = []
        for index in range(start, min(first + count, start + 2000)):
            hook_id, player = f"wh-{index:08d}", f"p-{index % players}"
            row = (hook_id, f"round-{index}", OPERATOR, player, PENDING_BASE + index, now)
            statements.append((outbox._ENQUEUE, (*row, _payload(hook_id, player, index))))
        statements.sort(key=lambda st: st[0])  # all outbox rows, then all deliveries
        statements += [(outbox._PENDING, (st[1][0], now)) for st in statements]
        with platform.db.transaction() as cur:
            execute_in_order(cur, statements)


def add_delivered(platform: Platform, start: int, stop: int, players: int) -> None:
    """Delivered history rows ``start``..``stop - 1`` (positions below every pending one)."""
    with platform.db.transaction() as cur:
        cur.execute(
            "INSERT INTO webhook_outbox (webhook_id, round_id, operator_id, "
            "player_external_id, position, created_at, payload) "
            "SELECT 'old-' || g, 'old-round-' || g, ?, 'p-' || mod(g, ?::bigint), g, 0, "
            "repeat('x', 900) FROM generate_series(?::bigint, ?::bigint) AS g",
            (OPERATOR, players, start, stop - 1),
        )
        cur.execute(
            "INSERT INTO webhook_deliveries (webhook_id, state, attempts, next_attempt_at, "
            "last_attempt_at, delivered_at) "
            "SELECT 'old-' || g, 'delivered', 1, 0, 0, 0 "
            "FROM generate_series(?::bigint, ?::bigint) AS g",
            (start, stop - 1),
        )
        cur.execute("ANALYZE webhook_outbox")
        cur.execute("ANALYZE webhook_deliveries")


def time_claim(platform: Platform, dispatcher: WebhookDispatcher, runs: int = 5) -> str:
    """The median wall time of one claim of up to CLAIM_LIMIT rows (leases undone after)."""
    times: list[float] = []
    got = 0
    for _ in range(runs):
        started = time.perf_counter()
        rows = dispatcher._claim(CLAIM_LIMIT)
        times.append(time.perf_counter() - started)
        got = len(rows)
        with platform.db.transaction() as cur:
            cur.execute("UPDATE webhook_deliveries SET leased_until = NULL, lease_owner = NULL")
    return f"{statistics.median(times) * 1000:8.2f} ms median ({got} rows claimed)"


# --------------------------------------------------------------------------- delivering


def _undelivered(platform: Platform) -> int:
    with platform.db.transaction() as cur:
        cur.execute("SELECT COUNT(*) FROM webhook_deliveries WHERE state <> 'delivered'")
        return cur.fetchone()[0]


async def deliver_all(
    platform: Platform, dispatcher: WebhookDispatcher, total: int
) -> tuple[float, float]:
    """Run the dispatcher until no row is pending; (wall seconds, CPU seconds)."""
    stopping = asyncio.Event()
    started, cpu = time.perf_counter(), time.process_time()
    task = asyncio.create_task(dispatcher.run_forever(stopping))
    while True:
        await asyncio.sleep(0.25)
        left = await asyncio.to_thread(_undelivered, platform)
        if left == 0 or task.done():
            break
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    stopping.set()
    await task
    return elapsed, cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--webhooks", type=int, default=5000)
    parser.add_argument("--players", type=int, default=500)
    parser.add_argument("--delivered", type=int, default=100_000)
    parser.add_argument("--concurrency", type=int, default=None, help="the dispatcher default")
    parser.add_argument(
        "--url", default=os.environ.get("UPGRADER_TEST_POSTGRES_URL") or DEFAULT_URL
    )
    args = parser.parse_args(argv)
    schema = f"bench_wh_{os.getpid()}"
    url = f"{args.url.split('?')[0]}?schema={schema}"

    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    receiver = ctx.Process(target=_receiver, args=(child,), daemon=True)
    receiver.start()
    port = parent.recv()
    base = f"http://127.0.0.1:{port}"

    cfg = bench_config(url)
    operator = msgspec.structs.replace(cfg.operators[0], webhook_url=f"{base}/webhooks")
    platform = Platform(msgspec.structs.replace(cfg, operators=[operator]))
    try:
        platform.record_configuration()
        runner = ProjectionRunner(platform.events, platform.db, [outbox.WebhookOutbox()])
        options = {} if args.concurrency is None else {"concurrency": args.concurrency}
        dispatcher = WebhookDispatcher(platform, runner, **options)
        now = platform.clock.now()
        started = time.perf_counter()
        enqueue_pending(platform, args.webhooks, args.players, now - 1)
        with platform.db.transaction() as cur:
            cur.execute("ANALYZE webhook_outbox")
            cur.execute("ANALYZE webhook_deliveries")
        print(
            f"enqueued {args.webhooks} pending webhooks for {args.players} players in "
            f"{time.perf_counter() - started:.1f} s; concurrency {dispatcher.concurrency}"
        )
        print(
            f"  claim, {args.webhooks} pending, {0:>7,} delivered: "
            f"{time_claim(platform, dispatcher)}"
        )
        done = 0
        for step in (args.delivered // 10, args.delivered):
            if step <= done:
                continue
            add_delivered(platform, done + 1, step + 1, args.players)
            done = step
            print(
                f"  claim, {args.webhooks} pending, {done:>7,} delivered: "
                f"{time_claim(platform, dispatcher)}"
            )
        elapsed, cpu = asyncio.run(deliver_all(platform, dispatcher, args.webhooks))
        import aiohttp

        async def count() -> dict[str, int]:
            async with (
                aiohttp.ClientSession() as session,
                session.get(f"{base}/bench/count") as response,
            ):
                return await response.json()

        seen = asyncio.run(count())
        print(
            f"  delivered {args.webhooks} webhooks in {elapsed:.2f} s: "
            f"{args.webhooks / elapsed:,.0f} webhooks/s, "
            f"{cpu * 1000 / args.webhooks:.3f} ms CPU per webhook "
            f"({cpu:.2f} s CPU in the dispatcher process)"
        )
        enqueue_pending(platform, 100, args.players, now - 1, first=args.webhooks)
        print(
            f"  claim, 100 pending, {args.delivered + args.webhooks:>7,} delivered: "
            f"{time_claim(platform, dispatcher)}"
        )
        print(
            f"  receiver: {seen['received']} stored ({seen['distinct']} distinct), "
            f"{seen['attempts']} attempts, {seen['auth_failures']} refused signatures"
        )
    finally:
        platform.close()
        parent.send("stop")
        receiver.join(5)
        import psycopg

        with psycopg.connect(platform.location.conninfo(), autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    return 0


if __name__ == "__main__":
    sys.exit(main())

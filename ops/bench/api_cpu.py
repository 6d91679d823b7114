"""API-process CPU per S2S request: the HTTP layer's own cost, measured in isolation.

``.venv/bin/python -m ops.bench.api_cpu`` (PostgreSQL; ``--database-url``, default the
local ``test`` database):

1. creates a fresh schema ``bench_api_<pid>``, writes the load bench's configuration
   (``ops/bench/load.py``: one operator, one key, the catalogue ladder; abuse limits at
   ``--limits``, so every request still makes its rate-limit writes), starts the
   reference operator (wallet) and ``upgrader serve --workers N`` (default 2: the
   background loops then run in their own process, so the API processes' CPU is the
   request path alone), and waits for a signed health check;
2. sends ``--requests`` signed requests per phase at ``--concurrency`` (default 4):
   ``prizes`` (``GET /api/s2s/upgrader/prizes``), ``balance``
   (``POST /api/s2s/upgrader/play``) and ``items`` (``POST .../play-with-items``,
   staking the items the balance phase won), after ``--warmup`` requests of each;
3. prints, per phase, the API processes' CPU ms per request (user + system, from
   ``/proc``), requests/s and the errors;
4. drops the schema and stops everything in ``finally`` blocks.

``--profile FILE --profile-phase prizes|balance|items`` runs ``py-spy record --format
raw --gil`` on the first API process for that phase and prints the top functions.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ops.bench.load import (
    CHANCE,
    ITEMS_CHANCE,
    WAGER,
    Child,
    Client,
    conninfo_of,
    find_processes,
    percentile,
    process_cpu,
    start_stack,
    stop_stack,
    summarise_collapsed,
    with_schema,
)

DEFAULT_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/test"
PHASES = ("prizes", "balance", "items")


class ApiBench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.run_id = secrets.token_hex(4)
        self.schema = f"bench_api_{os.getpid()}"
        self.database_url = with_schema(args.database_url, self.schema)
        self.secret = secrets.token_hex(16)
        self.outbound = secrets.token_hex(16)
        self.prefix = f"ba{self.run_id}-"
        self.players = [f"{self.prefix}{n:05d}" for n in range(args.players)]
        self.workdir = Path(tempfile.mkdtemp(prefix="upgrader-api-cpu-"))
        self.server: Child | None = None
        self.operator: Child | None = None
        self.api_pids: list[int] = []
        self.base_url = ""
        self.seq = 0
        self.targets: list[int] = []
        self.pool: list[tuple[str, int, int]] = []
        self.items_targets: dict[int, int | None] = {}

    # -- set-up and tear-down ----------------------------------------------------------

    def setup(self) -> None:
        import psycopg

        with psycopg.connect(conninfo_of(self.args.database_url), autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')
            conn.execute(f'CREATE SCHEMA "{self.schema}"')
        stack = start_stack(
            self.args,
            self.workdir,
            database_url=self.database_url,
            secret=self.secret,
            outbound=self.outbound,
            prefix=self.prefix,
            players=len(self.players),
            app_name=f"upgrader-api-cpu-{self.run_id}",
        )
        self.operator, self.server, self.base_url = stack.operator, stack.server, stack.base_url
        self.api_pids, _ = find_processes(stack.server, self.args.workers)

    def teardown(self) -> None:
        stop_stack("api_cpu", (self.server, self.operator), self.args.database_url, self.schema)
        shutil.rmtree(self.workdir, ignore_errors=True)

    # -- requests ------------------------------------------------------------------------

    def player(self, number: int) -> str:
        return self.players[number % len(self.players)]

    def action_id(self) -> str:
        self.seq += 1
        return f"{self.run_id}-{self.seq}"

    async def prizes(self, client: Client, number: int) -> tuple[int, bytes]:
        query = [("playerExternalId", self.player(number)), ("wagerMinor", WAGER)]
        return await client.call(
            "GET", "/api/s2s/upgrader/prizes", query=[*query, ("chanceBps", CHANCE)]
        )

    async def balance(self, client: Client, number: int) -> tuple[int, bytes]:
        player = self.player(number)
        payload = {
            "playerExternalId": player,
            "clientActionId": self.action_id(),
            "wagerMinor": WAGER,
            "chanceBps": CHANCE,
            "targetItemId": self.targets[number % len(self.targets)],
        }
        status, raw = await client.call("POST", "/api/s2s/upgrader/play", payload)
        if status == 200:
            won = client.decode(raw).get("wonItem")
            if won:
                self.pool.append((player, won["inventoryItemId"], won["itemId"]))
        return status, raw

    async def items(self, client: Client, number: int) -> tuple[int, bytes]:
        while not self.pool:
            await self.balance(client, number)
        player, inventory_id, item_id = self.pool.pop()
        target = await self.items_target(client, player, inventory_id, item_id)
        if target is None:
            return await self.items(client, number)
        payload = {
            "playerExternalId": player,
            "clientActionId": self.action_id(),
            "stakeItemIds": [inventory_id],
            "chanceBps": ITEMS_CHANCE,
            "targetItemId": target,
        }
        status, raw = await client.call("POST", "/api/s2s/upgrader/play-with-items", payload)
        if status == 200:
            won = client.decode(raw).get("wonItem")
            if won:
                self.pool.append((player, won["inventoryItemId"], won["itemId"]))
        return status, raw

    async def items_target(
        self, client: Client, player: str, inventory_id: int, item_id: int
    ) -> int | None:
        if item_id not in self.items_targets:
            status, raw = await client.call(
                "GET",
                "/api/s2s/upgrader/prizes-by-items",
                query=[
                    ("playerExternalId", player),
                    ("stakeItemIds", inventory_id),
                    ("chanceBps", ITEMS_CHANCE),
                ],
            )
            prizes = client.decode(raw).get("prizes") if status == 200 else None
            self.items_targets[item_id] = prizes[0]["itemId"] if prizes else None
        return self.items_targets[item_id]

    # -- phases --------------------------------------------------------------------------

    def api_cpu(self) -> float:
        return sum(process_cpu(pid) or 0.0 for pid in self.api_pids)

    async def phase(self, client: Client, name: str, count: int) -> dict[str, Any]:
        send = {"prizes": self.prizes, "balance": self.balance, "items": self.items}[name]
        numbers = iter(range(count))
        latencies: list[float] = []
        errors: dict[str, int] = {}
        if name == "items":  # the pool and the targets first: not part of the figures
            while len(self.pool) < count:
                await self.balance(client, len(self.pool))
            for player, inventory_id, item_id in list(self.pool):
                await self.items_target(client, player, inventory_id, item_id)

        async def worker() -> None:
            for number in numbers:
                started = time.perf_counter()
                status, raw = await send(client, number)
                if status == 200:
                    latencies.append(time.perf_counter() - started)
                else:
                    key = client.error_key(status, raw)
                    errors[key] = errors.get(key, 0) + 1

        profiler = self.start_profiler() if self.args.profile_phase == name else None
        cpu_before, wall_before = self.api_cpu(), time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(self.args.concurrency)))
        wall = time.perf_counter() - wall_before
        cpu = self.api_cpu() - cpu_before
        profile = self.finish_profiler(profiler)
        ok = len(latencies)
        return {
            "phase": name,
            "ok": ok,
            "errors": errors,
            "seconds": wall,
            "requests_per_s": count / wall,
            "api_cpu_ms_per_request": 1000 * cpu / count,
            "p50_ms": 1000 * (percentile(latencies, 50) or 0),
            "p99_ms": 1000 * (percentile(latencies, 99) or 0),
            "profile": profile,
        }

    def start_profiler(self) -> subprocess.Popen[bytes] | None:
        binary = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        if not Path(binary).exists():
            print("api_cpu: py-spy not found (pip install -e '.[bench]')", file=sys.stderr)
            return None
        command = [
            *(binary, "record", "--pid", str(self.api_pids[0]), "--rate", "200"),
            *("--format", "raw", "-o", self.args.profile, "--nonblocking"),
        ]
        if not self.args.profile_wall:
            command.append("--gil")
        process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
        )
        time.sleep(1.0)  # attached before the phase starts
        return process

    def finish_profiler(self, process: subprocess.Popen[bytes] | None) -> dict[str, Any] | None:
        if process is None:
            return None
        process.send_signal(signal.SIGINT)
        try:
            _, err = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            _, err = process.communicate()
        path = Path(self.args.profile)
        if not path.exists():
            return {"error": (err or b"").decode(errors="replace")[-400:]}
        return summarise_collapsed(path, top=self.args.profile_top)

    async def run(self) -> list[dict[str, Any]]:
        args = self.args
        client = Client(self.base_url, self.secret, max(4, args.concurrency))
        try:
            status, raw = await self.prizes(client, 0)
            if status != 200:
                raise RuntimeError(f"prizes answered {status}: {raw[:300]!r}")
            self.targets = [p["itemId"] for p in client.decode(raw)["prizes"]]
            for name in args.phases:  # warm-up: imports, prepared statements, pools
                if args.warmup:
                    await self.phase(client, name, args.warmup)
            return [await self.phase(client, name, args.requests) for name in args.phases]
        finally:
            await client.close()


def print_results(args: argparse.Namespace, results: list[dict[str, Any]]) -> None:
    print(
        f"\nAPI CPU per request: {args.requests} requests per phase, concurrency "
        f"{args.concurrency}, upgrader serve --workers {args.workers}, limits {args.limits}"
    )
    print(f"{'phase':<9} {'ok':>6} {'req/s':>8} {'API cpu ms/req':>15} {'p50 ms':>8} {'p99 ms':>8}")
    for r in results:
        print(
            f"{r['phase']:<9} {r['ok']:>6} {r['requests_per_s']:>8.1f} "
            f"{r['api_cpu_ms_per_request']:>15.2f} {r['p50_ms']:>8.1f} {r['p99_ms']:>8.1f}"
            + (f"  errors {r['errors']}" if r["errors"] else "")
        )
    for r in results:
        profile = r.get("profile")
        if not profile:
            continue
        print(f"\nprofile of {r['phase']} (py-spy, {profile.get('samples')} samples)")
        for title in ("packages", "self", "inclusive_src"):
            print(f"  {title}:")
            for name, share in profile.get(title, []):
                print(f"    {share:5.1f} %  {name}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.api_cpu", description=__doc__)
    add = parser.add_argument
    add("--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE_URL))
    add("--requests", type=int, default=1000, help="requests per phase (default 1000)")
    add("--warmup", type=int, default=100, help="warm-up requests per phase (default 100)")
    add("--concurrency", type=int, default=4)
    add("--workers", type=int, default=2, help="API processes (upgrader serve --workers)")
    add("--players", type=int, default=500)
    add("--limits", type=int, default=1_000_000, help="abuse limits (0: off, no writes)")
    add("--phases", nargs="+", choices=PHASES, default=list(PHASES))
    add("--server-env", action="append", default=[], metavar="KEY=VALUE")
    add("--profile", metavar="FILE", help="py-spy raw output for --profile-phase")
    add("--profile-phase", choices=PHASES)
    add("--profile-wall", action="store_true", help="sample all threads (not --gil)")
    add("--profile-top", type=int, default=20)
    args = parser.parse_args(argv)
    if args.profile and not args.profile_phase:
        args.profile_phase = args.phases[0]
    if not args.profile:
        args.profile_phase = None
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    bench = ApiBench(args)
    try:
        bench.setup()
        results = asyncio.run(bench.run())
    finally:
        bench.teardown()
    print_results(args, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Load benchmark: the real platform on PostgreSQL against the real reference operator.

``make bench`` (or ``.venv/bin/python -m ops.bench.load``) does, from a clean clone:

1. creates a fresh PostgreSQL schema (``--database-url``, default the local ``test``
   database), writes a bench configuration into a temporary folder (one operator, one
   key, a catalogue ladder so that every stake has in-band prizes, abuse limits raised to
   ``--limits``), starts the reference operator (wallet + webhook receiver,
   ``ops/reference_operator/wallet.py``) in its own process with ``--players`` funded
   players, and the platform (``upgrader serve --workers N``; ``--workers 1`` is the
   single-process ``upgrader serve``) on free loopback ports, and waits for a signed
   health check;
2. warms up (``--warmup`` s of balance plays), then drives signed S2S requests at a
   fixed concurrency (``--concurrency``) for a fixed time (``--duration``) in three
   phases: balance-mode plays, items-mode plays (staking the items the balance plays
   won) and prize-list reads; then a fixed-RATE phase (``--rate`` plays/s for
   ``--rate-duration`` s, open loop: sends are scheduled at a constant rate and latency
   is measured from the scheduled time, so a slow server cannot hide its queue);
3. prints per phase: requests/s, p50/p95/p99 latency, errors by status and code, the
   projection lag (sampled every ``--lag-interval`` s from ``projection_tracking``
   against the log head: p99 in seconds and in events) and the webhook delivery lag
   (settle time -> arrival at the receiver, p50/p99);
4. measures the machine's ceiling with ``pgbench`` (TPC-B-like, ``-i -s 10`` into a
   scratch database it creates and drops, then ``-c 8 -j 2 -T 15``) and prints the
   plays/s as a ratio of pgbench transactions/s;
5. stops everything it started and drops the schema and the scratch database (finally
   blocks), and exits 0 (1 only when the set-up itself failed). All traffic goes to
   127.0.0.1.

Profiling: ``--profile out.txt`` runs ``py-spy record`` (``pip install py-spy``) on one
API process for the balance phase and prints the top functions; ``--profile-format
flamegraph`` writes an SVG instead (``--profile-target worker`` profiles the background
worker process).

Experiments without touching ``src/``: ``--server-env KEY=VALUE`` (repeatable) passes
variables to the platform processes, e.g. ``UPGRADER_POOL_SIZE=16`` or
``PYTHONPATH=/dir`` holding extra packages (uvloop, httptools are picked up by uvicorn
when importable); ``--limits 0`` switches the abuse limits (and their per-request
writes) off.

Figures on a 2-core machine shared with the load generator, the wallet and PostgreSQL
are a floor, not a capacity statement: see docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import collections
import contextlib
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from ops.bench.overload import (
    DEFAULT_MULTIPLES,
    counted_loop,
    floor_in_run,
    money_invariant,
    open_loop_rates,
    print_issue18,
    scans_during,
    table_scans,
    wait_for_answers,
)

ROOT = Path(__file__).resolve().parents[2]

OPERATOR_ID = "bench"
KEY_ID = "bench-key"
WAGER = 1000  # W
CHANCE = 5000  # p, balance mode: band 1728..1900 with a 5 % edge
ITEMS_CHANCE = 9000  # items mode: 90 % wins keep the stake pool alive
CURRENCY = "EUR"
FUND_MINOR = 10**13
DEFAULT_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/test"

log = logging.getLogger("bench")


# --------------------------------------------------------------------------- config


def catalogue_items() -> list[dict[str, Any]]:
    """A geometric ladder of 218 prices, 4 % apart, from 1.00 to about 4,970 EUR: every
    band (upper/lower = 1.1) holds at least two items, for any stake down to the minimum."""
    items, value, number = [], 100.0, 1
    while value <= 500_000:
        items.append(
            {
                "item_id": 5000 + number,
                "name": f"Bench item {number}",
                "value_minor": round(value),
            }
        )
        value *= 1.04
        number += 1
    return items


def config_text(
    *,
    port: int,
    database_url: str,
    wallet_base: str,
    secret: str,
    outbound: str,
    limits: int,
    service: Sequence[str] = (),
) -> str:
    lines = [
        "[service]",
        f'base_url = "http://127.0.0.1:{port}"',
        'host = "127.0.0.1"',
        f"port = {port}",
        f'database_url = "{database_url}"',
        "session_idle_seconds = 1800",
        "launch_token_ttl_seconds = 120",
        "uncertain_debit_grace_seconds = 15",  # abandoned attempts rolled back in the drain
        "wallet_timeout_seconds = 10",
        "max_body_bytes = 65536",
        *service,  # --service KEY=VALUE (TOML values)
        "",
        "[[operators]]",
        f'id = "{OPERATOR_ID}"',
        f'base_currency = "{CURRENCY}"',
        f'wallet_url = "{wallet_base}/wallet"',
        f'webhook_url = "{wallet_base}/webhooks"',
        f'outbound_secret = "{outbound}"',
        'enabled_games = ["upgrader"]',
        "credits_share_bps = 10000",
        "",
        "  [operators.limits]",
        f"  requests_per_second_per_key = {limits}",
        f"  requests_per_second_per_session = {limits}",
        f"  plays_per_second_per_player = {limits}",
        "",
        "  [[operators.keys]]",
        f'  key_id = "{KEY_ID}"',
        f'  secret = "{secret}"',
        "  catalog_access = true",
        "  revoked = false",
        "",
        "  [[operators.currencies]]",
        f'  code = "{CURRENCY}"',
        '  rate = "1"',
        "  exponent = 2",
        "",
        "  [operators.upgrader]",
        "  house_edge_bps = 500",
        "  chance_presets_bps = [1000, 2500, 5000, 7500, 9000]",
        "  default_chance_bps = 5000",
        "  max_chance_bps = 9500",
        "  min_wager_minor = 10",
        "  max_wager_minor = 10000000",
        "  balance_mode = true",
        "  items_mode = true",
        "  prize_list_limit = 24",
        "  no_loss = false",
        "  nuggets_cost_percent = 0",
    ]
    for item in catalogue_items():
        lines += [
            "",
            "[[catalog.items]]",
            f"item_id = {item['item_id']}",
            f'name = {{ en = "{item["name"]}" }}',
            f"value_minor = {item['value_minor']}",
            "active = true",
            "fulfillable = true",
            "cashback_bps = 9000",
            "collectible = false",
        ]
    return "\n".join(lines) + "\n"


def with_schema(database_url: str, schema: str) -> str:
    base = database_url.split("?", 1)[0]
    return f"{base}?schema={schema}"


def stop_stack(who: str, children: Any, database_url: str, schema: str | None) -> None:
    """Stop the processes a bench started and drop its schema; say what failed, go on."""
    import psycopg

    for child in children:
        if child is not None:
            try:
                child.stop()
            except Exception as exc:
                print(f"{who}: stopping {child.name}: {exc}", file=sys.stderr)
    if schema:
        try:
            with psycopg.connect(conninfo_of(database_url), autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        except Exception as exc:
            print(f"{who}: dropping schema {schema}: {exc}", file=sys.stderr)


def conninfo_of(database_url: str, dbname: str | None = None) -> str:
    from psycopg.conninfo import make_conninfo

    parts = urlsplit(database_url)
    return make_conninfo(
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 5432,
        user=parts.username or "postgres",
        password=parts.password or None,
        dbname=dbname or (parts.path or "/").lstrip("/") or "postgres",
    )


# --------------------------------------------------------------------------- signing


def sign(secret: bytes, method: str, path: str, body: bytes) -> dict[str, str]:
    """The S2S envelope (README "Signing a request"): the path only, never the query."""
    ts = str(int(time.time()))
    canonical = f"{ts}\n{method}\n{path}\n{hashlib.sha256(body).hexdigest()}"
    return {
        "X-Key-Id": KEY_ID,
        "X-Timestamp": ts,
        "X-Signature": hmac.new(secret, canonical.encode(), hashlib.sha256).hexdigest(),
        "Content-Type": "application/json",
    }


# --------------------------------------------------------------------------- processes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Child:
    """One process group of ours, output to a log file, stopped with SIGTERM then SIGKILL."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], log_path: Path) -> None:
        self.name, self.argv, self.env, self.log_path = name, argv, env, log_path
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> Child:
        with open(self.log_path, "ab") as out:
            self.process = subprocess.Popen(
                self.argv,
                cwd=ROOT,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return self

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, grace: float = 20.0) -> None:
        process = self.process
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)  # anything left in our group

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def descendants(pid: int) -> list[tuple[int, str]]:
    """(pid, command line) of every descendant of ``pid`` (from /proc)."""
    children: dict[int, list[int]] = collections.defaultdict(list)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                stat = handle.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children[ppid].append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            try:
                with open(f"/proc/{child}/cmdline", "rb") as handle:
                    cmdline = handle.read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            found.append((child, cmdline))
            todo.append(child)
    return found


def child_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("UPGRADER_")}
    if "PYTHONPATH" in extra and env.get("PYTHONPATH"):
        extra = {**extra, "PYTHONPATH": extra["PYTHONPATH"] + os.pathsep + env["PYTHONPATH"]}
    env.update(extra)
    return env


# --------------------------------------------------------------------------- operator


def operator_main(argv: list[str]) -> None:
    """``python -m ops.bench.load operator``: the reference wallet and webhook receiver,
    funded players, and ``GET /bench/webhooks`` (arrival time and settle-to-arrival lag
    of every webhook received)."""
    parser = argparse.ArgumentParser(prog="ops.bench.load operator")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--players", type=int, required=True)
    parser.add_argument("--prefix", required=True)
    args = parser.parse_args(argv)
    secret = os.environ["BENCH_OUTBOUND_SECRET"]

    from aiohttp import web

    from ops.reference_operator.wallet import Faults, Ledger, make_app

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(message)s")

    class TimedLedger(Ledger):
        def __init__(self) -> None:
            super().__init__()
            self.arrivals: list[tuple[float, str | None]] = []

        def record_webhook(self, body: dict[str, Any], *, stored: bool) -> None:
            self.arrivals.append((time.time(), body.get("createdAt")))
            super().record_webhook(body, stored=stored)

    ledger = TimedLedger()
    for number in range(args.players):
        ledger.fund(OPERATOR_ID, f"{args.prefix}{number:05d}", CURRENCY, FUND_MINOR)
    app = make_app(ledger, Faults(), {OPERATOR_ID: secret})

    async def webhooks(request: web.Request) -> web.StreamResponse:
        rows = []
        for arrived, created in list(ledger.arrivals):
            settled = parse_iso(created) if created else None
            rows.append([arrived, settled])
        debits = sum(1 for r in list(ledger.requests) if r.type == "wallet.debit")
        net = ledger.net_debits(OPERATOR_ID)
        return web.json_response({"webhooks": rows, "debits": debits, "net_debits": net})

    app.router.add_get("/bench/webhooks", webhooks)
    web.run_app(app, host="127.0.0.1", port=args.port, print=None, access_log=None, loop=new_loop())


def new_loop() -> asyncio.AbstractEventLoop:
    """uvloop where installed (it is, with uvicorn[standard]): the wallet and the load
    generator share the machine with the platform, so their CPU per request is kept low
    (docs/performance.md has the figures before and after)."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvicorn[standard] brings it
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def parse_iso(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()


# --------------------------------------------------------------------------- statistics


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]


@dataclass
class Stack:
    """The reference operator and the platform, started as children on free ports."""

    operator: Child
    server: Child
    wallet_base: str
    base_url: str


def start_stack(
    args: argparse.Namespace,
    workdir: Path,
    *,
    database_url: str,
    secret: str,
    outbound: str,
    prefix: str,
    players: int,
    app_name: str,
    prepare: Callable[[Path], None] | None = None,
) -> Stack:
    """Write the bench configuration, start the reference operator (wallet and webhook
    receiver, ``players`` funded players named ``prefix``NNNNN) and ``upgrader serve
    [--workers N]``, and wait until both answer (the platform a signed health check).
    ``prepare(config_path)`` runs before the platform starts (e.g. to seed a history)."""
    wallet_port, api_port = free_port(), free_port()
    wallet_base = f"http://127.0.0.1:{wallet_port}"
    base_url = f"http://127.0.0.1:{api_port}"
    config_path = workdir / "bench.toml"
    config_path.write_text(
        config_text(
            port=api_port,
            database_url=database_url,
            wallet_base=wallet_base,
            secret=secret,
            outbound=outbound,
            limits=args.limits,
            service=[
                f"{k} = {v}" for k, v in (kv.split("=", 1) for kv in getattr(args, "service", ()))
            ],
        )
    )
    operator = Child(
        "operator",
        [
            *(sys.executable, "-m", "ops.bench.load", "operator"),
            *("--port", str(wallet_port), "--players", str(players), "--prefix", prefix),
        ],
        child_env({"BENCH_OUTBOUND_SECRET": outbound}),
        workdir / "operator.log",
    ).start()
    if prepare is not None:
        try:
            prepare(config_path)
        except BaseException:
            operator.stop()
            raise
    module = cli_module(args.server_env)
    serve = [sys.executable, "-m", module, "serve", "--config", str(config_path)]
    if args.workers > 1:
        serve += ["--workers", str(args.workers)]
    extra = {"PGAPPNAME": app_name}
    extra.update(kv.split("=", 1) for kv in args.server_env)
    server = Child("platform", serve, child_env(extra), workdir / "platform.log").start()
    wait_http(f"{wallet_base}/healthz", operator, None)
    wait_http(f"{base_url}/api/s2s/health", server, secret)
    return Stack(operator, server, wallet_base, base_url)


def cli_module(server_env: list[str]) -> str:
    """The platform's command module: ``entrypoints.cli``, or ``api.cli`` where the server's
    PYTHONPATH is a tree from before the entrypoints package (``ops.bench.by_commit``)."""
    for kv in server_env:
        name, _, value = kv.partition("=")
        if name == "PYTHONPATH" and not (Path(value) / "entrypoints" / "cli.py").exists():
            return "api.cli"
    return "entrypoints.cli"


def wait_http(url: str, child: Child, secret: str | None, timeout: float = 60) -> None:
    """Until ``url`` answers 200 (signed with ``secret`` when given)."""
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + timeout
    while True:
        if not child.running:
            raise RuntimeError(f"{child.name} exited before answering:\n{child.log_tail()}")
        headers = sign(secret.encode(), "GET", urlsplit(url).path, b"") if secret else {}
        try:
            request = urllib.request.Request(url, headers=headers)  # noqa: S310 - loopback
            with urllib.request.urlopen(request, timeout=2) as response:  # noqa: S310
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{child.name} not healthy in {timeout} s:\n{child.log_tail()}")
        time.sleep(0.2)


def find_processes(server: Child, workers: int) -> tuple[list[int], int | None]:
    """The API processes' pids and the background worker's (None in single-process
    mode, where the one process does both)."""
    if workers <= 1:
        return [server.pid], None
    deadline = time.monotonic() + 20
    while True:
        found = descendants(server.pid)
        apis = [pid for pid, cmd in found if "spawn_main" in cmd]
        background = [pid for pid, cmd in found if " worker all" in cmd]
        if len(apis) >= workers or time.monotonic() > deadline:
            return apis, background[0] if background else None
        time.sleep(0.2)


@dataclass
class PhaseStats:
    name: str
    kind: str  # "closed" (fixed concurrency) or "open" (fixed rate)
    started: float = 0.0  # wall clock
    ended: float = 0.0
    latencies: list[float] = field(default_factory=list)  # seconds, successful requests
    errors: collections.Counter = field(default_factory=collections.Counter)
    target_rate: float | None = None
    multiple: float | None = None  # open loop: the rate as a multiple of the measured peak
    cpu: dict[str, Any] | None = None

    @property
    def elapsed(self) -> float:
        return max(1e-9, self.ended - self.started)

    @property
    def ok(self) -> int:
        return len(self.latencies)

    def rate(self) -> float:
        return self.ok / self.elapsed

    def record_error(self, key: str) -> None:
        self.errors[key] += 1

    def summary(self) -> dict[str, Any]:
        ms = [v * 1000 for v in self.latencies]
        return {
            "phase": self.name,
            "kind": self.kind,
            "target_rate": self.target_rate,
            "multiple": self.multiple,
            "ok": self.ok,
            "errors": dict(self.errors),
            "seconds": round(self.elapsed, 2),
            "per_second": round(self.rate(), 1),
            "p50_ms": _round(percentile(ms, 50)),
            "p95_ms": _round(percentile(ms, 95)),
            "p99_ms": _round(percentile(ms, 99)),
            "max_ms": _round(max(ms) if ms else None),
            "window": [self.started, self.ended],
            "cpu_ms_per_request": self.cpu,
        }


def _round(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


# --------------------------------------------------------------------------- the client


class Client:
    """Signed S2S calls over ONE aiohttp session with a tuned connector."""

    def __init__(self, base_url: str, secret: str, connections: int) -> None:
        import aiohttp
        import msgspec

        self._aiohttp = aiohttp
        self._encode = msgspec.json.encode
        self.decode = msgspec.json.decode
        self.base_url = base_url
        self.secret = secret.encode()
        connector = aiohttp.TCPConnector(
            limit=connections,
            limit_per_host=connections,
            keepalive_timeout=60,
            ttl_dns_cache=None,
            enable_cleanup_closed=False,
        )
        self.session = aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=30),
            skip_auto_headers=("User-Agent",),
            auto_decompress=False,
        )

    async def close(self) -> None:
        await self.session.close()

    async def call(
        self,
        method: str,
        path: str,
        payload: Any = None,
        query: list[tuple[str, Any]] | None = None,
    ) -> tuple[int, bytes]:
        from yarl import URL

        body = b"" if payload is None else self._encode(payload)
        headers = sign(self.secret, method, path, body)
        url = self.base_url + path + ("?" + urlencode(query) if query else "")
        async with self.session.request(
            method, URL(url, encoded=True), data=body or None, headers=headers
        ) as response:
            return response.status, await response.read()

    def error_key(self, status: int, raw: bytes) -> str:
        try:
            code = self.decode(raw)["error"]["code"]
        except Exception:
            code = "?"
        return f"{status} {code}"


Request = Callable[[int], Awaitable[tuple[int, bytes]]]
OVERLOADED = "503 OVERLOADED"  # admission control's refusal (README "Processes")
RETRY_AFTER_SECONDS = 1.0  # what it says to wait


async def send(
    stats: PhaseStats,
    client: Client,
    request: Request,
    number: int,
    on_ok: Callable[[bytes], None] | None,
    clock: Callable[[], float],
    since: float,
) -> str | None:
    """Send request ``number`` and record its outcome in ``stats``: on a 200 its latency
    (``clock()`` at the answer minus ``since``) and ``on_ok(body)``, otherwise its error.
    Returns "" on a 200, the error ("503 OVERLOADED") otherwise, None when the client
    itself failed (no answer)."""
    try:
        status, raw = await request(number)
    except Exception as exc:
        stats.record_error(f"client {type(exc).__name__}")
        return None
    latency = clock() - since
    if status == 200:
        stats.latencies.append(latency)
        if on_ok is not None:
            on_ok(raw)
        return ""
    error = client.error_key(status, raw)
    stats.record_error(error)
    return error


async def closed_loop(
    stats: PhaseStats,
    client: Client,
    concurrency: int,
    duration: float,
    request: Request,
    on_ok: Callable[[bytes], None] | None = None,
) -> PhaseStats:
    """``concurrency`` workers, each sending its next request when the last one answered."""
    loop = asyncio.get_running_loop()
    counter = iter(range(10**12))
    deadline = loop.time() + duration

    async def worker() -> None:
        while loop.time() < deadline:
            started = time.perf_counter()
            outcome = await send(
                stats, client, request, next(counter), on_ok, time.perf_counter, started
            )
            if outcome is None:
                await asyncio.sleep(0.01)  # no answer: not at once again
            elif outcome == OVERLOADED:  # as a client should: after its Retry-After
                await asyncio.sleep(min(RETRY_AFTER_SECONDS, max(0.0, deadline - loop.time())))

    stats.started = time.time()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    stats.ended = time.time()
    return stats


async def open_loop(
    stats: PhaseStats,
    client: Client,
    rate: float,
    duration: float,
    request: Request,
    max_in_flight: int,
    on_ok: Callable[[bytes], None] | None = None,
) -> PhaseStats:
    """Send at a constant rate whatever the answers do; latency from the scheduled time."""
    loop = asyncio.get_running_loop()
    total = int(rate * duration)
    in_flight: set[asyncio.Task] = set()

    async def one(number: int, scheduled: float) -> None:
        await send(stats, client, request, number, on_ok, loop.time, scheduled)

    stats.started = time.time()
    start = loop.time() + 0.01
    for number in range(total):
        scheduled = start + number / rate
        delay = scheduled - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        if len(in_flight) >= max_in_flight:
            stats.record_error("not sent (client backlog full)")
            continue
        task = asyncio.create_task(one(number, scheduled))
        in_flight.add(task)
        task.add_done_callback(in_flight.discard)
    if in_flight:
        _, late = await asyncio.wait(set(in_flight), timeout=30)
        for task in late:
            task.cancel()
            stats.record_error("no answer 30 s after the phase")
    stats.ended = time.time()
    return stats


# --------------------------------------------------------------------------- lag sampler


ACTIVITY = """
SELECT CASE
         WHEN state = 'active' AND wait_event IS NULL THEN 'running'
         WHEN state = 'active' THEN 'waiting ' || wait_event_type || ':' || wait_event
         WHEN state LIKE 'idle in transaction%%' THEN 'in transaction, waiting for the app'
         ELSE 'idle' END,
       count(*)
FROM pg_stat_activity WHERE application_name = %s GROUP BY 1"""


class LagSampler:
    """Samples the log head and every projection's position in one statement, and what
    the platform's PostgreSQL backends are doing (``pg_stat_activity``: running, waiting
    for a lock, for the WAL, or idle inside a transaction waiting for the application)."""

    def __init__(
        self, conninfo: str, schema: str, interval: float, application_name: str = ""
    ) -> None:
        self.conninfo, self.schema, self.interval = conninfo, schema, interval
        self.application_name = application_name
        self.samples: list[tuple[float, int, dict[str, int]]] = []
        self.activity: list[tuple[float, dict[str, int]]] = []
        self.error: str | None = None

    async def run(self, stopping: asyncio.Event) -> None:
        import psycopg

        # the schema name is generated by this bench (bench_<pid>_<hex>)
        events, tracking = f"{self.schema}.upgrader_events", f"{self.schema}.projection_tracking"
        query = (
            "SELECT (SELECT COALESCE(max(notification_id), 0) FROM "  # noqa: S608
            + events
            + "), name, position FROM "
            + tracking
        )
        try:
            async with await psycopg.AsyncConnection.connect(
                self.conninfo, autocommit=True
            ) as conn:
                while not stopping.is_set():
                    now = time.time()
                    cursor = await conn.execute(query)
                    rows = await cursor.fetchall()
                    if rows:
                        self.samples.append((now, rows[0][0], {r[1]: r[2] for r in rows}))
                    if self.application_name:
                        cursor = await conn.execute(ACTIVITY, (self.application_name,))
                        states = {row[0]: row[1] for row in await cursor.fetchall()}
                        self.activity.append((now, states))
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stopping.wait(), self.interval)
        except Exception as exc:  # the bench goes on without lag figures
            self.error = f"{type(exc).__name__}: {exc}"

    def backends(self, window: tuple[float, float]) -> dict[str, float]:
        """Average number of the platform's backends in each state over ``window``."""
        inside = [states for at, states in self.activity if window[0] <= at <= window[1]]
        totals: collections.Counter = collections.Counter()
        for states in inside:
            totals.update(states)
        return {k: round(v / len(inside), 2) for k, v in totals.most_common()} if inside else {}

    def lags(self, window: tuple[float, float]) -> dict[str, Any]:
        """Projection lag over the samples in ``window``: in events (head - position of
        the slowest projection) and in seconds (now - when the first unapplied event was
        first seen at the head; resolution: the sampling interval)."""
        times = [s[0] for s in self.samples]
        heads = [s[1] for s in self.samples]
        events: list[int] = []
        seconds: list[float] = []
        worst: collections.Counter = collections.Counter()
        for at, head, positions in self.samples:
            if not window[0] <= at <= window[1] or not positions:
                continue
            name, position = min(positions.items(), key=lambda kv: kv[1])
            events.append(head - position)
            if position >= head:
                seconds.append(0.0)
                continue
            worst[name] += 1
            first = bisect.bisect_left(heads, position + 1)
            seconds.append(max(0.0, at - times[first]) if first < len(times) else 0.0)
        return {
            "samples": len(events),
            "p50_s": _round(percentile(seconds, 50), 3),
            "p99_s": _round(percentile(seconds, 99), 3),
            "max_s": _round(max(seconds) if seconds else None, 3),
            "p50_events": percentile([float(e) for e in events], 50),
            "p99_events": percentile([float(e) for e in events], 99),
            "max_events": max(events) if events else None,
            "slowest": worst.most_common(1)[0][0] if worst else None,
            **self.throughput(window),
        }

    def throughput(self, window: tuple[float, float]) -> dict[str, Any]:
        """Events appended to the log and applied by the slowest projection, per second."""
        inside = [s for s in self.samples if window[0] <= s[0] <= window[1] and s[2]]
        if len(inside) < 2:
            return {"appended_per_s": None, "projected_per_s": None}
        (t0, h0, p0), (t1, h1, p1) = inside[0], inside[-1]
        span = max(1e-9, t1 - t0)
        return {
            "appended_per_s": round((h1 - h0) / span, 1),
            "projected_per_s": round((min(p1.values()) - min(p0.values())) / span, 1),
        }

    def caught_up(self) -> bool:
        if not self.samples:
            return False
        _, head, positions = self.samples[-1]
        return bool(positions) and min(positions.values()) >= head


# --------------------------------------------------------------------------- CPU meter

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def process_cpu(pid: int) -> float | None:
    """User + system CPU seconds of one process (from /proc), None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def machine_cpu() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot (from /proc/stat)."""
    with open("/proc/stat") as handle:
        values = [int(v) for v in handle.readline().split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    total = sum(values[:8])
    return (total - idle) / CLOCK_TICKS, total / CLOCK_TICKS


class CpuMeter:
    """CPU seconds used by each group of our processes between two snapshots: the API
    processes, the background worker, the reference operator, this load generator, and
    the PostgreSQL backends serving the platform (the platform runs with ``PGAPPNAME``
    set, so its backends are those with that ``application_name``). CPU per request is
    what a shared, noisy machine cannot blur much, unlike requests per second."""

    def __init__(self, conninfo: str, application_name: str, split: tuple[str, ...] = ()) -> None:
        self.conninfo = conninfo
        self.application_name = application_name
        self.groups: dict[str, list[int]] = {}
        # groups whose backends are counted apart ("api" -> "api_pg"; cpu_groups.py);
        # without, every backend of the platform is one "postgres" group
        self.split = split
        self.error: str | None = None
        self._conn: Any = None

    def backends(self) -> list[tuple[int, int | None]]:
        """(pid, client port) of every backend of the platform."""
        import psycopg

        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(self.conninfo, autocommit=True)
        rows = self._conn.execute(
            "SELECT pid, client_port FROM pg_stat_activity WHERE application_name = %s",
            (self.application_name,),
        ).fetchall()
        return [(row[0], row[1]) for row in rows]

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()

    def snapshot(self) -> dict[str, Any]:
        from ops.bench.cpu_groups import split_backends

        groups: dict[str, list[int] | None] = dict(self.groups)
        try:
            backends = self.backends()
            if self.split:
                clients = {name: self.groups.get(name, []) for name in self.split}
                groups.update(split_backends(backends, clients))
            else:
                groups["postgres"] = [pid for pid, _ in backends]
        except Exception as exc:  # e.g. "too many clients": no PostgreSQL figure
            self.error = f"{type(exc).__name__}: {exc}"
            names = [f"{n}_pg" for n in self.split] + ["other_pg"] if self.split else ["postgres"]
            for name in names:
                groups[name] = None
        per_pid = {
            name: None
            if pids is None
            else {pid: cpu for pid in pids if (cpu := process_cpu(pid)) is not None}
            for name, pids in groups.items()
        }
        return {"at": time.monotonic(), "pids": per_pid, "machine": machine_cpu()}

    @staticmethod
    def delta(before: dict[str, Any], after: dict[str, Any], requests: int) -> dict[str, Any]:
        """CPU ms per request by group, and how busy the whole machine was."""
        out: dict[str, Any] = {}
        total = 0.0
        for name, now in after["pids"].items():
            then = before["pids"].get(name, {})
            if now is None or then is None:
                out[name] = None
                continue
            used = sum(cpu - then.get(pid, 0.0) for pid, cpu in now.items())
            total += used
            out[name] = round(1000 * used / max(1, requests), 2)
        split = [out[name] for name in out if name.endswith("_pg")]
        if split:  # the backends counted apart, and all of them
            out["postgres"] = None if None in split else round(sum(split), 2)
        out["total"] = round(1000 * total / max(1, requests), 2)
        wall = max(1e-9, after["at"] - before["at"])
        busy = after["machine"][0] - before["machine"][0]
        span = after["machine"][1] - before["machine"][1]
        cores = os.cpu_count() or 1
        out["ours_cores"] = round(total / wall, 2)
        out["machine_busy_pct"] = round(100 * busy / span, 1) if span else None
        out["others_cores"] = (
            round(max(0.0, busy / span * cores - total / wall), 2) if span else None
        )
        return out


# --------------------------------------------------------------------------- pgbench


def run_pgbench(database_url: str, seconds: int, scale: int) -> dict[str, Any]:
    """TPC-B-like ceiling of this machine: ``pgbench -i -s scale`` into a scratch database
    created and dropped here, then ``pgbench -c 8 -j 2 -T seconds``."""
    import psycopg

    binary = shutil.which("pgbench")
    if binary is None:
        return {"error": "pgbench is not installed (apt-get install postgresql-client)"}
    parts = urlsplit(database_url)
    dbname = f"bench_pgbench_{os.getpid()}_{secrets.token_hex(3)}"
    admin = conninfo_of(database_url)
    common = [
        "-h",
        parts.hostname or "127.0.0.1",
        "-p",
        str(parts.port or 5432),
        "-U",
        parts.username or "postgres",
    ]
    env = dict(os.environ)
    if parts.password:
        env["PGPASSWORD"] = parts.password
    result: dict[str, Any] = {"scale": scale, "clients": 8, "threads": 2, "seconds": seconds}
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{dbname}"')
    try:
        started = time.monotonic()
        init = subprocess.run(
            [binary, *common, "-i", "-s", str(scale), "-q", dbname],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        result["init_seconds"] = round(time.monotonic() - started, 1)
        if init.returncode != 0:
            result["error"] = f"pgbench -i failed: {init.stderr.strip()[-300:]}"
            return result
        run = subprocess.run(
            [binary, *common, "-n", "-c", "8", "-j", "2", "-T", str(seconds), dbname],
            env=env,
            capture_output=True,
            text=True,
            timeout=seconds + 120,
            check=False,
        )
        match = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", run.stdout)
        latency = re.search(r"latency average = ([0-9.]+) ms", run.stdout)
        if run.returncode != 0 or match is None:
            result["error"] = f"pgbench failed: {(run.stderr or run.stdout).strip()[-300:]}"
            return result
        result["tps"] = float(match.group(1))
        result["latency_ms"] = float(latency.group(1)) if latency else None
        return result
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')


# --------------------------------------------------------------------------- profile


def summarise_collapsed(path: Path, top: int = 25) -> dict[str, Any]:
    """Top functions of a py-spy ``--format raw`` (collapsed stacks) file: self share,
    inclusive share, and self share by package."""
    self_counts: collections.Counter = collections.Counter()
    incl_counts: collections.Counter = collections.Counter()
    packages: collections.Counter = collections.Counter()
    total = 0
    for line in path.read_text(errors="replace").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        total += count
        frames = [f for f in stack.split(";") if f]
        # the first frame may be "process NNN:..." or "thread (0x..)": keep code frames only
        code = [
            re.sub(r":\d+\)$", ")", f)  # one row per function, not per line
            for f in frames
            if "(" in f and not f.startswith(("process ", "thread "))
        ]
        if not code:
            continue
        self_counts[code[-1]] += count
        packages[package_of(code[-1])] += count
        for frame in set(code):
            incl_counts[frame] += count

    def share(counter: collections.Counter) -> list[list[Any]]:
        return [[name, round(100 * n / total, 1)] for name, n in counter.most_common(top)]

    ours = collections.Counter(
        {name: n for name, n in incl_counts.items() if package_of(name).startswith("src/")}
    )
    return {
        "samples": total,
        "self": share(self_counts),
        "inclusive": share(incl_counts),
        "inclusive_src": share(ours),
        "packages": share(packages),
    }


STDLIB_PACKAGES = {"asyncio", "json", "concurrent", "multiprocessing", "email", "http", "logging"}


def package_of(frame: str) -> str:
    """The package (or stdlib module, or src/ layer) a py-spy frame belongs to."""
    match = re.search(r"\(([^():]+)(?::\d+)?\)\s*$", frame)
    where = match.group(1) if match else frame
    if "site-packages/" in where:
        where = where.split("site-packages/", 1)[1]
    for layer in ("domain", "application", "projections", "api"):
        if f"src/{layer}/" in where or where.startswith(f"{layer}/"):
            return f"src/{layer}"
    if "/lib/python3" in where:
        where = where.split("/lib/python3", 1)[1].split("/", 1)[-1]
    head = where.lstrip("/").split("/", 1)
    if len(head) == 1:
        return f"{head[0]} (stdlib)" if head[0].endswith(".py") else head[0]
    return f"{head[0]} (stdlib)" if head[0] in STDLIB_PACKAGES else head[0]


# --------------------------------------------------------------------------- the bench


@dataclass
class Bench:
    args: argparse.Namespace
    schema: str = ""
    database_url: str = ""
    secret: str = ""
    outbound: str = ""
    players: list[str] = field(default_factory=list)
    server: Child | None = None
    operator: Child | None = None
    api_pids: list[int] = field(default_factory=list)
    background_pid: int | None = None
    base_url: str = ""
    wallet_base: str = ""
    workdir: Path | None = None
    results: dict[str, Any] = field(default_factory=dict)
    balance_targets: list[int] = field(default_factory=list)
    items_targets: dict[int, int | None] = field(default_factory=dict)
    pool: collections.deque = field(default_factory=collections.deque)
    action_seq: int = 0
    run_id: str = field(default_factory=lambda: secrets.token_hex(4))
    history: int = 0  # past rounds seeded before the platform starts (ops/bench/history.py)

    @property
    def app_name(self) -> str:
        return f"upgrader-bench-{self.run_id}"

    # -- set-up -----------------------------------------------------------------------

    def setup(self) -> None:
        import psycopg

        args = self.args
        self.schema = f"bench_{os.getpid()}_{secrets.token_hex(3)}"
        self.database_url = with_schema(args.database_url, self.schema)
        self.secret = secrets.token_hex(16)
        self.outbound = secrets.token_hex(16)
        prefix = f"bp{self.run_id}-"
        self.players = [f"{prefix}{n:05d}" for n in range(args.players)]
        self.workdir = Path(tempfile.mkdtemp(prefix="upgrader-bench-"))
        with psycopg.connect(conninfo_of(args.database_url), autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{self.schema}"')

        stack = start_stack(
            args,
            self.workdir,
            database_url=self.database_url,
            secret=self.secret,
            outbound=self.outbound,
            prefix=prefix,
            players=args.players,
            app_name=self.app_name,
            prepare=self.seed_history if self.history > 0 else None,
        )
        self.operator, self.server = stack.operator, stack.server
        self.wallet_base, self.base_url = stack.wallet_base, stack.base_url
        self.api_pids, self.background_pid = find_processes(stack.server, args.workers)

    def seed_history(self, config_path: Path) -> None:
        """``self.history`` settled rounds in the store before the platform starts, over
        the bench's players and as many others (``--history-players``)."""
        from application.config.load import load_config
        from application.platform import Platform
        from ops.bench.history import history_players, seed_history

        args = self.args
        total = args.history_players or max(args.players, self.history // 50)
        names = history_players(f"bp{self.run_id}-", args.players, total - args.players)
        platform = Platform(load_config(config_path))
        try:
            platform.record_configuration()
            started = time.monotonic()

            def report(rounds: int, events: int) -> None:
                if rounds % 100_000 < 5000 or rounds == self.history:
                    elapsed = time.monotonic() - started
                    print(f"history: {rounds:,} rounds, {events:,} events, {elapsed:.0f} s")

            seeded = seed_history(platform, names, self.history, progress=report)
        finally:
            platform.close()
        self.results["history"] = self.history
        self.results["history_seed"] = {
            "rounds": seeded.rounds,
            "events": seeded.events,
            "players": seeded.players,
            "seconds": round(seeded.seconds, 1),
            **seeded.figures,
        }

    def teardown(self) -> None:
        stop_stack("bench", (self.server, self.operator), self.args.database_url, self.schema)
        if self.workdir is not None and not self.args.keep_logs:
            shutil.rmtree(self.workdir, ignore_errors=True)

    # -- requests -----------------------------------------------------------------------

    def player(self, number: int) -> str:
        return self.players[number % len(self.players)]

    def action_id(self) -> str:
        self.action_seq += 1
        return f"{self.run_id}-{self.action_seq}"

    def balance_request(self, client: Client, chance: int = CHANCE) -> Request:
        targets = self.balance_targets

        async def request(number: int) -> tuple[int, bytes]:
            payload = {
                "playerExternalId": self.player(number),
                "clientActionId": self.action_id(),
                "wagerMinor": WAGER,
                "chanceBps": chance,
                "targetItemId": targets[number % len(targets)],
            }
            return await client.call("POST", "/api/s2s/upgrader/play", payload)

        return request

    async def discover_balance_targets(self, client: Client) -> None:
        status, raw = await client.call(
            "GET",
            "/api/s2s/upgrader/prizes",
            query=[
                ("playerExternalId", self.players[0]),
                ("wagerMinor", WAGER),
                ("chanceBps", CHANCE),
            ],
        )
        if status != 200:
            raise RuntimeError(f"prizes answered {status}: {raw[:300]!r}")
        answer = client.decode(raw)
        self.balance_targets = [p["itemId"] for p in answer["prizes"]]
        if not self.balance_targets:
            raise RuntimeError("no in-band prize for W=1000 p=5000: check the catalogue")
        self.results["band"] = answer["targetBand"]

    async def items_target(
        self, client: Client, player: str, inv_id: int, item_id: int
    ) -> int | None:
        if item_id in self.items_targets:
            return self.items_targets[item_id]
        status, raw = await client.call(
            "GET",
            "/api/s2s/upgrader/prizes-by-items",
            query=[
                ("playerExternalId", player),
                ("stakeItemIds", inv_id),
                ("chanceBps", ITEMS_CHANCE),
            ],
        )
        target = None
        if status == 200:
            prizes = client.decode(raw)["prizes"]
            target = prizes[0]["itemId"] if prizes else None
        elif status != 422:
            return None  # not cached: a transient failure
        self.items_targets[item_id] = target
        return target

    # -- phases --------------------------------------------------------------------------

    async def run(self) -> None:
        args = self.args
        client = Client(self.base_url, self.secret, max(args.concurrency, args.max_in_flight))
        stopping = asyncio.Event()
        sampler = LagSampler(
            conninfo_of(args.database_url), self.schema, args.lag_interval, self.app_name
        )
        sampler_task = asyncio.create_task(sampler.run(stopping))
        phases: list[PhaseStats] = []
        split = ("api", "worker") if self.background_pid else ("api",)
        meter = CpuMeter(conninfo_of(args.database_url), self.app_name, split=split)
        meter.groups = {
            "api": list(self.api_pids),
            "worker": [self.background_pid] if self.background_pid else [],
            "operator": [self.operator.pid] if self.operator else [],
            "client": [os.getpid()],
        }

        with contextlib.suppress(Exception):
            meter.backends()  # its connection now, before the platform's pools grow

        async def measured(
            stats: PhaseStats, load: Awaitable[PhaseStats], key: str, seconds: float
        ) -> None:
            profiler = self.start_profiler(seconds) if args.profile_phase == key else None
            before = meter.snapshot()
            await load
            stats.cpu = CpuMeter.delta(before, meter.snapshot(), stats.ok)
            self.finish_profiler(profiler)
            phases.append(stats)

        try:
            await self.discover_balance_targets(client)
            wanted = set(args.phases)

            # Balance plays; every win goes to the items phase's stake pool.
            balance_calls = self.balance_request(client)

            def keep_won(player: str, raw: bytes) -> None:
                won = client.decode(raw).get("wonItem")
                if won:
                    self.pool.append((player, won["inventoryItemId"], won["itemId"]))

            async def play_and_keep(number: int) -> tuple[int, bytes]:
                status, raw = await balance_calls(number)
                if status == 200:
                    keep_won(self.player(number), raw)
                return status, raw

            async def closed_phase(key: str, name: str, request: Request, note: str = "") -> None:
                print(
                    f"{key}: {args.duration:g} s at concurrency {args.concurrency}{note} ...",
                    flush=True,
                )
                stats = PhaseStats(name, "closed")
                await measured(
                    stats,
                    closed_loop(stats, client, args.concurrency, args.duration, request),
                    key,
                    args.duration,
                )

            self.results["run_started"] = time.time()
            scans_before = await asyncio.to_thread(table_scans, args.database_url, self.schema)
            if args.first_plays:
                # every player's first play (of the run; with a history, the first since
                # the processes started, their caches cold), reported apart
                print(f"first plays: one for each of {len(self.players)} players ...", flush=True)
                stats = PhaseStats("first plays", "closed")
                await measured(
                    stats,
                    counted_loop(
                        stats, client, args.concurrency, len(self.players), play_and_keep, send
                    ),
                    "first",
                    0,
                )

            if args.warmup > 0:
                print(f"warm-up: {args.warmup:g} s of balance plays ...", flush=True)
                await closed_loop(
                    PhaseStats("warm-up", "closed"),
                    client,
                    args.concurrency,
                    args.warmup,
                    play_and_keep,
                )

            if "balance" in wanted:
                await closed_phase("balance", "balance plays", play_and_keep)

            if "items" in wanted:
                refills = PhaseStats("items: refill (balance)", "closed")

                async def stake(number: int) -> tuple[int, bytes]:
                    while True:
                        if not self.pool:
                            # pool empty: win an item with a balance play (reported apart)
                            started = time.perf_counter()
                            status, raw = await play_and_keep(number)
                            if status == 200:
                                refills.latencies.append(time.perf_counter() - started)
                            else:
                                refills.record_error(client.error_key(status, raw))
                            continue
                        player, inv_id, item_id = self.pool.popleft()
                        target = await self.items_target(client, player, inv_id, item_id)
                        if target is not None:
                            break
                    payload = {
                        "playerExternalId": player,
                        "clientActionId": self.action_id(),
                        "stakeItemIds": [inv_id],
                        "chanceBps": ITEMS_CHANCE,
                        "targetItemId": target,
                    }
                    status, raw = await client.call(
                        "POST", "/api/s2s/upgrader/play-with-items", payload
                    )
                    if status == 200:
                        keep_won(player, raw)
                    return status, raw

                note = f" ({len(self.pool)} items in the stake pool)"
                refills.started = time.time()
                await closed_phase("items", "items plays", stake, note)
                refills.ended = time.time()
                if refills.ok or refills.errors:
                    phases.append(refills)

            if "prizes" in wanted:

                async def prizes(number: int) -> tuple[int, bytes]:
                    return await client.call(
                        "GET",
                        "/api/s2s/upgrader/prizes",
                        query=[
                            ("playerExternalId", self.player(number)),
                            ("wagerMinor", WAGER),
                            ("chanceBps", CHANCE),
                        ],
                    )

                await closed_phase("prizes", "prizes reads", prizes)

            peak = next((p.rate() for p in phases if p.name == "balance plays"), None)
            for name, rate in open_loop_rates(args, peak) if "rate" in wanted else []:
                print(f"open loop: {name} for {args.rate_duration:g} s ...", flush=True)
                stats = PhaseStats(name, "open", target_rate=rate)
                stats.multiple = rate / peak if peak and args.rate <= 0 else None
                await measured(
                    stats,
                    open_loop(
                        stats, client, rate, args.rate_duration, balance_calls, args.max_in_flight
                    ),
                    "rate",
                    args.rate_duration,
                )
                await asyncio.sleep(2.0)  # what the phase left in the queues drains

            # let the projections and the webhooks drain (bounded), then collect
            deadline = time.monotonic() + args.drain
            while time.monotonic() < deadline and not sampler.caught_up():
                await asyncio.sleep(0.2)
            await asyncio.sleep(min(2.0, args.drain))
            since = self.results["run_started"]
            # the reconciler's grace (15 s) and a pass, for attempts abandoned under load
            await asyncio.to_thread(
                wait_for_answers, args.database_url, self.schema, since, args.drain + 20
            )
            webhooks = await self.fetch_webhooks(client)  # and the wallet's net debits
            self.results["money"] = await asyncio.to_thread(
                money_invariant,
                args.database_url,
                self.schema,
                self.results.get("wallet_net_debits"),
                since,
            )
            self.results["seq_scans"] = scans_during(
                scans_before, await asyncio.to_thread(table_scans, args.database_url, self.schema)
            )
        finally:
            stopping.set()
            await sampler_task
            await client.close()
            meter.close()
            if meter.error:
                self.results["cpu_meter_error"] = meter.error

        self.results["phases"] = []
        for stats in phases:
            row = stats.summary()
            row["projection_lag"] = sampler.lags((stats.started, stats.ended))
            row["webhook_lag"] = webhook_lags(webhooks, (stats.started, stats.ended))
            row["pg_backends"] = sampler.backends((stats.started, stats.ended))
            self.results["phases"].append(row)
        self.results["sampler_error"] = sampler.error
        self.results["webhooks_received"] = len(webhooks)

    async def fetch_webhooks(self, client: Client) -> list[list[float | None]]:
        try:
            async with client.session.get(f"{self.wallet_base}/bench/webhooks") as response:
                data = await response.json()
        except Exception:
            return []
        self.results["wallet_debits"] = data.get("debits")
        self.results["wallet_net_debits"] = data.get("net_debits")
        return data.get("webhooks", [])

    # -- profiling -----------------------------------------------------------------------

    def start_profiler(self, duration: float) -> subprocess.Popen[bytes] | None:
        args = self.args
        if not args.profile:
            return None
        binary = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        if not Path(binary).exists():
            print("bench: py-spy not found (pip install py-spy); no profile", file=sys.stderr)
            return None
        target = self.background_pid if args.profile_target == "worker" else self.api_pids[0]
        if target is None:
            print("bench: no process to profile", file=sys.stderr)
            return None
        fmt = "raw" if args.profile_format == "raw" else "flamegraph"
        command = [
            binary,
            "record",
            "--pid",
            str(target),
            "--duration",
            str(int(duration)),
            "--rate",
            str(args.profile_rate),
            "--format",
            fmt,
            "-o",
            args.profile,
            "--nonblocking",
        ]
        if args.profile_mode == "gil":
            command.append("--gil")
        elif args.profile_mode == "idle":
            command.append("--idle")
        self.results["profile"] = {
            "mode": args.profile_mode,
            "phase": args.profile_phase,
            "rate": args.profile_rate,
            "seconds": int(duration),
            "pid": target,
            "target": args.profile_target,
            "file": args.profile,
        }
        return subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
        )

    def finish_profiler(self, process: subprocess.Popen[bytes] | None) -> None:
        if process is None:
            return
        try:
            _, err = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            _, err = process.communicate()
        if process.returncode != 0:
            self.results["profile"]["error"] = (err or b"").decode(errors="replace")[-400:]
            return
        if self.args.profile_format == "raw":
            self.results["profile"].update(summarise_collapsed(Path(self.args.profile)))


def webhook_lags(rows: list[list[float | None]], window: tuple[float, float]) -> dict[str, Any]:
    lags = [
        arrived - settled
        for arrived, settled in rows
        if settled is not None and arrived is not None and window[0] <= settled <= window[1]
    ]
    ms = [1000 * max(0.0, lag) for lag in lags]
    return {
        "count": len(ms),
        "p50_ms": _round(percentile(ms, 50)),
        "p99_ms": _round(percentile(ms, 99)),
        "max_ms": _round(max(ms) if ms else None),
    }


# --------------------------------------------------------------------------- report


TARGETS = [
    ("balance plays/s (closed loop)", ">= 1000"),
    ("balance p99 at 500 plays/s", "< 50 ms"),
    ("items plays/s (closed loop)", ">= 1200"),
    ("prizes reads/s", ">= 3000"),
    ("projection lag p99 at 500 plays/s", "< 250 ms"),
    ("audit replay events/s", ">= 20000 (ops/bench/replay.py)"),
]


def target_rows(results: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    by = {p["phase"]: p for p in results.get("phases", [])}
    rate = next((p for p in results.get("phases", []) if p["kind"] == "open"), None)

    def check(value: float | None, ok: bool) -> str:
        return "-" if value is None else ("met" if ok else "MISSED")

    rows = []
    balance = by.get("balance plays", {}).get("per_second")
    rows.append((*TARGETS[0], _fmt(balance), check(balance, (balance or 0) >= 1000)))
    if rate is not None and rate["target_rate"] != 500:
        rate = None  # the fixed-rate targets are stated at 500 plays/s
    p99 = rate["p99_ms"] if rate else None
    ok_rate = rate is not None and rate["per_second"] >= 0.95 * (rate["target_rate"] or 0)
    rows.append(
        (
            *TARGETS[1],
            f"{_fmt(p99)} ms"
            + ("" if rate is None or ok_rate else f" (only {rate['per_second']}/s)"),
            check(p99, p99 is not None and p99 < 50 and ok_rate),
        )
    )
    items = by.get("items plays", {}).get("per_second")
    rows.append((*TARGETS[2], _fmt(items), check(items, (items or 0) >= 1200)))
    prizes = by.get("prizes reads", {}).get("per_second")
    rows.append((*TARGETS[3], _fmt(prizes), check(prizes, (prizes or 0) >= 3000)))
    lag = rate["projection_lag"]["p99_s"] if rate else None
    rows.append(
        (
            *TARGETS[4],
            "-" if lag is None else f"{lag * 1000:.0f} ms",
            check(lag, lag is not None and lag < 0.25 and ok_rate),
        )
    )
    rows.append((*TARGETS[5], "not measured here", "-"))
    return rows


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.1f}"
    return str(value)


def print_report(results: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(120, shutil.get_terminal_size((160, 40)).columns))
    info = results["machine"]
    console.print(
        f"\n[bold]Upgrader load bench[/bold] at {results.get('commit')} - {results['mode']}, "
        f"concurrency "
        f"{results['concurrency']}, {info['cpus']} CPUs, load average before "
        f"{info['load_before']} / after {info['load_after']}"
    )
    table = Table(title="Requests", show_lines=False)
    for column in ("phase", "ok", "req/s", "p50 ms", "p95 ms", "p99 ms", "max ms", "errors"):
        table.add_column(column, justify="left" if column in ("phase", "errors") else "right")
    for p in results.get("phases", []):
        errors = ", ".join(f"{k} x{v}" for k, v in sorted(p["errors"].items())) or "-"
        table.add_row(
            p["phase"] + (" (open loop)" if p["kind"] == "open" else ""),
            str(p["ok"]),
            _fmt(p["per_second"]),
            _fmt(p["p50_ms"]),
            _fmt(p["p95_ms"]),
            _fmt(p["p99_ms"]),
            _fmt(p["max_ms"]),
            errors,
        )
    console.print(table)

    lag = Table(title="Projection lag (sampled) and webhook delivery lag")
    for column in (
        "phase",
        "samples",
        "proj p50 s",
        "proj p99 s",
        "proj max s",
        "p99 events",
        "max events",
        "slowest",
        "events/s in/out",
        "webhooks got/settled",
        "wh p50 ms",
        "wh p99 ms",
    ):
        lag.add_column(column, justify="left" if column in ("phase", "slowest") else "right")
    for p in results.get("phases", []):
        pl, wh = p["projection_lag"], p["webhook_lag"]
        lag.add_row(
            p["phase"],
            str(pl["samples"]),
            _fmt(pl["p50_s"]),
            _fmt(pl["p99_s"]),
            _fmt(pl["max_s"]),
            _fmt(pl["p99_events"]),
            _fmt(pl["max_events"]),
            pl["slowest"] or "-",
            f"{_fmt(pl.get('appended_per_s'))}/{_fmt(pl.get('projected_per_s'))}",
            f"{wh['count']}/{p['ok']}" if "plays" in p["phase"] or "@" in p["phase"] else "-",
            _fmt(wh["p50_ms"]),
            _fmt(wh["p99_ms"]),
        )
    console.print(lag)

    states: list[str] = []
    for p in results.get("phases", []):
        for key in p.get("pg_backends", {}):
            if key not in states and key != "idle":
                states.append(key)
    if states:
        pg = Table(title="Platform's PostgreSQL backends: average number in each state (sampled)")
        pg.add_column("phase")
        for key in states[:8]:
            pg.add_column(key, justify="right")
        for p in results.get("phases", []):
            backends = p.get("pg_backends", {})
            pg.add_row(p["phase"], *(_fmt(backends.get(key, 0.0)) for key in states[:8]))
        console.print(pg)

    cpu = Table(title="CPU per request (ms) by process group; cores in use during the phase")
    for column in (
        "phase",
        "api",
        "api pg",
        "worker",
        "worker pg",
        "postgres",
        "operator",
        "client",
        "total",
        "ceiling req/s",
        "our cores",
        "other cores",
        "machine busy %",
    ):
        cpu.add_column(column, justify="left" if column == "phase" else "right")
    cores = info["cpus"] or 1
    for p in results.get("phases", []):
        c = p.get("cpu_ms_per_request")
        if not c:
            continue
        server = None if c.get("postgres") is None else c["total"] - (c.get("client") or 0)
        cpu.add_row(
            p["phase"],
            _fmt(c.get("api")),
            _fmt(c.get("api_pg")),
            _fmt(c.get("worker")),
            _fmt(c.get("worker_pg")),
            _fmt(c.get("postgres")),
            _fmt(c.get("operator")),
            _fmt(c.get("client")),
            _fmt(c["total"]),
            _fmt(round(cores * 1000 / server)) if server else "-",
            _fmt(c.get("ours_cores")),
            _fmt(c.get("others_cores")),
            _fmt(c.get("machine_busy_pct")),
        )
    console.print(cpu)
    console.print(
        "api pg / worker pg: the platform's PostgreSQL backends serving the API processes / "
        "the background worker (by client port, ops/bench/cpu_groups.py); postgres: all of "
        "them (with any no process held at the phase's end)."
    )
    console.print(
        "ceiling req/s = CPUs x 1000 / (total - client) ms: what this machine's cores could "
        "serve if the platform, its PostgreSQL backends and the wallet had them to themselves "
        "(the load generator excluded); a CPU bound, not a latency bound."
    )
    if results.get("sampler_error"):
        console.print(f"[yellow]lag sampler failed: {results['sampler_error']}[/yellow]")

    pg = results.get("pgbench")
    if pg:
        if "tps" in pg:
            balance = next((p for p in results["phases"] if p["phase"] == "balance plays"), None)
            ratio = ""
            if balance:
                ratio = f"; balance plays/s / pgbench tps = {balance['per_second'] / pg['tps']:.3f}"
            items = next((p for p in results["phases"] if p["phase"] == "items plays"), None)
            if items:
                ratio += f", items = {items['per_second'] / pg['tps']:.3f}"
            console.print(
                f"pgbench (TPC-B-like, -s {pg['scale']} -c 8 -j 2 -T {pg['seconds']}): "
                f"{pg['tps']:,.0f} tps, {pg.get('latency_ms')} ms average{ratio}"
            )
        else:
            console.print(f"[yellow]pgbench: {pg.get('error')}[/yellow]")

    targets = Table(title="Targets (issue)")
    for column in ("target", "wanted", "measured", "verdict"):
        targets.add_column(column)
    for row in target_rows(results):
        targets.add_row(*row)
    console.print(targets)

    profile = results.get("profile")
    if profile:
        if profile.get("error"):
            console.print(f"[yellow]py-spy failed: {profile['error']}[/yellow]")
        elif profile.get("self"):
            print_shares(
                console,
                f"py-spy: pid {profile['pid']} ({profile['target']}, "
                f"{profile['phase']} phase, {profile['mode']} mode), "
                f"{profile['samples']} samples; self time",
                ("function (file)", "self %"),
                profile["self"][:20],
            )
            print_shares(
                console,
                "py-spy: inclusive time of the platform's own functions (src/)",
                ("function (file)", "incl %"),
                profile.get("inclusive_src", [])[:20],
            )
            print_shares(
                console, "py-spy: self time by package", ("package", "%"), profile["packages"][:15]
            )
        else:
            console.print(f"profile written to {profile['file']}")


def print_shares(console: Any, title: str, columns: tuple[str, str], rows: list[list[Any]]) -> None:
    """A two-column table of (name, share %) rows, e.g. py-spy's top functions."""
    from rich.table import Table

    table = Table(title=title)
    table.add_column(columns[0])
    table.add_column(columns[1], justify="right")
    for name, share in rows:
        table.add_row(name, f"{share}")
    console.print(table)


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m ops.bench.load",
        description="Load benchmark of the platform on PostgreSQL (see docs/performance.md).",
    )
    parser.add_argument(
        "--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE_URL)
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=2,
        help="API processes (serve --workers N, plus a worker child); "
        "1 = single-process serve (API and loops in one process)",
    )
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument(
        "--duration", type=float, default=20.0, help="seconds per closed-loop phase"
    )
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument(
        "--rate",
        type=float,
        default=0.0,
        help="plays/s of one fixed-rate phase instead of the multiples of the peak",
    )
    parser.add_argument(
        "--rate-multiples",
        type=lambda text: [float(v) for v in text.split(",") if v],
        default=list(DEFAULT_MULTIPLES),
        help="open-loop phases at these multiples of the measured closed-loop balance peak "
        "(default 0.5,2,4)",
    )
    parser.add_argument("--rate-duration", type=float, default=20.0)
    parser.add_argument(
        "--first-plays",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="one play per player first, reported apart (the measured phases then play "
        "only players who have played)",
    )
    parser.add_argument(
        "--history",
        type=int,
        default=0,
        help="also run on a store holding this many past rounds (seeded in bulk, "
        "ops/bench/history.py) and print both sittings side by side",
    )
    parser.add_argument(
        "--history-players",
        type=int,
        default=0,
        help="players of the history (0: the bench's players and enough others for 50 rounds each)",
    )
    parser.add_argument(
        "--floor-seconds",
        type=float,
        default=15.0,
        help="run the floor's play stage (ops/bench/floor.py) for this long after the "
        "platform, for the ratio (0: skip)",
    )
    parser.add_argument(
        "--max-in-flight",
        type=int,
        default=512,
        help="open loop: sends beyond this many outstanding are counted, not sent",
    )
    parser.add_argument(
        "--phases",
        type=lambda s: s.split(","),
        default=["balance", "items", "prizes", "rate"],
        help="comma-separated subset of balance,items,prizes,rate",
    )
    parser.add_argument("--players", type=int, default=2000)
    parser.add_argument(
        "--limits",
        type=int,
        default=1_000_000,
        help="the operator's abuse limits (0 switches them, and their writes, off)",
    )
    parser.add_argument("--lag-interval", type=float, default=0.025)
    parser.add_argument(
        "--drain",
        type=float,
        default=15.0,
        help="max seconds to wait for projections/webhooks after the load",
    )
    parser.add_argument("--pgbench-seconds", type=int, default=15, help="0: skip pgbench")
    parser.add_argument("--pgbench-scale", type=int, default=10)
    parser.add_argument(
        "--server-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra environment of the platform processes (repeatable)",
    )
    parser.add_argument(
        "--profile",
        default=None,
        metavar="FILE",
        help="py-spy record one API process during the balance phase",
    )
    parser.add_argument("--profile-format", choices=["raw", "flamegraph"], default="raw")
    parser.add_argument("--profile-target", choices=["api", "worker"], default="api")
    parser.add_argument(
        "--profile-phase",
        choices=["balance", "items", "prizes", "rate"],
        default="balance",
        help="the phase during which py-spy records",
    )
    parser.add_argument("--profile-rate", type=int, default=100)
    parser.add_argument(
        "--profile-mode",
        choices=["gil", "active", "idle"],
        default="gil",
        help="py-spy samples: the thread holding the GIL (CPU view, default), every "
        "thread py-spy thinks active, or every thread including idle ones (wall view)",
    )
    parser.add_argument(
        "--service",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a [service] key of the platform's configuration, VALUE in TOML "
        "(e.g. max_plays_in_flight=8; repeatable)",
    )
    parser.add_argument("--json", default=None, metavar="FILE", help="write the figures as JSON")
    parser.add_argument("--keep-logs", action="store_true", help="keep the temp folder with logs")
    args = parser.parse_args(argv)
    for kv in [*args.server_env, *args.service]:
        if "=" not in kv:
            parser.error(f"--server-env {kv!r}: expected KEY=VALUE")
    unknown = set(args.phases) - {"balance", "items", "prizes", "rate"}
    if unknown:
        parser.error(f"--phases: unknown {sorted(unknown)}")
    if args.profile:
        args.profile = str(Path(args.profile).resolve())
    return args


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["operator"]:
        operator_main(argv[1:])
        return 0
    args = parse_args(argv)
    sittings = [0, args.history] if args.history > 0 else [0]
    runs: list[dict[str, Any]] = []
    for history in sittings:
        if len(sittings) > 1:
            print(f"bench: sitting on a store with {history:,} past rounds", flush=True)
        code = sitting(args, history, runs)
        if code:
            return code
    floor = None
    if args.floor_seconds > 0:
        print(f"floor: the play stage for {args.floor_seconds:g} s ...", flush=True)
        try:
            floor = floor_in_run(args)
        except Exception as exc:
            print(f"floor: failed: {type(exc).__name__}: {exc}", file=sys.stderr)
    for index, results in enumerate(runs):
        results["floor"] = floor
        print_report(results)
        print_issue18(results, runs[0] if index else None)
    if args.json:
        document = runs[0] if len(runs) == 1 else {"sittings": runs}
        Path(args.json).write_text(json.dumps(document, indent=2, default=str))
        print(f"figures written to {args.json}")
    return 0


def sitting(args: argparse.Namespace, history: int, runs: list[dict[str, Any]]) -> int:
    """One platform on a fresh schema (with ``history`` past rounds), every phase, then
    pgbench; its figures appended to ``runs``."""
    bench = Bench(args, history=history)
    results = bench.results
    runs.append(results)
    mode = (
        f"serve --workers {args.workers} (+ worker all)"
        if args.workers > 1
        else "single-process serve"
    )
    results.update(
        {
            "mode": mode,
            "concurrency": args.concurrency,
            "limits": args.limits,
            "server_env": args.server_env,
            "machine": {"cpus": os.cpu_count(), "load_before": _load()},
            "started": datetime.now(UTC).isoformat(timespec="seconds"),
            "commit": _commit(),
        }
    )
    print(f"bench: load average {_load()} on {os.cpu_count()} CPUs; starting ...", flush=True)
    try:
        try:
            bench.setup()
        except Exception as exc:
            print(f"bench: set-up failed: {exc}", file=sys.stderr)
            if bench.workdir is not None:
                args.keep_logs = True
                print(f"bench: logs kept in {bench.workdir}", file=sys.stderr)
            return 1
        print(
            f"bench: platform {bench.base_url} (API pids {bench.api_pids}, background "
            f"{bench.background_pid}), operator {bench.wallet_base}, schema {bench.schema}",
            flush=True,
        )
        new_loop().run_until_complete(bench.run())
    finally:
        bench.teardown()
    results["machine"]["load_after_load"] = _load()
    if args.pgbench_seconds > 0:
        print(
            f"pgbench: -i -s {args.pgbench_scale}, then -c 8 -j 2 -T {args.pgbench_seconds} ...",
            flush=True,
        )
        try:
            results["pgbench"] = run_pgbench(
                args.database_url, args.pgbench_seconds, args.pgbench_scale
            )
        except Exception as exc:
            results["pgbench"] = {"error": f"{type(exc).__name__}: {exc}"}
    results["machine"]["load_after"] = _load()
    return 0


def _commit() -> str | None:
    """The checked-out commit (read only), with "+changes" when the tree is modified."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        return None
    return (head + ("+changes" if dirty else "")) or None


def _load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


if __name__ == "__main__":
    sys.exit(main())

"""The floor: what the least a balance play must do costs on this machine.

``.venv/bin/python -m ops.bench.floor`` runs the load bench's own load generator and
reference operator (wallet) against a bare ASGI app under the platform's server settings
(uvicorn, uvloop, httptools, ``--workers`` processes) that does only what issue 8 names
as a play's minimum, in four stages, each a closed-loop phase of ``--duration`` s at
``--concurrency``:

1. ``http``: a signed S2S request is verified (HMAC-SHA256 over the canonical string)
   and its JSON decoded (msgspec); the answer is a fixed JSON body. No framework. The
   floor of a prize read.
2. ``commit``: and one durable commit on PostgreSQL (one autocommit ``INSERT`` over
   async psycopg connections with server-side prepared statements: no event store, no
   table lock, no aggregate, no thread). The floor of an items play, which consumes
   the stake and settles in one commit and calls no wallet.
3. ``wallet``: ``http`` and one signed ``wallet.debit`` call to the reference wallet
   over one aiohttp session per process (the wallet checks the signature, the
   idempotency key and the balance, as it does for the platform).
4. ``play``: and two durable commits, the intent before the wallet call and the
   settlement after it. The floor of a balance play.

It prints requests/s and the CPU per request of each process group (server, its
PostgreSQL backends, wallet, load generator), measured from /proc as in the load bench.
No game rules, idempotency, rate limits, projections or webhooks: what the platform
adds on top of this is its own cost; what this costs is the machine's and the stack's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hmac
import json
import os
import secrets
import signal
import sys
import tempfile
import time
from hashlib import sha256
from pathlib import Path
from typing import Any

from ops.bench.load import (
    CURRENCY,
    DEFAULT_DATABASE_URL,
    OPERATOR_ID,
    Child,
    Client,
    CpuMeter,
    PhaseStats,
    child_env,
    closed_loop,
    conninfo_of,
    free_port,
    new_loop,
    sign,
    stop_stack,
    wait_http,
)

STAGES = ("http", "commit", "wallet", "play")
SERVERS = ("uvicorn", "granian")
APP_NAME = "upgrader-floor"
TABLE = "floor_log"
INSERT = f"INSERT INTO {TABLE} (round_id, kind, body) VALUES ($1, $2, $3)"  # noqa: S608
PLAYERS = 200
PREFIX = "floor-"

# --------------------------------------------------------------------------- the app


def create() -> Any:
    """The bare ASGI app (uvicorn factory); configured through FLOOR_* variables."""
    import aiohttp
    import msgspec
    import psycopg

    stage = os.environ["FLOOR_STAGE"]
    secret = os.environ["FLOOR_SECRET"].encode()
    outbound = os.environ["FLOOR_OUTBOUND"].encode()
    wallet_url = os.environ["FLOOR_WALLET_URL"]
    conninfo = os.environ["FLOOR_CONNINFO"]
    pool_size = int(os.environ.get("FLOOR_POOL", "8"))
    encode, decode = msgspec.json.encode, msgspec.json.decode
    state: dict[str, Any] = {}

    async def startup() -> None:
        if stage in ("wallet", "play"):
            connector = aiohttp.TCPConnector(limit=100, ttl_dns_cache=300)
            state["session"] = aiohttp.ClientSession(connector=connector)
        if stage in ("commit", "play"):
            pool: asyncio.Queue[Any] = asyncio.Queue()
            for _ in range(pool_size):
                conn = await psycopg.AsyncConnection.connect(
                    conninfo, autocommit=True, prepare_threshold=0, application_name=APP_NAME
                )
                conn.cursor_factory = psycopg.AsyncRawCursor
                pool.put_nowait(conn)
            state["pool"] = pool

    async def shutdown() -> None:
        if "session" in state:
            await state["session"].close()
        pool = state.get("pool")
        while pool is not None and not pool.empty():
            await pool.get_nowait().close()

    async def commit(round_id: str, kind: str, body: bytes) -> None:
        pool = state["pool"]
        conn = await pool.get()
        try:
            await conn.execute(INSERT, (round_id, kind, body))
        finally:
            pool.put_nowait(conn)

    async def debit(play: dict[str, Any], key: str) -> bytes:
        body = encode(
            {
                "type": "wallet.debit",
                "operatorId": OPERATOR_ID,
                "requestedAt": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
                "playerExternalId": play["playerExternalId"],
                "amountMinor": play["wagerMinor"],
                "currency": CURRENCY,
                "idempotencyKey": key,
                "roundId": key,
                "reason": "upgrader.wager",
            }
        )
        ts = str(int(time.time()))
        canonical = f"{ts}\nPOST\n/wallet\n{sha256(body).hexdigest()}".encode()
        headers = {
            "X-Timestamp": ts,
            "X-Signature": hmac.new(outbound, canonical, sha256).hexdigest(),
            "Content-Type": "application/json",
            "Idempotency-Key": key,
        }
        async with state["session"].post(wallet_url, data=body, headers=headers) as response:
            raw = await response.read()
            if response.status != 200 or not decode(raw).get("accepted"):
                raise RuntimeError(f"wallet answered {response.status}: {raw[:200]!r}")
            return raw

    async def respond(send: Any, status: int, body: bytes) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await startup()
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await shutdown()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        headers = dict(scope["headers"])
        ts = headers.get(b"x-timestamp", b"").decode()
        canonical = f"{ts}\n{scope['method']}\n{scope['path']}\n{sha256(body).hexdigest()}"
        expected = hmac.new(secret, canonical.encode(), sha256).hexdigest().encode()
        if not hmac.compare_digest(expected, headers.get(b"x-signature", b"")):
            await respond(send, 401, b'{"error":{"code":"INVALID_SIGNATURE"}}')
            return
        if scope["method"] == "GET":
            await respond(send, 200, b'{"status":"ok"}')
            return
        play = decode(body)
        key = play["clientActionId"]
        if stage in ("commit", "play"):
            await commit(key, "intent" if stage == "play" else "settle", body)
        if stage in ("wallet", "play"):
            answer = await debit(play, key)
            if stage == "play":
                await commit(key, "settle", answer)
        await respond(send, 200, b'{"outcome":"lose","rolledBps":4242}')

    return app


def server_main(argv: list[str]) -> None:
    """``python -m ops.bench.floor server``: uvicorn with the platform's settings."""
    import uvicorn

    from entrypoints.cli_serve import server_settings

    parser = argparse.ArgumentParser(prog="ops.bench.floor server")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--server", choices=SERVERS, default="uvicorn")
    args = parser.parse_args(argv)
    if args.server == "granian":
        from granian import Granian
        from granian.constants import Interfaces, Loops

        Granian(
            "ops.bench.floor:create",
            address="127.0.0.1",
            port=args.port,
            interface=Interfaces.ASGI,
            workers=args.workers,
            loop=Loops.uvloop,
            factory=True,
            log_access=False,
            backlog=2048,
        ).serve()
        return
    uvicorn.run(
        "ops.bench.floor:create",
        factory=True,
        host="127.0.0.1",
        port=args.port,
        workers=args.workers,
        log_level="warning",
        **server_settings(),
    )


# --------------------------------------------------------------------------- the bench


async def drive(
    args: argparse.Namespace, base_url: str, secret: str
) -> tuple[PhaseStats, PhaseStats]:
    client = Client(base_url, secret, args.concurrency)
    tag = secrets.token_hex(4)

    def play(number: int) -> Any:
        return client.call(
            "POST",
            "/api/s2s/upgrader/play",
            {
                "playerExternalId": f"{PREFIX}{number % PLAYERS:05d}",
                "clientActionId": f"{tag}-{number}",
                "wagerMinor": 1000,
                "chanceBps": 5000,
            },
        )

    try:
        warmup = PhaseStats("warm-up", "closed")
        await closed_loop(warmup, client, min(8, args.concurrency), args.warmup, play)
        stats = PhaseStats("measured", "closed")
        meter: CpuMeter = args.meter
        before = meter.snapshot()
        await closed_loop(stats, client, args.concurrency, args.duration, play)
        stats.cpu = CpuMeter.delta(before, meter.snapshot(), stats.ok)
        return warmup, stats
    finally:
        await client.close()


def run_stage(args: argparse.Namespace, stage: str, workdir: Path) -> dict[str, Any]:
    import psycopg

    secret, outbound = secrets.token_hex(16), secrets.token_hex(16)
    schema = f"floor_{secrets.token_hex(4)}"
    wallet_port, api_port = free_port(), free_port()
    wallet_base, base_url = f"http://127.0.0.1:{wallet_port}", f"http://127.0.0.1:{api_port}"
    operator = server = None
    try:
        with psycopg.connect(conninfo_of(args.database_url), autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')
            conn.execute(
                f'CREATE TABLE "{schema}".{TABLE} (id BIGSERIAL PRIMARY KEY, '
                "round_id TEXT NOT NULL, kind TEXT NOT NULL, body BYTEA NOT NULL)"
            )
        operator = Child(
            "operator",
            [
                *(sys.executable, "-m", "ops.bench.load", "operator"),
                *("--port", str(wallet_port), "--players", str(PLAYERS), "--prefix", PREFIX),
            ],
            child_env({"BENCH_OUTBOUND_SECRET": outbound}),
            workdir / f"operator-{stage}.log",
        ).start()
        env = {
            "FLOOR_STAGE": stage,
            "FLOOR_SECRET": secret,
            "FLOOR_OUTBOUND": outbound,
            "FLOOR_WALLET_URL": f"{wallet_base}/wallet",
            "FLOOR_CONNINFO": conninfo_of(args.database_url) + f" options='-csearch_path={schema}'",
            "FLOOR_POOL": str(args.pool),
        }
        server = Child(
            "floor",
            [
                *(sys.executable, "-m", "ops.bench.floor", "server"),
                *("--port", str(api_port), "--workers", str(args.workers)),
                *("--server", args.server),
            ],
            child_env(env),
            workdir / f"floor-{stage}.log",
        ).start()
        wait_http(f"{wallet_base}/healthz", operator, None)
        wait_http(f"{base_url}/api/s2s/health", server, secret)
        refused = bad_signature_status(base_url)
        meter = CpuMeter(conninfo_of(args.database_url), APP_NAME)
        server_pids = {server.pid} | {pid for pid, _ in descendants_of(server.pid)}
        meter.groups = {
            "server": sorted(server_pids),
            "operator": [operator.pid],
            "client": [os.getpid()],
        }
        args.meter = meter
        loop = new_loop()
        try:
            warmup, stats = loop.run_until_complete(drive(args, base_url, secret))
        finally:
            loop.close()
            meter.close()
        now = {server.pid} | {pid for pid, _ in descendants_of(server.pid)}
        if now != server_pids:  # a worker died or was replaced: its CPU is not all counted
            print(f"floor: {stage}: server processes changed during the stage", file=sys.stderr)
        debits = wallet_debits(wallet_base)
        with psycopg.connect(conninfo_of(args.database_url), autocommit=True) as conn:
            count = f'SELECT count(*) FROM "{schema}".{TABLE}'  # noqa: S608 - our names
            rows = conn.execute(count).fetchone()[0]
        return {
            "stage": stage,
            **stats.summary(),
            "warmup_ok": warmup.ok,
            "warmup_errors": dict(warmup.errors),
            "rows": rows,
            "wallet_debits": debits,
            "bad_signature_status": refused,
        }
    finally:
        stop_stack("floor", [server, operator], args.database_url, schema)


def bad_signature_status(base_url: str) -> int:
    """The status a play signed with the wrong secret gets (the app must say 401)."""
    import urllib.error
    import urllib.request

    body = b'{"playerExternalId":"x","clientActionId":"x","wagerMinor":1,"chanceBps":1}'
    headers = sign(b"not-the-secret", "POST", "/api/s2s/upgrader/play", body)
    request = urllib.request.Request(  # noqa: S310 - loopback
        f"{base_url}/api/s2s/upgrader/play", data=body, headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310
            return answer.status
    except urllib.error.HTTPError as refused:
        return refused.code


def wallet_debits(wallet_base: str) -> int:
    """How many ``wallet.debit`` calls the reference wallet received (its own count)."""
    import urllib.request

    with urllib.request.urlopen(f"{wallet_base}/bench/webhooks", timeout=10) as answer:  # noqa: S310
        return json.loads(answer.read())["debits"]


def descendants_of(pid: int) -> list[tuple[int, str]]:
    from ops.bench.load import descendants

    return descendants(pid)


def print_table(results: list[dict[str, Any]], args: argparse.Namespace) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title=f"The floor: {args.workers} server processes, {args.concurrency} concurrent "
        f"requests, {args.duration:g} s per stage (CPU ms per request)"
    )
    for column in (
        "stage",
        "req/s",
        "p50 ms",
        "p99 ms",
        "errors",
        "server",
        "postgres",
        "wallet",
        "client",
        "total",
        "ceiling req/s",
    ):
        table.add_column(column, justify="left" if column in ("stage", "errors") else "right")
    cores = os.cpu_count() or 1
    for row in results:
        cpu = row["cpu_ms_per_request"] or {}
        total, client = cpu.get("total") or 0.0, cpu.get("client") or 0.0
        ceiling = cores * 1000 / (total - client) if total > client else None
        table.add_row(
            row["stage"],
            f"{row['per_second']:,.1f}",
            f"{row['p50_ms']}",
            f"{row['p99_ms']}",
            ", ".join(f"{k} x{v}" for k, v in row["errors"].items()) or "-",
            *(f"{cpu.get(k, 0.0) or 0.0:.2f}" for k in ("server", "postgres", "operator")),
            f"{client:.2f}",
            f"{total:.2f}",
            f"{ceiling:,.0f}" if ceiling else "-",
        )
    Console(width=160).print(table)
    print(
        "ceiling req/s = CPUs x 1000 / (total - client) ms: this stage's requests/s if the "
        "server, its PostgreSQL backends and the wallet had every core (load generator "
        "excluded)."
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="ops.bench.floor", description=__doc__.split("\n")[0])
    parser.add_argument("--database-url", default=DEFAULT_DATABASE_URL)
    parser.add_argument("--workers", type=int, default=2, help="server processes (default 2)")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--duration", type=float, default=15.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--pool", type=int, default=8, help="connections per server process")
    parser.add_argument("--stages", default=",".join(STAGES))
    parser.add_argument(
        "--server",
        choices=SERVERS,
        default="uvicorn",
        help="the HTTP server (granian: pip install granian; default uvicorn, the platform's)",
    )
    parser.add_argument("--json", help="also write the figures to this file")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["server"]:
        server_main(argv[1:])
        return 0
    args = parse_args(argv)
    # SIGTERM (a test's timeout, say) unwinds like Ctrl-C: the finally blocks stop the
    # processes this bench started and drop its schema
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    stages = [s for s in args.stages.split(",") if s]
    unknown = sorted(set(stages) - set(STAGES))
    if unknown:
        print(f"floor: unknown stage(s) {unknown}; choose from {STAGES}", file=sys.stderr)
        return 2
    results = []
    with tempfile.TemporaryDirectory(prefix="upgrader-floor-") as tmp:
        for stage in stages:
            results.append(run_stage(args, stage, Path(tmp)))
    print_table(results, args)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

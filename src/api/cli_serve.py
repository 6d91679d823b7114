"""``upgrader serve`` and ``upgrader worker``: one process model, two scales.

- ``upgrader serve``: the API and every background loop (projections, wallet
  reconciler, webhook dispatcher) in one process, on SQLite or PostgreSQL.
- ``upgrader serve --workers N`` (PostgreSQL): N API processes sharing one store, plus
  one ``upgrader worker all`` child process for the background loops (unless
  ``--no-background``, when you run ``upgrader worker ...`` processes yourself).
- ``upgrader worker projections|reconciler|dispatcher|all``: background loops only.

SIGTERM stops taking requests, lets in-flight requests finish (up to 10 s), then stops
the loops after their current pass (projection batches are transactions; nothing is
half-applied) and closes the store.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import sys

from api.cli import command
from application.config import load_config

log = logging.getLogger("upgrader")
GRACEFUL_SECONDS = 10


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    config = load_config(args.config)
    service = config.service
    if args.workers > 1:
        if not service.database_url.startswith(("postgresql://", "postgres://")):
            print(
                "upgrader: --workers N needs PostgreSQL (database_url postgresql://...); "
                "SQLite serves from one process",
                file=sys.stderr,
            )
            return 2
        return _serve_many(args, service.host, service.port)
    from api.app import create_app
    from application.platform import Platform

    platform = Platform(config)
    platform.record_configuration()
    log.info("serving on http://%s:%d (%r)", service.host, service.port, platform.location)
    uvicorn.run(
        create_app(platform),
        host=service.host,
        port=service.port,
        log_level="info",
        access_log=False,
        timeout_graceful_shutdown=GRACEFUL_SECONDS,
    )
    platform.close()
    return 0


def _serve_many(args: argparse.Namespace, host: str, port: int) -> int:
    import uvicorn

    from application.platform import Platform

    config_path = os.path.abspath(args.config) if args.config else ""
    platform = Platform(load_config(args.config), pool_size=2)
    platform.record_configuration()  # once, before the workers race to do it
    platform.close()
    os.environ["UPGRADER_CONFIG"] = config_path
    os.environ["UPGRADER_LOOPS"] = ""
    background = None
    if not args.no_background:
        command_line = [sys.executable, "-m", "api.cli", "worker", "all"]
        if config_path:
            command_line += ["--config", config_path]
        background = subprocess.Popen(command_line)  # noqa: S603 - our own module
    log.info("serving on http://%s:%d with %d API processes", host, port, args.workers)
    try:
        uvicorn.run(
            "api.asgi:create",
            factory=True,
            host=host,
            port=port,
            workers=args.workers,
            log_level="info",
            access_log=False,
            timeout_graceful_shutdown=GRACEFUL_SECONDS,
        )
    finally:
        if background is not None:
            background.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                background.wait(timeout=GRACEFUL_SECONDS + 5)
            if background.poll() is None:
                background.kill()
    return 0


def _worker(args: argparse.Namespace) -> int:
    from api.runtime import BACKGROUND_LOOPS, Runtime
    from application.platform import Platform

    loops = BACKGROUND_LOOPS if args.loop == "all" else (args.loop,)
    platform = Platform(load_config(args.config))
    platform.record_configuration()
    runtime = Runtime(platform, workers=loops)

    async def run() -> None:
        stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stopping.set)
        await runtime.start()
        log.info("worker running: %s", ", ".join(loops))
        await stopping.wait()
        log.info("worker stopping")
        await runtime.stop()

    asyncio.run(run())
    platform.close()
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    serve = command(commands, "serve", "run the HTTP API with its background workers", _serve)
    serve.add_argument(
        "--workers", type=int, default=1, help="API processes (PostgreSQL only; default 1)"
    )
    serve.add_argument(
        "--no-background",
        action="store_true",
        help="with --workers: do not start the background worker process",
    )
    worker = command(commands, "worker", "run background loops without the HTTP API", _worker)
    worker.add_argument("loop", choices=["all", "projections", "reconciler", "dispatcher"])

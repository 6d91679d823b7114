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
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from application.config.load import load_config
from application.config.shape import Config
from entrypoints.cli_args import command

log = logging.getLogger("upgrader")
GRACEFUL_SECONDS = 10
START_UP_TRIES = 5

T = TypeVar("T")


def _start_up(config: Config, build: Callable[[Any], T], pool_size: int = 8) -> tuple[Any, T]:
    """``Platform(config)``, its configuration recorded, then ``build(platform)``;
    tried again (a few times, briefly) when it collides with another process starting.

    Processes that start together on PostgreSQL race on start-up DDL: eventsourcing runs
    ``CREATE OR REPLACE FUNCTION`` on every start, and concurrent runs fail with "tuple
    concurrently updated"; ``CREATE ... IF NOT EXISTS`` on a fresh schema collides in the
    catalog; two processes may record the same configuration change. Each of these is
    over by the next try.
    """
    import psycopg
    from eventsourcing.persistence import PersistenceError

    from application.platform import Platform
    from application.store.sql import DuplicateRow, StoreUnavailable

    for attempt in range(1, START_UP_TRIES + 1):
        platform = None
        try:
            platform = Platform(config, pool_size=pool_size)
            platform.record_configuration()
            return platform, build(platform)
        except (PersistenceError, DuplicateRow, StoreUnavailable, psycopg.Error) as exc:
            if platform is not None:
                with contextlib.suppress(Exception):
                    platform.close()
            if attempt == START_UP_TRIES:
                raise
            log.warning("start-up collided with another process (%s); again", exc)
            time.sleep(0.2 * attempt + random.uniform(0, 0.3))
    raise AssertionError("unreachable")


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
    from entrypoints.app import create_app

    platform, app = _start_up(config, create_app)
    log.info("serving on http://%s:%d (%r)", service.host, service.port, platform.location)
    # uvicorn re-raises the SIGTERM/SIGINT it shut down on once it is done; with the
    # default disposition that killed the process there (exit status -15, store never
    # closed). Our handler turns that re-raise into a normal return: exit 0.
    previous = {signum: signal.signal(signum, _stopped) for signum in STOP_SIGNALS}
    try:
        uvicorn.run(
            app,
            host=service.host,
            port=service.port,
            log_level="info",
            timeout_graceful_shutdown=GRACEFUL_SECONDS,
            **server_settings(),
        )
    except _Stopped:
        pass  # requests finished, background loops stopped
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        platform.close()
    return 0


def server_settings() -> dict[str, Any]:
    """uvicorn's request path: uvloop and httptools (``uvicorn[standard]``) named rather
    than found by "auto" (which quietly falls back to asyncio and h11), httptools with a
    response's writes joined into one send (``api/http_protocol.py``), no access log
    line per request, no ``lifespan`` guessing; h11/asyncio only if they are missing."""
    import importlib.util

    settings: dict[str, Any] = {"access_log": False, "lifespan": "on", "backlog": 2048}
    if importlib.util.find_spec("uvloop") is not None:
        settings["loop"] = "uvloop"
    if importlib.util.find_spec("httptools") is not None:
        from api.http_protocol import JoinedWritesProtocol

        settings["http"] = JoinedWritesProtocol  # httptools, one send per response
    return settings


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class _Stopped(Exception):
    """A stop signal after uvicorn's graceful shutdown (or before uvicorn took over)."""


def _stopped(signum: int, frame: object) -> None:
    raise _Stopped(signum)


class WorkerSupervisor:
    """Runs the ``upgrader worker all`` child and starts it again if it dies (backoff 1 s
    doubling to 30 s), so the API processes never go on without their loops."""

    def __init__(self, command_line: list[str]) -> None:
        self.command_line = command_line
        self.process: subprocess.Popen | None = None
        self.restarts = 0
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="worker-supervisor", daemon=True)

    def start(self) -> None:
        self.process = subprocess.Popen(self.command_line)  # noqa: S603 - our own module
        self._thread.start()

    def _watch(self) -> None:
        delay = 1.0
        while not self._stopping.wait(0.5):
            if self.process is not None and self.process.poll() is not None:
                log.error(
                    "background worker exited with %s; starting it again in %.0f s",
                    self.process.returncode,
                    delay,
                )
                if self._stopping.wait(delay):
                    return
                self.process = subprocess.Popen(self.command_line)  # noqa: S603
                self.restarts += 1
                delay = min(30.0, delay * 2)

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=5)
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=GRACEFUL_SECONDS + 5)
        if process.poll() is None:
            process.kill()


API_NICE = 5


def _serve_many(args: argparse.Namespace, host: str, port: int) -> int:
    import uvicorn

    from entrypoints.runtime import Runtime

    config_path = os.path.abspath(args.config) if args.config else ""
    # The configuration is recorded once, and every table of the processes' runtimes
    # created, before the processes start (and race to do it).
    platform, _ = _start_up(load_config(args.config), lambda p: Runtime(p, workers=()), pool_size=2)
    platform.close()
    os.environ["UPGRADER_CONFIG"] = config_path
    os.environ["UPGRADER_LOOPS"] = ""
    # The API processes run at a lower CPU priority (nice 5) than the background worker:
    # on a saturated host the projections, webhooks and wallet rollbacks keep up and the
    # API sheds throughput instead (docs/performance.md). UPGRADER_API_NICE=0: no change.
    os.environ.setdefault("UPGRADER_API_NICE", str(API_NICE))
    supervisor = None
    if not args.no_background:
        command_line = [sys.executable, "-m", "entrypoints.cli", "worker", "all"]
        if config_path:
            command_line += ["--config", config_path]
        supervisor = WorkerSupervisor(command_line)
        supervisor.start()
    log.info("serving on http://%s:%d with %d API processes", host, port, args.workers)
    try:
        uvicorn.run(
            "entrypoints.asgi:create",
            factory=True,
            host=host,
            port=port,
            workers=args.workers,
            log_level="info",
            timeout_graceful_shutdown=GRACEFUL_SECONDS,
            **server_settings(),
        )
    finally:
        if supervisor is not None:
            supervisor.stop()
    return 0


def _worker(args: argparse.Namespace) -> int:
    from entrypoints.runtime import BACKGROUND_LOOPS, Runtime

    loops = BACKGROUND_LOOPS if args.loop == "all" else (args.loop,)
    platform, runtime = _start_up(load_config(args.config), lambda p: Runtime(p, workers=loops))

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
    worker.add_argument(
        "loop",
        choices=["all", "projections", "reconciler", "dispatcher"],
        help="the loops to run: all, or one of projections, reconciler, dispatcher",
    )

"""ASGI entry for several API processes (``upgrader serve --workers N``).

uvicorn imports ``entrypoints.asgi:create`` in every worker process; the configuration file
comes from ``UPGRADER_CONFIG`` and the background loops the process runs from
``UPGRADER_LOOPS`` (comma-separated; empty for API-only processes).
"""

from __future__ import annotations

import os

from litestar import Litestar

from application.config.load import load_config
from application.platform import Platform
from entrypoints.app import create_app


def create() -> Litestar:
    nice = int(os.environ.get("UPGRADER_API_NICE", "0") or 0)
    if nice > 0:
        os.nice(nice)  # see cli_serve._serve_many: the background worker goes first
    config = load_config(os.environ.get("UPGRADER_CONFIG") or None)
    loops = [name for name in os.environ.get("UPGRADER_LOOPS", "").split(",") if name]
    pool = int(os.environ.get("UPGRADER_POOL_SIZE", "8"))
    platform = Platform(config, pool_size=pool)
    platform.record_configuration()  # idempotent; also loads the recorded versions
    app = create_app(platform, workers=loops)
    app.on_shutdown.append(platform.close)
    return app

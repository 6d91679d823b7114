"""The Litestar application: routes, guards, error mapping and the OpenAPI document."""

from __future__ import annotations

import os
from typing import Any

import anyio
from litestar import Litestar
from litestar._openapi.plugin import OpenAPIPlugin
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import Components

from api.admission import admission_for
from api.cors import player_cors
from api.errors import EXCEPTION_HANDLERS
from api.explorers import root, with_explorers
from api.openapi_doc import finish_openapi
from api.openapi_guide import SECURITY_SCHEMES
from api.routes.boxes import PlayerBoxesController, S2SBoxesController
from api.routes.cancels import S2SCancelController
from api.routes.game import GameController
from api.routes.items import PlayerItemsController, S2SItemsController
from api.routes.platform import (
    PlayerSessionController,
    PlayerWalletController,
    S2SPlatformController,
)
from api.routes.upgrader import PlayerUpgraderController, S2SUpgraderController
from api.services import Services
from api.strict_input import refuse_nul_paths
from application.platform import Platform
from application.store import calls as store_calls

ROUTES = [
    S2SPlatformController,
    PlayerSessionController,
    PlayerWalletController,
    S2SUpgraderController,
    PlayerUpgraderController,
    S2SItemsController,
    PlayerItemsController,
    S2SCancelController,
    S2SBoxesController,
    PlayerBoxesController,
    GameController,
    root,
]

OPENAPI = OpenAPIConfig(
    title="Upgrader game platform",
    version="0.1.0",
    path="/api/schema",
    components=Components(security_schemes=SECURITY_SCHEMES),  # api/openapi_guide.py
)


def worker_threads(platform: Platform) -> int | None:
    """Threads for store calls (application/store/calls.py): the event store's
    connections (pool + overflow) on PostgreSQL, where more threads would only queue for
    a connection and contend for the GIL; anyio's default (40) on SQLite.
    ``UPGRADER_THREADS`` overrides."""
    if os.environ.get("UPGRADER_THREADS"):
        return int(os.environ["UPGRADER_THREADS"])
    if platform.location.kind != "postgresql":
        return None
    env = platform.location.eventsourcing_env()
    return int(env.get("POSTGRES_POOL_SIZE", 4)) + int(env.get("POSTGRES_MAX_OVERFLOW", 12))


async def start_request_path(platform: Platform) -> None:
    """On the serving event loop: the thread limit, and (PostgreSQL, limits counted in
    the store) the rate limiter's own connections, so that counting a request takes no
    thread hand-off."""
    threads = worker_threads(platform)
    if threads is not None:
        anyio.to_thread.current_default_thread_limiter().total_tokens = threads
        store_calls.set_threads(threads)
    location = platform.location
    if location.kind == "postgresql" and not platform.limiter.in_memory:
        await platform.limiter.start_async(
            location.conninfo(), f"-c search_path={location.schema} -c lock_timeout=5000"
        )


def build_app(
    platform: Platform, runtime: Services, *, extra_routes: list | None = None
) -> Litestar:
    """The Litestar app over ``platform``, served by ``runtime`` (started and stopped with
    the app); ``entrypoints/app.py`` composes the two."""

    async def request_path() -> None:
        await start_request_path(platform)

    app = Litestar(
        on_startup=[runtime.start, request_path],
        on_shutdown=[runtime.stop, platform.limiter.stop_async],
        route_handlers=[*ROUTES, *(extra_routes or [])],
        exception_handlers=EXCEPTION_HANDLERS,
        openapi_config=with_explorers(OPENAPI),  # offline Swagger UI and ReDoc
        middleware=[player_cors, refuse_nul_paths],
        debug=False,
        request_max_body_size=platform.config.service.max_body_bytes,
    )
    app.state.platform = platform
    app.state.runtime = runtime
    app.state.admission = admission_for(platform.config, worker_threads(platform))
    _provide_openapi(app, cacheable=extra_routes is None)
    return app


# The document depends only on the route handlers, so every app with the standard routes
# shares one, built and corrected once per process (0.3-0.4 s of CPU per app otherwise).
_standard_document: dict[str, Any] | None = None


def _provide_openapi(app: Litestar, *, cacheable: bool) -> None:
    global _standard_document
    if not cacheable:
        finish_openapi(app)
        return
    if _standard_document is None:
        _standard_document = finish_openapi(app)
    app.plugins.get(OpenAPIPlugin)._openapi_schema = _standard_document

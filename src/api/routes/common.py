"""What the route modules share: the S2S and the player controllers' path, guard,
security and tag, and how a handler reaches the runtime and the session's player."""

from __future__ import annotations

import litestar
from litestar import Controller, Request
from litestar.connection import ASGIConnection
from litestar.datastructures import State

from api.auth import player_guard, s2s_guard
from api.openapi_guide import S2S_SECURITY
from api.services import Services

PLAYER_SECURITY = [{"bearer": []}]


class _GuardsReadTheHandler:
    """Litestar runs each guard with a ``copy()`` of the route handler, so that a guard
    cannot change it. Ours only read it (its opt, its body type), and the copy was about
    3 % of an API process's CPU per request (docs/performance.md); they get the handler
    itself. Use ``get`` and ``post`` from this module for every guarded route."""

    async def authorize_connection(self, connection: ASGIConnection) -> None:
        for guard in self.resolve_guards():  # type: ignore[attr-defined]
            await guard(connection, self)


class get(_GuardsReadTheHandler, litestar.get):
    pass


class post(_GuardsReadTheHandler, litestar.post):
    pass


class S2SController(Controller):
    """Routes under /api/s2s, signed with an operator's key (HMAC)."""

    path = "/api/s2s"
    guards = [s2s_guard]  # it also decodes the body strictly (one guard: one pass)
    security = S2S_SECURITY
    tags = ["s2s"]


class PlayerController(Controller):
    """Routes under /api/play, for the player of a session (bearer token)."""

    path = "/api/play"
    guards = [player_guard]  # it also decodes the body strictly
    security = PLAYER_SECURITY
    tags = ["player"]


def runtime_of(state: State) -> Services:
    """The services of the process (its ``Runtime``)."""
    return state.runtime


def who(request: Request) -> tuple[str, str]:
    """(operator id, player external id) of a player route's session."""
    session = request.state.session
    return session.operator_id, session.player_external_id

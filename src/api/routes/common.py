"""What the route modules share: the S2S and the player controllers' path, guard,
security and tag, and how a handler reaches the runtime and the session's player."""

from __future__ import annotations

from litestar import Controller, Request
from litestar.datastructures import State

from api.auth import player_guard, s2s_guard
from api.runtime import Runtime

S2S_SECURITY = [{"hmac": []}]
PLAYER_SECURITY = [{"bearer": []}]


class S2SController(Controller):
    """Routes under /api/s2s, signed with an operator's key (HMAC)."""

    path = "/api/s2s"
    guards = [s2s_guard]  # it also decodes the body strictly (one guard: Litestar copies
    # the route handler for every guard it runs)
    security = S2S_SECURITY
    tags = ["s2s"]


class PlayerController(Controller):
    """Routes under /api/play, for the player of a session (bearer token)."""

    path = "/api/play"
    guards = [player_guard]  # it also decodes the body strictly
    security = PLAYER_SECURITY
    tags = ["player"]


def runtime_of(state: State) -> Runtime:
    """The application's ``Runtime``."""
    return state.runtime


def who(request: Request) -> tuple[str, str]:
    """(operator id, player external id) of a player route's session."""
    session = request.state.session
    return session.operator_id, session.player_external_id

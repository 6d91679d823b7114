"""The box game on both APIs (decisions §10): the catalogue, and buying and opening.

The catalogue (the offered versions and one by id) is answered from memory on the event
loop (the configuration loaded at start-up). Its S2S routes need a key with
``catalog_access`` (403 ``CATALOG_ACCESS_DENIED``), whatever the operator's games; the
player routes serve any session of an operator that has ``boxes`` enabled (403
``GAME_DISABLED`` otherwise). See application/games/boxes/answers.py.

Buying and opening: ``POST /api/s2s/purchase`` (the player named in the body) and
``POST /api/play/rounds/open`` (the session's player, whichever game it was launched
for), play routes like the Upgrader's (admitted, counted against the player's plays per
second) on the wager saga (application/games/boxes/play.py).
"""

from __future__ import annotations

from litestar import Request
from litestar.datastructures import State
from litestar.params import FromPath, FromQuery, JSONBody

from api.errors import ERROR_RESPONSES
from api.routes.common import PlayerController, S2SController, get, post, runtime_of, who
from api.routes.upgrader import PLAY_ROUTE
from api.schemas_boxes import OpenBody, S2SPurchaseBody
from api.services import Services
from application.config.directory import Directory
from application.errors import PlatformError
from application.games.boxes.answers import (
    BoxAnswer,
    BoxesAnswer,
    box_version_answer,
    offered_boxes,
)
from application.games.boxes.opening import OpenBoxes
from application.games.boxes.round_answers import BoxOpenAnswer

VERSION_PATH = "/boxes/{box_id:int}/versions/{box_version_id:int}"


def _directory(state: State) -> Directory:
    return state.platform.directory


def _s2s_operator(request: Request, directory: Directory) -> str:
    if not directory.catalog_access.get(request.state.key_id, False):
        raise PlatformError("CATALOG_ACCESS_DENIED", "this key has no catalog access")
    return request.state.operator_id


async def open_boxes(
    runtime: Services, operator_id: str, player: str, body: OpenBody
) -> BoxOpenAnswer:
    """The purchase; its guard has counted it against the player's plays per second."""
    return await runtime.boxes.open(
        OpenBoxes(
            operator_id=operator_id,
            player_external_id=player,
            client_action_id=body.client_action_id,
            box_id=body.box_id,
            box_version_id=body.box_version_id,
            count=body.count,
            currency=body.currency,
            locale=body.locale,
        )
    )


class S2SBoxesController(S2SController):
    @post("/purchase", **PLAY_ROUTE)
    async def purchase(
        self, request: Request, state: State, data: JSONBody[S2SPurchaseBody]
    ) -> BoxOpenAnswer:
        return await open_boxes(
            runtime_of(state), request.state.operator_id, data.player_external_id, data
        )

    @get("/boxes", sync_to_thread=False, responses=ERROR_RESPONSES)
    def boxes(
        self,
        request: Request,
        state: State,
        currency: FromQuery[str | None] = None,
        locale: FromQuery[str | None] = None,
    ) -> BoxesAnswer:
        """Each box's offered version, in ``currency`` (default: the base currency)."""
        directory = _directory(state)
        operator_id = _s2s_operator(request, directory)
        return offered_boxes(directory, operator_id, currency, locale, for_player=False)

    @get(VERSION_PATH, sync_to_thread=False, responses=ERROR_RESPONSES)
    def box_version(
        self,
        request: Request,
        state: State,
        box_id: FromPath[int],
        box_version_id: FromPath[int],
        currency: FromQuery[str | None] = None,
        locale: FromQuery[str | None] = None,
    ) -> BoxAnswer:
        """One box version by id, inactive ones included."""
        directory = _directory(state)
        operator_id = _s2s_operator(request, directory)
        return box_version_answer(
            directory, operator_id, box_id, box_version_id, currency, locale, for_player=False
        )


class PlayerBoxesController(PlayerController):
    @post("/rounds/open", **PLAY_ROUTE)
    async def open(self, request: Request, state: State, data: JSONBody[OpenBody]) -> BoxOpenAnswer:
        operator_id, player = who(request)
        return await open_boxes(runtime_of(state), operator_id, player, data)

    @get("/boxes", sync_to_thread=False, responses=ERROR_RESPONSES)
    def boxes(
        self,
        request: Request,
        state: State,
        currency: FromQuery[str | None] = None,
        locale: FromQuery[str | None] = None,
    ) -> BoxesAnswer:
        """Each box's offered version, in ``currency`` (default: the base currency)."""
        operator_id, _ = who(request)
        return offered_boxes(_directory(state), operator_id, currency, locale, for_player=True)

    @get(VERSION_PATH, sync_to_thread=False, responses=ERROR_RESPONSES)
    def box_version(
        self,
        request: Request,
        state: State,
        box_id: FromPath[int],
        box_version_id: FromPath[int],
        currency: FromQuery[str | None] = None,
        locale: FromQuery[str | None] = None,
    ) -> BoxAnswer:
        """One box version by id, inactive ones included."""
        operator_id, _ = who(request)
        return box_version_answer(
            _directory(state),
            operator_id,
            box_id,
            box_version_id,
            currency,
            locale,
            for_player=True,
        )

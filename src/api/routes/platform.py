"""Common S2S calls (interface 4.1) and the player session lifecycle (decisions §7)."""

from __future__ import annotations

from urllib.parse import quote

from litestar import Controller, Request
from litestar.datastructures import State
from litestar.params import FromQuery, JSONBody

from api.auth import bearer_token, player_guard, strict_body
from api.errors import ERROR_RESPONSES
from api.routes.common import PLAYER_SECURITY, S2SController, get, post
from api.schemas import (
    Box,
    Boxes,
    BoxItem,
    GameInfo,
    Health,
    LaunchAnswer,
    LaunchRequest,
    LogoutAnswer,
    PlayerInfo,
    SessionInitAnswer,
    SessionInitRequest,
    UpgraderConfigWire,
)
from application.clock import iso_utc
from application.errors import PlatformError, game_disabled
from application.platform import Platform
from domain.upgrader_rules import derive_selector_config, localised_name


def _platform(state: State) -> Platform:
    return state.platform


class S2SPlatformController(S2SController):
    @get("/health", responses=ERROR_RESPONSES, sync_to_thread=True)
    def health(self, state: State) -> Health:
        platform = _platform(state)
        platform.ping()
        return Health(status="ok", time=iso_utc(platform.clock.now()))

    @get("/boxes", responses=ERROR_RESPONSES, sync_to_thread=False)
    def boxes(self, request: Request, state: State, locale: FromQuery[str | None] = None) -> Boxes:
        platform = _platform(state)
        if not platform.directory.catalog_access.get(request.state.key_id, False):
            raise PlatformError("CATALOG_ACCESS_DENIED", 403, "this key has no catalog access")
        operator = platform.directory.operators[request.state.operator_id]
        catalog = platform.directory.catalog
        boxes = [
            Box(
                box_id=box.box_id,
                box_version_id=box.box_version_id,
                name=localised_name(tuple(sorted(box.name.items())), locale),
                price_minor=box.price_minor,
                currency=operator.base.code,
                items=[
                    BoxItem(
                        item_id=entry.item_id,
                        name=localised_name(catalog[entry.item_id].names, locale),
                        value_minor=catalog[entry.item_id].value_minor,
                        weight=entry.weight,
                    )
                    for entry in box.items
                ],
            )
            for box in platform.config.catalog.boxes
        ]
        return Boxes(boxes=boxes)

    @post("/launches", responses=ERROR_RESPONSES, status_code=200, sync_to_thread=True)
    def launch(self, request: Request, state: State, data: JSONBody[LaunchRequest]) -> LaunchAnswer:
        platform = _platform(state)
        operator = platform.directory.operators[request.state.operator_id]
        if data.game_key != "upgrader" or not operator.game_enabled(data.game_key):
            raise game_disabled()
        if data.target:
            raise PlatformError(
                "LAUNCH_TARGET_INVALID",
                422,
                "an Upgrader launch takes an empty target (a boxId is not accepted)",
            )
        token, expires_at = platform.sessions.mint_launch_token(
            operator.id, data.player_external_id, data.game_key, data.target
        )
        base_url = platform.config.service.base_url.rstrip("/")
        return LaunchAnswer(
            launch_token=token,
            expires_at=iso_utc(expires_at),
            launch_url=f"{base_url}/game/upgrader?launchToken={quote(token)}",
        )


class PlayerSessionController(Controller):
    path = "/api/play/session"
    tags = ["player"]
    guards = [strict_body]

    @post("/init", responses=ERROR_RESPONSES, status_code=200, sync_to_thread=True)
    def init(self, state: State, data: JSONBody[SessionInitRequest]) -> SessionInitAnswer:
        platform = _platform(state)
        claims = platform.sessions.redeem_launch_token(data.launch_token)
        operator = platform.directory.operators.get(claims.operator_id)
        if operator is None or not operator.game_enabled(claims.game_key):
            raise game_disabled()
        token = platform.sessions.open_session(claims)
        config = derive_selector_config(operator.settings, operator.base, operator.base)
        return SessionInitAnswer(
            session_token=token,
            idle_expiry_seconds=platform.config.service.session_idle_seconds,
            player=PlayerInfo(
                operator_id=operator.id, player_external_id=claims.player_external_id
            ),
            game=GameInfo(key=claims.game_key, config=UpgraderConfigWire.of(config)),
        )

    @post(
        "/logout",
        status_code=200,
        guards=[player_guard],
        security=PLAYER_SECURITY,
        responses=ERROR_RESPONSES,
        sync_to_thread=True,
    )
    def logout(self, request: Request, state: State) -> LogoutAnswer:
        _platform(state).sessions.logout(bearer_token(request) or "")
        return LogoutAnswer(status="logged_out")

"""Common S2S calls (interface 4.1) and the player session lifecycle (decisions §7)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from litestar import Controller, Request
from litestar.datastructures import State
from litestar.params import FromQuery, JSONBody

from api.auth import bearer_token, player_guard, strict_body
from api.errors import ERROR_RESPONSES
from api.routes.common import (
    PLAYER_SECURITY,
    PlayerController,
    S2SController,
    get,
    post,
    runtime_of,
    who,
)
from api.schemas import (
    BalanceAnswer,
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
from application.access.sessions import LaunchClaims
from application.clock import iso_utc
from application.config.directory import Operator
from application.errors import PlatformError, game_disabled
from application.games.boxes.launch import launched_box, session_box
from application.games.boxes.opening import max_boxes_per_round
from application.games.upgrader.quote import upgrader_settings
from application.platform import Platform
from application.store.calls import in_store, in_store_write
from application.wallet.balances import (
    SESSION_INIT_BALANCE_SECONDS,
    balance_unavailable,
    read_player_balance,
)
from domain.upgrader_rules import derive_selector_config

# The games a launch opens, and their page under /game/.
BOXES = "boxes"
GAME_PAGES = {"upgrader": "upgrader", BOXES: "boxes"}


def _platform(state: State) -> Platform:
    return state.platform


class S2SPlatformController(S2SController):
    @get("/health", responses=ERROR_RESPONSES)
    async def health(self, state: State) -> Health:
        platform = _platform(state)
        await in_store(platform.ping)
        return Health(status="ok", time=iso_utc(platform.clock.now()))

    @post("/launches", responses=ERROR_RESPONSES, status_code=200)
    async def launch(
        self, request: Request, state: State, data: JSONBody[LaunchRequest]
    ) -> LaunchAnswer:
        platform = _platform(state)
        operator = platform.directory.operators[request.state.operator_id]
        if data.game_key not in GAME_PAGES or not operator.game_enabled(data.game_key):
            raise game_disabled(data.game_key)
        if data.game_key == BOXES:
            launched_box(platform.directory, data.target)  # the target names an offered box
        elif data.target:
            raise PlatformError(
                "LAUNCH_TARGET_INVALID",
                "an Upgrader launch takes an empty target (a boxId is not accepted)",
            )
        # a token whose write lands late is one nobody holds: a plain store call
        token, expires_at = await in_store(
            platform.sessions.mint_launch_token,
            operator.id,
            data.player_external_id,
            data.game_key,
            data.target,
        )
        base_url = platform.config.service.base_url.rstrip("/")
        return LaunchAnswer(
            launch_token=token,
            expires_at=iso_utc(expires_at),
            launch_url=f"{base_url}/game/{GAME_PAGES[data.game_key]}?launchToken={quote(token)}",
        )


class PlayerSessionController(Controller):
    path = "/api/play/session"
    tags = ["player"]
    guards = [strict_body]

    @post("/init", responses=ERROR_RESPONSES, status_code=200)
    async def init(self, state: State, data: JSONBody[SessionInitRequest]) -> SessionInitAnswer:
        platform = _platform(state)
        # redeeming the launch token is an outcome in itself (a used token cannot be
        # redeemed again): past the deadline once begun, the answer is OUTCOME_UNKNOWN
        claims, token = await in_store_write(_open_session, platform, data.launch_token)
        operator = platform.directory.operators[claims.operator_id]
        wallet = runtime_of(state).wallet
        balance = await read_player_balance(
            platform,
            wallet,
            operator.id,
            claims.player_external_id,
            timeout=min(SESSION_INIT_BALANCE_SECONDS, wallet.timeout_seconds),
        )
        return SessionInitAnswer(
            session_token=token,
            idle_expiry_seconds=platform.config.service.session_idle_seconds,
            player=PlayerInfo(
                operator_id=operator.id, player_external_id=claims.player_external_id
            ),
            game=_game_info(platform, operator, claims),
            balance=_balance_wire(balance),
        )

    @post(
        "/logout",
        status_code=200,
        guards=[player_guard],
        security=PLAYER_SECURITY,
        responses=ERROR_RESPONSES,
    )
    async def logout(self, request: Request, state: State) -> LogoutAnswer:
        # logging out again does the same: a plain store call
        await in_store(_platform(state).sessions.logout, bearer_token(request) or "")
        return LogoutAnswer(status="logged_out")


def _open_session(platform: Platform, launch_token: str) -> tuple[LaunchClaims, str]:
    """Redeem the launch token and open the player's session (one store call); a box
    launch's box must still be offered (404 BOX_NOT_FOUND)."""
    claims = platform.sessions.redeem_launch_token(launch_token)
    operator = platform.directory.operators.get(claims.operator_id)
    if operator is None or not operator.game_enabled(claims.game_key):
        raise game_disabled(claims.game_key)
    if claims.game_key == BOXES:
        launched_box(platform.directory, claims.target)
    return claims, platform.sessions.open_session(claims)


def _game_info(platform: Platform, operator: Operator, claims: LaunchClaims) -> GameInfo:
    """What the session's game shows first: the Upgrader's configuration, or the launched
    box (its offered version in the base currency) and the most boxes a round opens."""
    if claims.game_key == BOXES:
        return GameInfo(
            key=BOXES,
            box=session_box(platform.directory, operator, claims.target),
            max_boxes_per_round=max_boxes_per_round(operator),
        )
    config = derive_selector_config(upgrader_settings(operator), operator.base, operator.base)
    return GameInfo(key=claims.game_key, config=UpgraderConfigWire.of(config))


def _balance_wire(read: dict[str, Any] | None) -> BalanceAnswer | None:
    if read is None:
        return None
    return BalanceAnswer(balance_minor=read["balanceMinor"], currency=read["currency"])


class PlayerWalletController(PlayerController):
    @get("/balance", responses=ERROR_RESPONSES)
    async def balance(
        self, request: Request, state: State, currency: FromQuery[str | None] = None
    ) -> BalanceAnswer:
        """The session player's casino balance, read from the operator's wallet now
        (``wallet.balance``): in the operator's base currency, or in ``currency`` when it
        is one of the operator's configured currencies. 503 ``WALLET_UNAVAILABLE`` when
        the wallet does not answer in time or answers out of contract."""
        operator_id, player = who(request)
        runtime = runtime_of(state)
        read = await read_player_balance(
            runtime.platform, runtime.wallet, operator_id, player, currency
        )
        answer = _balance_wire(read)
        if answer is None:
            raise balance_unavailable()
        return answer

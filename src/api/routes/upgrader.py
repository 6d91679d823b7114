"""The Upgrader (balance mode), round history and fairness, on both APIs.

S2S routes name the player in the body or query; player routes take it from the session.
Each pair shares one function below, so the two APIs cannot drift apart.
"""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Request
from litestar.datastructures import State
from litestar.params import FromPath, FromQuery, JSONBody, QueryParameter

from api.admission import admit_plays
from api.auth import PLAYS_OPT
from api.errors import ERROR_RESPONSES
from api.routes.common import PlayerController, S2SController, get, post, runtime_of, who
from api.schemas import UpgraderConfigWire
from api.schemas_upgrader import (
    HistoryRoundWire,
    PlayBody,
    PrizesAnswer,
    RotateBody,
    RoundsPage,
    S2SPlayBody,
    S2SRotateBody,
    TargetBand,
)
from api.services import Services
from application.errors import not_found, validation_error
from application.games.upgrader.answers import prize_wire
from application.games.upgrader.play_balance import PlayBalance
from application.games.upgrader.quote import Quote, operator_for_mode, quote, upgrader_settings
from application.games.upgrader.views import PlayAnswer
from application.rounds.views import FairnessAnswer, RotateAnswer
from application.store.calls import in_store, in_store_write
from domain.signing import HEADER_SIGNATURE
from projections.rounds import get_round, list_rounds

# The guard counts the play against the player's plays per second (with the key's or
# the session's hit, in one statement).
COUNTS_PLAYS = {PLAYS_OPT: True}
# Every play route: admitted first (api/admission.py: 503 OVERLOADED beyond the
# process's bound), then counted by its guard.
PLAY_ROUTE: dict[str, Any] = {
    "status_code": 200,
    "responses": ERROR_RESPONSES,
    "opt": COUNTS_PLAYS,
    "middleware": [admit_plays],
}

PlayerQuery = Annotated[
    str,
    QueryParameter(
        name="playerExternalId", min_length=1, max_length=128, pattern=r"^[\x21-\x7e]+$"
    ),  # as the body field: printable ASCII
]
Limit = Annotated[int, QueryParameter(ge=1, le=100)]
# Checked in rounds_page (VALIDATION_ERROR naming the field); documented here.
Cursor = Annotated[str | None, QueryParameter(schema_extra={"pattern": "^[0-9]{1,18}$"})]


def prizes(
    runtime: Services,
    operator_id: str,
    wager_minor: int,
    chance_bps: int,
    currency: str | None,
    locale: str | None,
) -> PrizesAnswer:
    operator = operator_for_mode(runtime.platform.directory, operator_id, "balance")
    quoted = quote(operator, currency, wager_minor, chance_bps, for_play=False)
    return prizes_answer(runtime, quoted, locale)


def prizes_answer(runtime: Services, quoted: Quote, locale: str | None) -> PrizesAnswer:
    """The prizes answer of interface 4.2 for a quote (balance or items stake); the
    struct goes to the wire as it is (one msgspec encode)."""
    return PrizesAnswer(
        wager_minor=quoted.wager_minor,
        chance_bps=quoted.chance_bps,
        fee_bps=upgrader_settings(quoted.operator).house_edge_bps,
        currency=quoted.currency.code,
        target_band=TargetBand(
            lower_minor=quoted.band.lower_minor, upper_minor=quoted.band.upper_minor
        ),
        prizes=[prize_wire(p) for p in quoted.prizes(runtime.platform.directory, locale)],
        config=UpgraderConfigWire.of(quoted.config),
    )


async def play(runtime: Services, operator_id: str, player: str, body: PlayBody) -> Any:
    """The play; its guard has counted it against the player's plays per second."""
    return await runtime.balance.play(
        PlayBalance(
            operator_id=operator_id,
            player_external_id=player,
            client_action_id=body.client_action_id,
            wager_minor=body.wager_minor,
            chance_bps=body.chance_bps,
            target_item_id=body.target_item_id,
            currency=body.currency,
            locale=body.locale,
        )
    )


def rounds_page(
    runtime: Services, operator_id: str, player: str, limit: int, cursor: str | None
) -> dict[str, Any]:
    # ASCII digits only (str.isdigit() also takes e.g. "²", which int() refuses), and at
    # most 18 of them so the value fits a BIGINT position on every store.
    if cursor is not None and not (cursor.isascii() and cursor.isdigit() and len(cursor) <= 18):
        raise validation_error("cursor: not a cursor this API issued")
    runtime.read_model("round_history")
    rounds, next_cursor = list_rounds(
        runtime.platform.db, operator_id, player, limit, int(cursor) if cursor else None
    )
    return {"rounds": rounds, "nextCursor": None if next_cursor is None else str(next_cursor)}


def one_round(runtime: Services, operator_id: str, public_id: str) -> dict[str, Any]:
    runtime.read_model("round_history")
    found = get_round(runtime.platform.db, operator_id, public_id)
    if found is None:
        raise not_found("round")
    return found


def rotate_action(client_action_id: str | None) -> str | None:
    """A rotate's action key: the client's (shared by both APIs, as a play's is)."""
    return None if client_action_id is None else f"client:{client_action_id}"


class S2SUpgraderController(S2SController):
    # In memory only (the price index): answered on the event loop, no thread hand-off.
    @get("/upgrader/prizes", sync_to_thread=False, responses=ERROR_RESPONSES)
    def prizes(
        self,
        request: Request,
        state: State,
        player: PlayerQuery,
        wager_minor: Annotated[int, QueryParameter(name="wagerMinor")],
        chance_bps: Annotated[int, QueryParameter(name="chanceBps")],
        currency: FromQuery[str | None] = None,
        locale: FromQuery[str | None] = None,
    ) -> PrizesAnswer:
        return prizes(
            runtime_of(state), request.state.operator_id, wager_minor, chance_bps, currency, locale
        )

    @post("/upgrader/play", **PLAY_ROUTE)
    async def play(self, request: Request, state: State, data: JSONBody[S2SPlayBody]) -> PlayAnswer:
        return await play(
            runtime_of(state), request.state.operator_id, data.player_external_id, data
        )

    @get("/rounds", responses=ERROR_RESPONSES)
    async def rounds(
        self,
        request: Request,
        state: State,
        player: PlayerQuery,
        limit: Limit = 20,
        cursor: Cursor = None,
    ) -> RoundsPage:
        operator_id = request.state.operator_id
        return await in_store(rounds_page, runtime_of(state), operator_id, player, limit, cursor)

    @get("/rounds/{public_id:str}", responses=ERROR_RESPONSES)
    async def round(
        self, request: Request, state: State, public_id: FromPath[str]
    ) -> HistoryRoundWire:
        return await in_store(one_round, runtime_of(state), request.state.operator_id, public_id)

    @get("/fairness", responses=ERROR_RESPONSES)
    async def fairness(self, request: Request, state: State, player: PlayerQuery) -> FairnessAnswer:
        return await in_store(runtime_of(state).fairness.read, request.state.operator_id, player)

    @post("/fairness/rotate", status_code=200, responses=ERROR_RESPONSES)
    async def rotate(
        self, request: Request, state: State, data: JSONBody[S2SRotateBody]
    ) -> RotateAnswer:
        # without a clientActionId, the signed request is the action: a replay of the
        # same bytes within the skew window carries the same signature
        action = rotate_action(data.client_action_id)
        if action is None:
            action = f"signature:{request.headers[HEADER_SIGNATURE]}"
        return await in_store_write(
            runtime_of(state).fairness.rotate,
            request.state.operator_id,
            data.player_external_id,
            data.client_seed,
            action,
        )


class PlayerUpgraderController(PlayerController):
    # In memory only (the price index): answered on the event loop, no thread hand-off.
    @get("/upgrader/prizes", sync_to_thread=False, responses=ERROR_RESPONSES)
    def prizes(
        self,
        request: Request,
        state: State,
        wager_minor: Annotated[int, QueryParameter(name="wagerMinor")],
        chance_bps: Annotated[int, QueryParameter(name="chanceBps")],
        currency: FromQuery[str | None] = None,
        locale: FromQuery[str | None] = None,
    ) -> PrizesAnswer:
        operator_id, _ = who(request)
        return prizes(runtime_of(state), operator_id, wager_minor, chance_bps, currency, locale)

    @post("/upgrader/play", **PLAY_ROUTE)
    async def play(self, request: Request, state: State, data: JSONBody[PlayBody]) -> PlayAnswer:
        operator_id, player = who(request)
        return await play(runtime_of(state), operator_id, player, data)

    @get("/rounds", responses=ERROR_RESPONSES)
    async def rounds(
        self,
        request: Request,
        state: State,
        limit: Limit = 20,
        cursor: Cursor = None,
    ) -> RoundsPage:
        operator_id, player = who(request)
        return await in_store(rounds_page, runtime_of(state), operator_id, player, limit, cursor)

    @get("/fairness", responses=ERROR_RESPONSES)
    async def fairness(self, request: Request, state: State) -> FairnessAnswer:
        return await in_store(runtime_of(state).fairness.read, *who(request))

    @post("/fairness/rotate", status_code=200, responses=ERROR_RESPONSES)
    async def rotate(
        self, request: Request, state: State, data: JSONBody[RotateBody]
    ) -> RotateAnswer:
        return await in_store_write(
            runtime_of(state).fairness.rotate,
            *who(request),
            data.client_seed,
            rotate_action(data.client_action_id),
        )

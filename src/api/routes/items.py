"""Items mode, inventory, cash-back and shipping, on both APIs (interface 4.4-4.6, decisions §8).

``stakeItemIds`` is a repeated query parameter (``?stakeItemIds=1&stakeItemIds=2``); the
bracketed spelling ``stakeItemIds[]`` is accepted too.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Request
from litestar.datastructures import State
from litestar.params import FromQuery, JSONBody, QueryParameter

from api.errors import ERROR_RESPONSES
from api.routes.common import PlayerController, S2SController, get, post, runtime_of, who
from api.routes.upgrader import PLAY_ROUTE, PlayerQuery, prizes_answer
from api.schemas_items import (
    CashoutBody,
    PlayItemsBody,
    PrizesByItemsAnswer,
    S2SCashoutBody,
    S2SPlayItemsBody,
    S2SShippingBody,
)
from api.services import Services
from application.errors import validation_error
from application.games.upgrader.play_items import PlayItems, stake_quote
from application.games.upgrader.views import PlayItemsAnswer
from application.inventory.cashout import CashoutCommand
from application.inventory.items import listed_item_wire
from application.inventory.shipping import ShippingCommand, ship
from application.inventory.views import CashoutAnswer, InventoryAnswer, ShippingAnswer
from application.store.calls import in_store
from projections.inventory import ITEM_STATES, list_items

StakeIds = Annotated[list[int] | None, QueryParameter(name="stakeItemIds")]
StakeIdsBracketed = Annotated[list[int] | None, QueryParameter(name="stakeItemIds[]")]
# Checked in inventory() (VALIDATION_ERROR naming the field); documented here.
ItemState = Annotated[
    str | None, QueryParameter(name="state", schema_extra={"enum": list(ITEM_STATES)})
]


def prizes_by_items(
    runtime: Services,
    operator_id: str,
    player: str,
    ids: list[int],
    chance_bps: int,
    currency: str | None,
    locale: str | None,
) -> PrizesByItemsAnswer:
    quoted, stake, _, _ = stake_quote(
        runtime.platform, operator_id, player, ids, chance_bps, currency, for_play=False
    )
    # The stake's items carry no "state" here (StakeItemWire leaves it out when None).
    prizes = prizes_answer(runtime, quoted, locale)
    return PrizesByItemsAnswer(**msgspec.structs.asdict(prizes), stake=stake)


def inventory(
    runtime: Services, operator_id: str, player: str, state_filter: str | None
) -> InventoryAnswer:
    if state_filter is not None and state_filter not in ITEM_STATES:
        raise validation_error(f"state: one of {', '.join(ITEM_STATES)}")
    runtime.read_model("inventory")
    operator = runtime.platform.directory.operators[operator_id]
    catalog = runtime.platform.directory.catalog
    rows = list_items(runtime.platform.db, operator_id, player, state_filter)
    return InventoryAnswer(
        items=[
            listed_item_wire(operator, catalog, grant, state, held) for grant, state, held in rows
        ]
    )


def _ids(plain: list[int] | None, bracketed: list[int] | None) -> list[int]:
    return [*(plain or []), *(bracketed or [])]


async def play_items(runtime: Services, operator_id: str, player: str, body: PlayItemsBody) -> Any:
    """The play; its guard has counted it against the player's plays per second."""
    return await runtime.items.play(
        PlayItems(
            operator_id=operator_id,
            player_external_id=player,
            client_action_id=body.client_action_id,
            stake_item_ids=list(body.stake_item_ids),
            chance_bps=body.chance_bps,
            target_item_id=body.target_item_id,
            currency=body.currency,
            locale=body.locale,
        )
    )


async def cash_out(runtime: Services, operator_id: str, player: str, body: CashoutBody) -> Any:
    return await runtime.cashouts.cash_out(
        CashoutCommand(
            operator_id=operator_id,
            player_external_id=player,
            client_action_id=body.client_action_id,
            inventory_item_ids=list(body.inventory_item_ids),
            currency=body.currency,
        )
    )


class S2SItemsController(S2SController):
    @get("/upgrader/prizes-by-items", responses=ERROR_RESPONSES)
    async def prizes_by_items(
        self,
        request: Request,
        state: State,
        player: PlayerQuery,
        chance_bps: Annotated[int, QueryParameter(name="chanceBps")],
        stake_ids: StakeIds = None,
        stake_ids_b: StakeIdsBracketed = None,
        currency: FromQuery[str | None] = None,
        locale: FromQuery[str | None] = None,
    ) -> PrizesByItemsAnswer:
        return await in_store(
            prizes_by_items,
            runtime_of(state),
            request.state.operator_id,
            player,
            _ids(stake_ids, stake_ids_b),
            chance_bps,
            currency,
            locale,
        )

    @post("/upgrader/play-with-items", **PLAY_ROUTE)
    async def play_with_items(
        self, request: Request, state: State, data: JSONBody[S2SPlayItemsBody]
    ) -> PlayItemsAnswer:
        return await play_items(
            runtime_of(state), request.state.operator_id, data.player_external_id, data
        )

    @get("/inventory", responses=ERROR_RESPONSES)
    async def inventory(
        self,
        request: Request,
        state: State,
        player: PlayerQuery,
        item_state: ItemState = None,
    ) -> InventoryAnswer:
        operator_id = request.state.operator_id
        return await in_store(inventory, runtime_of(state), operator_id, player, item_state)

    @post("/cashout", status_code=200, responses=ERROR_RESPONSES)
    async def cashout(
        self, request: Request, state: State, data: JSONBody[S2SCashoutBody]
    ) -> CashoutAnswer:
        return await cash_out(
            runtime_of(state), request.state.operator_id, data.player_external_id, data
        )

    @post("/shipping", status_code=200, responses=ERROR_RESPONSES)
    async def shipping(
        self, request: Request, state: State, data: JSONBody[S2SShippingBody]
    ) -> ShippingAnswer:
        command = ShippingCommand(
            operator_id=request.state.operator_id,
            player_external_id=data.player_external_id,
            client_action_id=data.client_action_id,
            inventory_item_ids=list(data.inventory_item_ids),
            address=dict(data.address),
        )
        return await ship(runtime_of(state).platform, command)


class PlayerItemsController(PlayerController):
    @get("/upgrader/prizes-by-items", responses=ERROR_RESPONSES)
    async def prizes_by_items(
        self,
        request: Request,
        state: State,
        chance_bps: Annotated[int, QueryParameter(name="chanceBps")],
        stake_ids: StakeIds = None,
        stake_ids_b: StakeIdsBracketed = None,
        currency: FromQuery[str | None] = None,
        locale: FromQuery[str | None] = None,
    ) -> PrizesByItemsAnswer:
        return await in_store(
            prizes_by_items,
            runtime_of(state),
            *who(request),
            _ids(stake_ids, stake_ids_b),
            chance_bps,
            currency,
            locale,
        )

    @post("/upgrader/play-with-items", **PLAY_ROUTE)
    async def play_with_items(
        self, request: Request, state: State, data: JSONBody[PlayItemsBody]
    ) -> PlayItemsAnswer:
        return await play_items(runtime_of(state), *who(request), data)

    @get("/inventory", responses=ERROR_RESPONSES)
    async def inventory(
        self,
        request: Request,
        state: State,
        item_state: ItemState = None,
    ) -> InventoryAnswer:
        return await in_store(inventory, runtime_of(state), *who(request), item_state)

    @post("/cashout", status_code=200, responses=ERROR_RESPONSES)
    async def cashout(
        self, request: Request, state: State, data: JSONBody[CashoutBody]
    ) -> CashoutAnswer:
        return await cash_out(runtime_of(state), *who(request), data)

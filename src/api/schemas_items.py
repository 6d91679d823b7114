"""Wire structs of the inventory routes and of items-mode plays: staking, cash-back and
shipping (interface 2, 4.3): the request bodies and the prizes-by-items answer. The
answers the application renders are its views, defined once: the items, cash-back and
shipping answers in ``application/inventory/views.py``, the items-mode play answer in
``application/games/upgrader/views.py``.

Each struct's docstring and each field's description are the OpenAPI document's words
(see ``api.schemas``)."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta

from api.schemas import PlayerId, Wire, words
from api.schemas_upgrader import ClientActionId, CurrencyCode, Locale, Minor, PrizesAnswer
from application.games.upgrader.views import StakeWire

ItemIds = Annotated[
    list[Annotated[int, Meta(ge=1, le=2**53)]],
    Meta(min_length=1, max_length=20, description="inventoryItemIds of the player's items"),
]
Address = Annotated[
    dict[Annotated[str, Meta(min_length=1, max_length=40)], Annotated[str, Meta(max_length=200)]],
    Meta(
        min_length=1,
        max_length=20,
        description="where to ship: your own fields (e.g. name, street, city, postcode, "
        "country), kept as given",
    ),
]


class PlayItemsBody(Wire):
    """An items-mode play: POST /api/play/upgrader/play-with-items (the session's player)."""

    client_action_id: ClientActionId
    stake_item_ids: Annotated[
        ItemIds, words("the staked items (unresolved, the player's); consumed win or lose")
    ]
    chance_bps: Annotated[Minor, words("the win chance, one of config.chancePresetsBps")]
    target_item_id: Annotated[
        Minor, words("the prize aimed at: an itemId of the prizes-by-items answer")
    ]
    currency: CurrencyCode | None = None
    locale: Locale | None = None


class S2SPlayItemsBody(PlayItemsBody, kw_only=True):
    """An items-mode play for a player: POST /api/s2s/upgrader/play-with-items."""

    player_external_id: PlayerId


class CashoutBody(Wire):
    """A cash-back of unresolved items: POST /api/play/cashout (the session's player)."""

    client_action_id: ClientActionId
    inventory_item_ids: Annotated[ItemIds, words("the items to cash back (unresolved)")]
    currency: Annotated[
        CurrencyCode | None, words("the currency to credit in; default: the base currency")
    ] = None


class S2SCashoutBody(CashoutBody, kw_only=True):
    """A cash-back for a player: POST /api/s2s/cashout."""

    player_external_id: PlayerId


class S2SShippingBody(Wire):
    """A shipping request for a player's items: POST /api/s2s/shipping."""

    player_external_id: PlayerId
    client_action_id: ClientActionId
    inventory_item_ids: Annotated[ItemIds, words("the items to ship (unresolved, fulfillable)")]
    address: Address


class PrizesByItemsAnswer(PrizesAnswer, kw_only=True):
    """The prizes answer for a stake of items (interface 4.4): wagerMinor is their value."""

    stake: StakeWire

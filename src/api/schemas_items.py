"""Wire structs of the inventory routes and of items-mode plays: staking, cash-back and
shipping (interface 2, 4.3).

Each struct's docstring and each field's description are the OpenAPI document's words
(see ``api.schemas``)."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta

from api.schemas import CurrencyOut, PlayerId, Wire, words
from api.schemas_upgrader import (
    ClientActionId,
    CurrencyCode,
    FactsWire,
    Locale,
    Minor,
    PrizesAnswer,
    RoundWire,
    StakeWire,
    UncreditedWire,
    WonItemWire,
)

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


class InventoryItemWire(Wire):
    """An item in the player's inventory."""

    inventory_item_id: Annotated[int, words("the item's id in the player's inventory")]
    item_id: Annotated[int, words("catalogue item id")]
    name: Annotated[str, words("the item's name")]
    value_minor: Annotated[int, words("the item's value now, in `currency`")]
    currency: CurrencyOut
    cashback_minor: Annotated[
        int | None, words("what a cash-back would pay now; null when not cashable")
    ]
    cashback_uncredited: UncreditedWire
    state: Annotated[
        str,
        words(
            '"unresolved", "consumed" (staked), "cashed_back", "shipping_requested", '
            '"shipped" or "cancelled" (its round was cancelled)'
        ),
    ]
    round_public_id: Annotated[str, words("the round that granted it")]
    granted_at: Annotated[str, words("when it was granted (UTC ISO 8601)")]
    held: Annotated[
        bool | None, words("true while a cash-back credit for it is being confirmed")
    ] = None


class InventoryAnswer(Wire):
    """The player's items, newest first."""

    items: Annotated[list[InventoryItemWire], words("the items, newest first")]


class CashoutAnswer(Wire):
    """A credited cash-back."""

    credited_minor: Annotated[int, words("the amount credited, in minor units of `currency`")]
    currency: CurrencyOut
    balance_after_minor: Annotated[
        int | None, words("the casino balance after the credit, as the wallet reported it")
    ]
    items: Annotated[list[InventoryItemWire], words('the items, now "cashed_back"')]


class ShippingAnswer(Wire):
    """A recorded shipping request."""

    shipment_id: Annotated[str, words("the shipment's id, s_ and 32 hex digits")]
    items: Annotated[list[InventoryItemWire], words('the items, now "shipping_requested"')]


class PrizesByItemsAnswer(PrizesAnswer, kw_only=True):
    """The prizes answer for a stake of items (interface 4.4): wagerMinor is their value."""

    stake: StakeWire


class PlayItemsAnswer(Wire):
    """A played items-mode round (interface 4.5): the stake is consumed win or lose."""

    round: RoundWire
    won_item: Annotated[WonItemWire | None, words("the granted item; null on a loss")]
    stake: StakeWire
    balance_after_minor: Annotated[None, words("always null: no wallet call")]
    facts: FactsWire

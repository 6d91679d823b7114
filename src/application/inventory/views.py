"""Owned items on the wire (interface 2.4, decisions §8): the inventory listing, a
cash-back's and a shipping request's answers, and the uncredited parts of a value.

The one definition of these shapes: ``items.py``, ``cashout.py`` and ``shipping.py``
build them, the routes return them, and the OpenAPI document is generated from them
(each docstring and field description is its words). A cash-back or shipping request
records its items as these views' dicts (``msgspec.to_builtins``), so its copies answer
from the record, byte for byte.
"""

from __future__ import annotations

from typing import Annotated

from application.wire import CurrencyOut, Wire, words


class UncreditedWire(Wire):
    """The part of a value not paid in Credits, by cause (interface 2.4); all 0 unless a
    collectible's price moved or the operator pays a share below 100 %."""

    price_fall_minor: Annotated[int, words("lost to a price fall, in minor units")]
    price_rise_minor: Annotated[int, words("lost to a price rise, in minor units")]
    credits_share_minor: Annotated[
        int, words("not paid because the operator's Credits share is below 100 %")
    ]


class InventoryItemWire(Wire, omit_defaults=True):
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
            '"unresolved", "consumed" (staked), "cashed_back", "shipping_requested" or "shipped"'
        ),
    ]
    round_public_id: Annotated[str, words("the round that granted it")]
    granted_at: Annotated[str, words("when it was granted (UTC ISO 8601)")]
    # absent (None) only in a cash-back's record of its items; every answer says it
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

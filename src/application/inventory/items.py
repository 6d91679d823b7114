"""Owned items and what they count for (decisions §5, interface 4.6).

A staked or cashed item counts for the Credits part of what cashing it back would pay
now: ``credited = min(G, M) * cashback * creditsShare`` with G its grant value and M the
catalogue's current price (collectibles; M = G otherwise), under the catalogue's current
cash-back settings. An item without cash-back counts its whole grant value.

Rounding: each item's counted value and Uncredited parts are rounded half-even into the
display currency, and a stake's total is the sum of its items' rounded values, so
``stake.totalMinor`` always equals the sum of ``stake.items[].valueMinor``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import msgspec
from eventsourcing.application import AggregateNotFoundError

from application.clock import iso_utc
from application.config.directory import Operator
from application.errors import PlatformError, validation_error
from application.inventory.views import InventoryItemWire, UncreditedWire
from application.platform import Platform
from domain.catalog import CatalogItem
from domain.ids import inventory_item_id
from domain.inventory import InventoryItem
from domain.money import Currency, parse_rate, reprice
from domain.stake_counting import count_item, displayed

MAX_ITEMS_PER_ACTION = 20


@dataclass(frozen=True)
class CountedItem:
    item: InventoryItem
    value_minor: int  # counted (Credits) value in the display currency
    uncredited: dict[str, int]
    cashable: bool


def check_item_ids(ids: list[int], field: str) -> list[int]:
    if not ids:
        raise validation_error(f"{field}: at least one inventory item id is needed")
    if len(ids) > MAX_ITEMS_PER_ACTION:
        raise validation_error(f"{field}: at most {MAX_ITEMS_PER_ACTION} items per action")
    if len(set(ids)) != len(ids):
        raise validation_error(f"{field}: an inventory item id is listed twice")
    return ids


def load_open_items(
    platform: Platform,
    operator_id: str,
    player: str,
    ids: list[int],
    refusal: Callable[[int], PlatformError],
) -> list[InventoryItem]:
    """The player's items, each unresolved and not held; ``refusal(id)`` otherwise."""
    items = []
    for number in ids:
        try:
            item: InventoryItem = platform.events.repository.get(inventory_item_id(number))
        except AggregateNotFoundError:
            raise refusal(number) from None
        if item.owner != (operator_id, player) or not item.is_open:
            raise refusal(number)
        items.append(item)
    return items


def current_terms(
    grant: dict[str, Any], catalog: dict[int, CatalogItem]
) -> tuple[int, bool, int | None]:
    """(current price M, collectible, cashback bps) under today's catalogue settings."""
    listed = catalog.get(grant["item_id"])
    if listed is None:
        return grant["grant_value_base_minor"], grant["collectible"], grant["cashback_bps"]
    return listed.value_minor, listed.collectible, listed.cashback_bps


def count_grant(
    operator: Operator, catalog: dict[int, CatalogItem], grant: dict[str, Any], currency: Currency
) -> tuple[int, dict[str, int], bool]:
    """(counted value, Uncredited parts, cashable) of one granted item, now, in ``currency``."""
    price, collectible, cashback_bps = current_terms(grant, catalog)
    counted = count_item(
        grant["grant_value_base_minor"],
        price,
        collectible,
        cashback_bps,
        operator.config.credits_share_bps,
    )
    value, parts = displayed(counted, operator.base, currency)
    uncredited = {
        "price_fall_minor": parts.price_fall_minor,
        "price_rise_minor": parts.price_rise_minor,
        "credits_share_minor": parts.credits_share_minor,
    }
    return value, uncredited, cashback_bps is not None


def count(
    operator: Operator, catalog: dict[int, CatalogItem], item: InventoryItem, currency: Currency
) -> CountedItem:
    value, uncredited, cashable = count_grant(operator, catalog, item.grant, currency)
    return CountedItem(item=item, value_minor=value, uncredited=uncredited, cashable=cashable)


def sum_uncredited(counted: list[CountedItem]) -> dict[str, int]:
    keys = ("price_fall_minor", "price_rise_minor", "credits_share_minor")
    return {k: sum(c.uncredited[k] for c in counted) for k in keys}


def item_currency(grant: dict[str, Any]) -> Currency:
    return Currency(
        code=grant["currency"],
        rate=parse_rate(grant["fx_rate"]),
        exponent=grant["currency_exponent"],
    )


def base_of(grant: dict[str, Any]) -> Currency:
    return Currency(code=grant["base_currency"], rate=Fraction(1), exponent=grant["base_exponent"])


ZERO_UNCREDITED = UncreditedWire(price_fall_minor=0, price_rise_minor=0, credits_share_minor=0)


def uncredited_wire(parts: dict[str, int] | None) -> UncreditedWire:
    """A cash-back's uncredited parts on the wire (zeros when there are none)."""
    if not parts:
        return ZERO_UNCREDITED
    return UncreditedWire(
        price_fall_minor=parts["price_fall_minor"],
        price_rise_minor=parts["price_rise_minor"],
        credits_share_minor=parts["credits_share_minor"],
    )


def item_wire(
    grant: dict[str, Any],
    state: str,
    value_minor: int,
    currency: str,
    cashback_minor: int | None,
    uncredited: dict[str, int] | None,
    held: bool | None = None,
) -> InventoryItemWire:
    """An inventory item on the wire (decisions §8)."""
    return InventoryItemWire(
        inventory_item_id=grant["inventory_item_id"],
        item_id=grant["item_id"],
        name=grant["name"],
        value_minor=value_minor,
        currency=currency,
        cashback_minor=cashback_minor,
        cashback_uncredited=uncredited_wire(uncredited),
        state=state,
        round_public_id=grant["round_public_id"],
        granted_at=iso_utc(grant["granted_at"]),
        held=held,
    )


def listed_item_wire(
    operator: Operator,
    catalog: dict[int, CatalogItem],
    grant: dict[str, Any],
    state: str,
    held: bool = False,
) -> InventoryItemWire:
    """An inventory listing row: value at grant; cash-back estimate now, at today's rate.

    The estimate is null unless the item can be cashed back now (unresolved, not held,
    cashable)."""
    currency = operator.currencies.get(grant["currency"]) or item_currency(grant)
    value, uncredited, cashable = count_grant(operator, catalog, grant, currency)
    open_now = state == "unresolved" and not held and cashable
    return item_wire(
        grant,
        state,
        grant["value_minor"],
        grant["currency"],
        value if open_now else None,
        uncredited if open_now else None,
        held,
    )


def recorded_items(items: list[dict[str, Any]]) -> list[InventoryItemWire]:
    """Items as a cash-back or shipping request recorded them (their views' dicts)."""
    return msgspec.convert(items, list[InventoryItemWire])


def repriced_grant_value(operator: Operator, grant: dict[str, Any], currency: Currency) -> int:
    return reprice(grant["grant_value_base_minor"], operator.base, currency)

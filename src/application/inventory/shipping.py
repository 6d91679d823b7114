"""Shipping requests for fulfillable items (decisions §8): one commit, each item once.

No in-process lock: copies of one action race to the store, whose uniqueness of the
shipment's id (and of each item's next version) lets exactly one commit; every other
copy answers from that commit's record."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError
from eventsourcing.persistence import IntegrityError
from msgspec import to_builtins

from application.errors import PlatformError, not_found, outcome_unknown
from application.inventory.cashout import item_not_available
from application.inventory.items import (
    check_item_ids,
    listed_item_wire,
    load_open_items,
    recorded_items,
)
from application.inventory.views import ShippingAnswer
from application.platform import Platform
from application.rounds.actions import action_in_progress, fingerprint, idempotency_conflict
from application.store.calls import StoreOutcomeUnknown, in_store_write
from domain.cashout import Shipment


@dataclass(frozen=True)
class ShippingCommand:
    operator_id: str
    player_external_id: str
    client_action_id: str
    inventory_item_ids: list[int]
    address: dict[str, str]


def shipping_answer(request: dict[str, Any]) -> ShippingAnswer:
    return ShippingAnswer(shipment_id=request["public_id"], items=recorded_items(request["items"]))


def request_shipping(platform: Platform, command: ShippingCommand) -> ShippingAnswer:
    """The shipping request's answer, the original one for every copy of the action.

    A copy that meets the action's record answers from it (409 when its body differs);
    one whose checks fail, or whose commit conflicts, because a copy was recorded
    meanwhile (in this process or another) looks again and answers from that record."""
    body_print = fingerprint(
        "shipping", sorted(command.inventory_item_ids), sorted(command.address.items())
    )
    request_key = {
        "operator_id": command.operator_id,
        "player_external_id": command.player_external_id,
        "client_action_id": command.client_action_id,
    }
    sid = Shipment.create_id(request_key)
    for _ in range(3):
        known = _recorded_answer(platform, sid, body_print)
        if known is not None:
            return known
        try:
            return _new_request(platform, command, request_key, sid, body_print)
        except IntegrityError:
            continue  # a copy or another action took the items first: look again
        except PlatformError:
            known = _recorded_answer(platform, sid, body_print)
            if known is None:
                raise
            return known
    raise action_in_progress()


async def ship(platform: Platform, command: ShippingCommand) -> ShippingAnswer:
    """``request_shipping`` as a request's store call: one commit, which may still land
    when the call is abandoned at its deadline after it began (``OUTCOME_UNKNOWN``)."""
    try:
        return await in_store_write(request_shipping, platform, command)
    except StoreOutcomeUnknown:
        raise outcome_unknown("the shipping request may have been recorded") from None


def _recorded_answer(platform: Platform, sid: UUID, body_print: str) -> ShippingAnswer | None:
    try:
        existing: Shipment = platform.events.repository.get(sid)
    except AggregateNotFoundError:
        return None
    if existing.request["fingerprint"] != body_print:
        raise idempotency_conflict()
    return shipping_answer(existing.request)


def _new_request(
    platform: Platform,
    command: ShippingCommand,
    request_key: dict[str, str],
    sid: UUID,
    body_print: str,
) -> ShippingAnswer:
    check_item_ids(command.inventory_item_ids, "inventoryItemIds")
    operator = platform.directory.operators[command.operator_id]
    items = load_open_items(
        platform,
        command.operator_id,
        command.player_external_id,
        command.inventory_item_ids,
        item_not_available,
    )
    catalog = platform.directory.catalog
    for item in items:
        listed = catalog.get(item.grant["item_id"])
        if listed is None or not listed.fulfillable:
            raise PlatformError(
                "ITEM_NOT_SHIPPABLE",
                f"inventory item {item.grant['inventory_item_id']} cannot be shipped",
            )
    public_id = f"s_{sid.hex}"
    now = platform.clock.now()
    for item in items:
        item.request_shipping(public_id, now)
    request = {
        **request_key,
        "public_id": public_id,
        "fingerprint": body_print,
        "address": dict(command.address),
        "items": [
            to_builtins(listed_item_wire(operator, catalog, item.grant, "shipping_requested"))
            for item in items
        ],
        "requested_at": now,
    }
    platform.events.save(Shipment(request), *items)
    return shipping_answer(request)


def mark_shipped(platform: Platform, shipment_public_id: str) -> list[int]:
    """The fulfilment side: a requested shipment left the warehouse; its items become
    ``shipped`` (one commit with the shipment's ``ShipmentDispatched``)."""
    from domain.cashout import CashoutStateError
    from domain.ids import inventory_item_id

    if not shipment_public_id.startswith("s_") or len(shipment_public_id) != 34:
        raise not_found("shipment")
    try:
        shipment: Shipment = platform.events.repository.get(UUID(hex=shipment_public_id[2:]))
    except (AggregateNotFoundError, ValueError):
        raise not_found("shipment") from None
    numbers = [item["inventoryItemId"] for item in shipment.request["items"]]
    items = [platform.events.repository.get(inventory_item_id(n)) for n in numbers]
    now = platform.clock.now()
    try:
        shipment.dispatch(now)
    except CashoutStateError:
        raise PlatformError(
            "SHIPMENT_ALREADY_DISPATCHED", "this shipment was already marked shipped"
        ) from None
    for item in items:
        item.mark_shipped(now)
    platform.events.save(shipment, *items)
    return numbers

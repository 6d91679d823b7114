"""Inventory items: granted by a won round, then resolved exactly once.

States: ``unresolved`` -> ``consumed`` | ``cashed_back`` | ``shipping_requested`` ->
``shipped``, or ``unresolved`` -> ``cancelled`` (its round was cancelled, decisions §11: no
longer stakeable, cashable or shippable). While a cash-back credit is being asked of the
wallet the item is ``unresolved`` but *held* (``held_by`` names the cash-back): it cannot
be staked, shipped or cashed back again until the credit is acknowledged
(-> ``cashed_back``) or refused (-> released). Every move checks the state first and is
an event, and the store's optimistic concurrency makes two concurrent moves of one item
fail one of them.
Stored format: each event is stored under its explicit topic (``TOPIC``, ``@event(...,
topic=...)``), the string it had when topics were module paths. The classes and this
module may move; topics, event names and fields never change
(``tests/unit/test_event_topics.py`` pins the topics).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from domain.ids import inventory_item_id


class ItemStateError(Exception):
    """The item is not in a state that allows this move."""


class InventoryItem(Aggregate):
    TOPIC = "domain.inventory:InventoryItem"

    class Created(Aggregate.Created):  # the library's default, unused: a topic all the same
        TOPIC = "domain.inventory:InventoryItem.Created"

    @staticmethod
    def create_id(grant: dict[str, Any]) -> UUID:
        return inventory_item_id(grant["inventory_item_id"])

    @event("ItemGranted", topic="domain.inventory:InventoryItem.ItemGranted")
    def __init__(self, grant: dict[str, Any]) -> None:
        self.grant = grant
        self.state = "unresolved"
        self.held_by: str | None = None
        self.resolution: dict[str, Any] | None = None

    @property
    def owner(self) -> tuple[str, str]:
        return self.grant["operator_id"], self.grant["player_external_id"]

    @property
    def is_open(self) -> bool:
        """Unresolved and not held: the only state that can be staked, cashed or shipped."""
        return self.state == "unresolved" and self.held_by is None

    def _require_open(self) -> None:
        if not self.is_open:
            raise ItemStateError(f"item is {self.state}{' (held)' if self.held_by else ''}")

    def consume(self, round_public_id: str, at: float) -> None:
        self._require_open()
        self._consumed(round_public_id=round_public_id, at=at)

    @event("ItemConsumed", topic="domain.inventory:InventoryItem.ItemConsumed")
    def _consumed(self, round_public_id: str, at: float) -> None:
        self.state = "consumed"
        self.resolution = {"round_public_id": round_public_id, "at": at}

    def hold_for_cashout(self, cashout_public_id: str, at: float) -> None:
        self._require_open()
        self._held(cashout_public_id=cashout_public_id, at=at)

    @event("ItemHeldForCashout", topic="domain.inventory:InventoryItem.ItemHeldForCashout")
    def _held(self, cashout_public_id: str, at: float) -> None:
        self.held_by = cashout_public_id

    def release(self, cashout_public_id: str, at: float) -> None:
        if self.held_by != cashout_public_id:
            raise ItemStateError("item is not held by this cash-back")
        self._released(cashout_public_id=cashout_public_id, at=at)

    @event("ItemReleased", topic="domain.inventory:InventoryItem.ItemReleased")
    def _released(self, cashout_public_id: str, at: float) -> None:
        self.held_by = None

    def cash_back(
        self, cashout_public_id: str, credited_minor: int, currency: str, at: float
    ) -> None:
        if self.state != "unresolved" or self.held_by != cashout_public_id:
            raise ItemStateError("item is not held by this cash-back")
        self._cashed_back(
            cashout_public_id=cashout_public_id,
            credited_minor=credited_minor,
            currency=currency,
            at=at,
        )

    @event("ItemCashedBack", topic="domain.inventory:InventoryItem.ItemCashedBack")
    def _cashed_back(
        self, cashout_public_id: str, credited_minor: int, currency: str, at: float
    ) -> None:
        self.state = "cashed_back"
        self.held_by = None
        self.resolution = {
            "cashout_public_id": cashout_public_id,
            "credited_minor": credited_minor,
            "currency": currency,
            "at": at,
        }

    def request_shipping(self, shipment_public_id: str, at: float) -> None:
        self._require_open()
        self._shipping_requested(shipment_public_id=shipment_public_id, at=at)

    @event("ItemShippingRequested", topic="domain.inventory:InventoryItem.ItemShippingRequested")
    def _shipping_requested(self, shipment_public_id: str, at: float) -> None:
        self.state = "shipping_requested"
        self.resolution = {"shipment_public_id": shipment_public_id, "at": at}

    def mark_shipped(self, at: float) -> None:
        if self.state != "shipping_requested":
            raise ItemStateError(f"item is {self.state}")
        self._shipped(at=at)

    @event("ItemShipped", topic="domain.inventory:InventoryItem.ItemShipped")
    def _shipped(self, at: float) -> None:
        self.state = "shipped"

    def cancel(self, round_public_id: str, at: float) -> None:
        """Taken back with its round's cancel (decisions §11): only an open item of that
        round."""
        self._require_open()
        if self.grant.get("round_public_id") != round_public_id:
            raise ItemStateError("item was not granted by this round")
        self._cancelled(round_public_id=round_public_id, at=at)

    @event("ItemCancelled", topic="domain.inventory:InventoryItem.ItemCancelled")
    def _cancelled(self, round_public_id: str, at: float) -> None:
        self.state = "cancelled"
        self.resolution = {"round_public_id": round_public_id, "at": at}

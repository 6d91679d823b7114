"""Inventory items: granted by a won round, then resolved exactly once.

States: ``unresolved`` -> ``consumed`` | ``cashed_back`` | ``shipping_requested`` ->
``shipped``. Event class names and this module's name are a stored format.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from domain.ids import inventory_item_id


class ItemStateError(Exception):
    """The item is not in a state that allows this move."""


class InventoryItem(Aggregate):
    @staticmethod
    def create_id(grant: dict[str, Any]) -> UUID:
        return inventory_item_id(grant["inventory_item_id"])

    @event("ItemGranted")
    def __init__(self, grant: dict[str, Any]) -> None:
        self.grant = grant
        self.state = "unresolved"
        self.resolution: dict[str, Any] | None = None

    @property
    def owner(self) -> tuple[str, str]:
        return self.grant["operator_id"], self.grant["player_external_id"]

    def consume(self, round_public_id: str, at: float) -> None:
        if self.state != "unresolved":
            raise ItemStateError(f"item is {self.state}")
        self._consumed(round_public_id=round_public_id, at=at)

    @event("ItemConsumed")
    def _consumed(self, round_public_id: str, at: float) -> None:
        self.state = "consumed"
        self.resolution = {"round_public_id": round_public_id, "at": at}

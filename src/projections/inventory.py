"""Inventory read model: one row per granted item and its current state.

Serves ``GET /api/s2s/inventory`` and ``GET /api/play/inventory`` (newest first,
``?state=`` filter). The cash-back estimate is not stored: it depends on today's
catalogue price and rate, so the API computes it when it reads a row.
"""

from __future__ import annotations

import json
from typing import Any

from eventsourcing.utils import get_topic

from application.store.sql import execute_in_order
from domain.inventory import InventoryItem

STATES = {
    get_topic(InventoryItem.ItemConsumed): "consumed",
    get_topic(InventoryItem.ItemCashedBack): "cashed_back",
    get_topic(InventoryItem.ItemShippingRequested): "shipping_requested",
    get_topic(InventoryItem.ItemShipped): "shipped",
    get_topic(InventoryItem.ItemCancelled): "cancelled",  # its round's cancel (decisions §11)
}
HOLDS = {
    get_topic(InventoryItem.ItemHeldForCashout): 1,
    get_topic(InventoryItem.ItemReleased): 0,
}
GRANTED = get_topic(InventoryItem.ItemGranted)
ITEM_STATES = (
    "unresolved",
    "consumed",
    "cashed_back",
    "shipping_requested",
    "shipped",
    "cancelled",
)


class InventoryView:
    name = "inventory"
    topics = frozenset({GRANTED, *STATES, *HOLDS})
    schema = [
        """CREATE TABLE IF NOT EXISTS inventory (
            inventory_item_id BIGINT PRIMARY KEY,
            aggregate_id TEXT NOT NULL UNIQUE,
            operator_id TEXT NOT NULL,
            player_external_id TEXT NOT NULL,
            item_id BIGINT NOT NULL,
            state TEXT NOT NULL,
            held INTEGER NOT NULL DEFAULT 0,
            position BIGINT NOT NULL,
            grant_record TEXT NOT NULL)""",
        """CREATE INDEX IF NOT EXISTS inventory_player
            ON inventory (operator_id, player_external_id, position)""",
    ]

    def process(self, cur: Any, event: Any, position: int) -> None:
        cur.execute(*self._statement(event, position))

    def process_batch(self, cur: Any, items: list[Any], after: int) -> None:
        """Writes only (nothing read back): the same statements in event order, pipelined."""
        execute_in_order(cur, [self._statement(item.event, item.position) for item in items])

    @staticmethod
    def _statement(event: Any, position: int) -> tuple[str, tuple[Any, ...]]:
        topic = get_topic(type(event))
        if topic == GRANTED:
            grant = event.grant
            return (
                "INSERT INTO inventory (inventory_item_id, aggregate_id, operator_id, "
                "player_external_id, item_id, state, position, grant_record) "
                "VALUES (?, ?, ?, ?, ?, 'unresolved', ?, ?) "
                "ON CONFLICT (inventory_item_id) DO NOTHING",
                (
                    grant["inventory_item_id"],
                    event.originator_id.hex,
                    grant["operator_id"],
                    grant["player_external_id"],
                    grant["item_id"],
                    position,
                    json.dumps(grant, separators=(",", ":")),
                ),
            )
        aggregate_id = event.originator_id.hex
        if topic in HOLDS:
            return (
                "UPDATE inventory SET held = ? WHERE aggregate_id = ?",
                (HOLDS[topic], aggregate_id),
            )
        return (
            "UPDATE inventory SET state = ?, held = 0 WHERE aggregate_id = ?",
            (STATES[topic], aggregate_id),
        )


def list_items(
    db: Any, operator_id: str, player: str, state: str | None
) -> list[tuple[dict[str, Any], str, bool]]:
    """(grant, state, held) newest first."""
    sql = (
        "SELECT grant_record, state, held FROM inventory WHERE operator_id = ? "
        "AND player_external_id = ?"
    )
    params: list[Any] = [operator_id, player]
    if state is not None:
        sql += " AND state = ?"
        params.append(state)
    with db.transaction() as cur:
        cur.execute(sql + " ORDER BY position DESC", params)
        return [(json.loads(g), s, bool(h)) for g, s, h in cur.fetchall()]

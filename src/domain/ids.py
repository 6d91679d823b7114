"""Deterministic identities: idempotency becomes a uniqueness constraint of the event store.

A player action's round id is derived from (operator, player, clientActionId), so a
retry or a concurrent duplicate addresses the same aggregate and a second "open" fails
on the store's primary key instead of debiting twice.
"""

from __future__ import annotations

import hashlib
from uuid import UUID, uuid5

from domain.config_history import NAMESPACE

INVENTORY_ID_BITS = 52  # below 2**53: exact in JavaScript numbers


def round_id(operator_id: str, player: str, client_action_id: str) -> UUID:
    return uuid5(
        NAMESPACE,
        f"round:{len(operator_id)}:{operator_id}:{len(player)}:{player}:{client_action_id}",
    )


def round_public_id(round_uuid: UUID) -> str:
    return f"r_{round_uuid.hex}"


def round_uuid_of(public_id: str) -> UUID | None:
    """The round aggregate id named by a public id, or None when it is not one."""
    if not public_id.startswith("r_") or len(public_id) != 34:
        return None
    try:
        return UUID(hex=public_id[2:])
    except ValueError:
        return None


def fairness_id(operator_id: str, player: str) -> UUID:
    return uuid5(NAMESPACE, f"fairness:{len(operator_id)}:{operator_id}:{player}")


def inventory_item_number(round_uuid: UUID, salt: int = 0) -> int:
    """The integer inventoryItemId of the item a round grants (52 bits, never 0)."""
    digest = hashlib.sha256(f"inventory:{round_uuid.hex}:{salt}".encode()).digest()
    return (int.from_bytes(digest[:7], "big") >> 4) or 1


def inventory_item_id(number: int) -> UUID:
    return uuid5(NAMESPACE, f"inventory-item:{number}")

"""A cancel action (decisions §11): one ``clientActionId`` of a player, naming the round it
cancels and the credit attempt it made.

The round keeps the cancel's state (held, its credit attempts, cancelled: see
:class:`~domain.round.Round`); this aggregate is the action's identity, derived from
(operator, player, clientActionId) as a play's round is, so a copy of the action or a
concurrent duplicate addresses it and its second creation fails on the store's
uniqueness instead of making a second attempt. It is saved in the commit that makes its
attempt (and, for a round's first cancel, holds the round and takes its items).

Stored format: the topics are explicit (``TOPIC``, ``@event(..., topic=...)``) and pinned
in ``tests/unit/test_event_topics.py``; the request's keys never change.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from domain.config_history import NAMESPACE


def cancel_action_id(operator_id: str, player: str, client_action_id: str) -> UUID:
    return uuid5(
        NAMESPACE,
        f"round-cancel:{len(operator_id)}:{operator_id}:{len(player)}:{player}:{client_action_id}",
    )


def granted_item_ids(settlement: dict[str, Any]) -> list[int]:
    """The inventoryItemIds a settled round granted: a box round's ``won_items``, the
    Upgrader's ``won_item`` (none on a loss)."""
    if "won_items" in settlement:
        return [won["inventory_item_id"] for won in settlement["won_items"]]
    won = settlement.get("won_item")
    return [] if won is None else [won["inventory_item_id"]]


class RoundCancel(Aggregate):
    """``request``: operator_id, player_external_id, client_action_id, round_public_id,
    fingerprint (the body's print: a copy with another body is a conflict), reason (the
    caller's words or None), attempt (the round's cancel credit attempt it made) and
    requested_at."""

    TOPIC = "domain.round_cancel:RoundCancel"

    class Created(Aggregate.Created):  # the library's default, unused: a topic all the same
        TOPIC = "domain.round_cancel:RoundCancel.Created"

    @staticmethod
    def create_id(request: dict[str, Any]) -> UUID:
        return cancel_action_id(
            request["operator_id"], request["player_external_id"], request["client_action_id"]
        )

    @event("CancelRequested", topic="domain.round_cancel:RoundCancel.CancelRequested")
    def __init__(self, request: dict[str, Any]) -> None:
        self.request = request

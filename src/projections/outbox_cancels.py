"""The ``round_cancelled`` webhook (decisions §11): written by the outbox projection
(``projections.outbox``) when a round's cancel credit is accepted (``Round.RoundCancelled``).

Body: ``{id, type: "round_cancelled", createdAt, operatorId, playerExternalId, data: {round,
creditedMinor}}``. ``data.round`` is the round of that round's ``round_settled`` webhook
with ``status: "cancelled"`` (the game's own view, as the cancel answered it), and
``creditedMinor`` its ``betMinor`` (in the round's currency); ``createdAt`` is when the
credit was recorded. ``id`` is derived from the round and the type, stable across
retries, crashes and rebuilds.

The row sits in ``webhook_outbox`` beside the settle's, delivered by the same dispatcher
in position order per player (after the settle's). Its ``round_id`` column holds
``{round hex}:round_cancelled`` (the column is unique: one row per round and type).
A round whose ``round_settled`` webhook was never enqueued (its operator had no
``webhook_url`` when it settled) gets no ``round_cancelled`` either: the operator
de-duplicates and orders by the settle's webhook, and the log alone decides both.
"""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID, uuid5

from eventsourcing.utils import get_topic

from application.clock import iso_utc
from domain.round import Round

CANCEL_TYPE = "round_cancelled"
CANCELLED = get_topic(Round.RoundCancelled)
SETTLED_PAYLOAD = "SELECT round_id, payload FROM webhook_outbox WHERE round_id IN ({keys})"


def cancel_webhook_id(round_id: UUID) -> str:
    return str(uuid5(round_id, CANCEL_TYPE))


def cancel_row(event: Any, position: int, settled_payload: str) -> tuple[Any, ...]:
    """The ``webhook_outbox`` row (webhook_id, round_id, operator_id, player_external_id,
    position, created_at, payload) of a cancelled round, from its settle's webhook body."""
    settled = json.loads(settled_payload)
    round_view = {**settled["data"]["round"], "status": "cancelled"}
    hook_id = cancel_webhook_id(event.originator_id)
    body = {
        "id": hook_id,
        "type": CANCEL_TYPE,
        "createdAt": iso_utc(event.at),
        "operatorId": settled["operatorId"],
        "playerExternalId": settled["playerExternalId"],
        "data": {"round": round_view, "creditedMinor": round_view["betMinor"]},
    }
    return (
        hook_id,
        f"{event.originator_id.hex}:{CANCEL_TYPE}",
        settled["operatorId"],
        settled["playerExternalId"],
        position,
        event.at,
        json.dumps(body, separators=(",", ":")),
    )

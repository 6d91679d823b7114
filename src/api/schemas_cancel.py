"""Wire structs of a round's cancel (decisions §11): its body, its answer and the
``round_cancelled`` webhook.

Each struct's docstring and each field's description are the OpenAPI document's words
(see ``api.schemas``)."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta

from api.schemas import CurrencyOut, PlayerId, Wire, words
from api.schemas_upgrader import ClientActionId, HistoryRoundWire

CancelReason = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=200,
        description="your words for why (kept with the cancel; not sent to the wallet)",
    ),
]


class S2SCancelBody(Wire):
    """A cancel of a player's settled balance-mode round:
    POST /api/s2s/rounds/{publicId}/cancel."""

    player_external_id: PlayerId
    client_action_id: ClientActionId
    reason: CancelReason | None = None


class CancelAnswer(Wire):
    """A cancelled round: its items are cancelled and its bet was credited back."""

    round: Annotated[HistoryRoundWire, words('the round, now "cancelled"')]
    credited_minor: Annotated[
        int, words("the amount credited back: the round's betMinor, in `currency`")
    ]
    currency: CurrencyOut
    balance_after_minor: Annotated[
        int | None, words("the casino balance after the credit, as the wallet reported it")
    ]


class RoundCancelledData(Wire):
    """The cancelled round and what was credited back."""

    round: Annotated[
        HistoryRoundWire, words('the round as its round_settled webhook sent it, now "cancelled"')
    ]
    credited_minor: Annotated[int, words("the amount credited back: the round's betMinor")]


class RoundCancelledWebhook(Wire):
    """The ``round_cancelled`` webhook's body (sent to the operator's webhook_url once a
    cancel's credit is accepted; rendered in ``projections.outbox_cancels``)."""

    id: Annotated[
        str, words("the webhook's id, derived from the round: the same on every delivery")
    ]
    type: Annotated[str, words('always "round_cancelled"')]
    created_at: Annotated[str, words("when the cancel's credit was recorded (UTC ISO 8601)")]
    operator_id: Annotated[str, words("the operator's id on the platform")]
    player_external_id: Annotated[str, words("the operator's own id of the player")]
    data: RoundCancelledData

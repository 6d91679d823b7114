"""Wire structs of box purchases (decisions §10): the bodies, and the ``round_settled``
webhook of a box round (the answers are ``application/games/boxes/round_answers.py``'s).

Each struct's docstring and each field's description are the OpenAPI document's words
(see ``api.schemas``)."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta

from api.schemas import PlayerId, Wire, words
from api.schemas_upgrader import ClientActionId, CurrencyCode, Locale
from application.config.boxes import MAX_BOXES_PER_ROUND, MAX_ID
from application.games.boxes.round_answers import BoxRoundSettledData

BoxId = Annotated[int, Meta(ge=1, le=MAX_ID, description="the box's id (boxId of the catalogue)")]
BoxVersionId = Annotated[
    int,
    Meta(
        ge=1,
        le=MAX_ID,
        description="the version to open: the catalogue's boxVersionId (the offered one; "
        "another is 409 BOX_VERSION_CHANGED with currentBoxVersionId)",
    ),
]
Count = Annotated[
    int,
    Meta(
        ge=1,
        le=MAX_BOXES_PER_ROUND,
        description="how many boxes to open in this round, 1 to the operator's "
        "maxBoxesPerRound (default 10; a larger count is a VALIDATION_ERROR); default 1",
    ),
]


class OpenBody(Wire):
    """Open boxes: POST /api/play/rounds/open (the session's player)."""

    client_action_id: ClientActionId
    box_id: BoxId
    box_version_id: BoxVersionId
    count: Count = 1
    currency: CurrencyCode | None = None
    locale: Locale | None = None


class S2SPurchaseBody(OpenBody, kw_only=True):
    """Buy and open boxes for a player: POST /api/s2s/purchase."""

    player_external_id: PlayerId


class BoxRoundSettledWebhook(Wire):
    """The ``round_settled`` webhook's body for a box round."""

    id: Annotated[
        str, words("the webhook's id, derived from the round: the same on every delivery")
    ]
    type: Annotated[str, words('always "round_settled"')]
    created_at: Annotated[str, words("when the round settled (UTC ISO 8601)")]
    operator_id: Annotated[str, words("the operator's id on the platform")]
    player_external_id: Annotated[str, words("the operator's own id of the player")]
    data: BoxRoundSettledData

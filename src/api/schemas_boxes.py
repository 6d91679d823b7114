"""Wire structs of box purchases (decisions §10): the request bodies (the answers are the
application's views, ``application/games/boxes/round_answers.py``).

Each struct's docstring and each field's description are the OpenAPI document's words
(see ``api.schemas``)."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta

from api.schemas import PlayerId, Wire
from api.schemas_upgrader import ClientActionId, CurrencyCode, Locale
from application.config.boxes import MAX_BOXES_PER_ROUND, MAX_ID

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

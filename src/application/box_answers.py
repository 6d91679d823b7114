"""The box catalogue answers (decisions §10): the offered versions, or one version by id.

``GET /api/s2s/boxes`` and ``GET /api/play/boxes`` list each box's offered version;
``.../boxes/{boxId}/versions/{boxVersionId}`` answers any configured version, inactive
ones included. Prices and item values are repriced into the requested currency (exact,
then half-even, decisions §2); ``rtpBps``, the weights, ticket ranges and
``probabilityBps`` do not depend on the currency. Checks, in order: on the player API
``GAME_DISABLED`` (403) when the operator has not enabled ``boxes`` (a player is not shown
a game the operator does not offer); on S2S the key's ``catalog_access`` instead (the
route checks it), so an operator can read its catalogue before enabling the game, as it
could before the box game existed; then ``UNSUPPORTED_CURRENCY`` (422) and
``BOX_NOT_FOUND`` (404). Beyond the decisions' fields a box carries ``imageUrl`` (its
picture, or null) and ``offered`` (whether it is the version an open would take now: the
box's active version with the highest id).

Everything here is in memory (the configuration loaded at start-up).
"""

from __future__ import annotations

from msgspec import Struct

from application.box_config import MAX_ID
from application.directory import Directory, Operator
from application.errors import PlatformError, game_disabled
from domain.boxes import BoxVersion
from domain.catalog import localised_name
from domain.money import Currency, reprice

GAME_KEY = "boxes"


class _Answer(Struct, rename="camel", frozen=True, kw_only=True):
    pass


class BoxItemAnswer(_Answer):
    item_id: int
    name: str
    value_minor: int
    image_url: str | None
    weight: int
    ticket_from: int
    ticket_to: int
    probability_bps: int


class BoxAnswer(_Answer):
    box_id: int
    box_version_id: int
    name: str
    image_url: str | None
    price_minor: int
    currency: str
    odds_hash: str
    total_tickets: int
    rtp_bps: int
    available: bool
    offered: bool
    items: list[BoxItemAnswer]


class BoxesAnswer(_Answer):
    boxes: list[BoxAnswer]


def box_not_found(box_id: int, box_version_id: int | None = None) -> PlatformError:
    """404 BOX_NOT_FOUND naming the box (and version) asked for, when they are ids at all."""
    asked = [box_id] if box_version_id is None else [box_id, box_version_id]
    if not all(0 <= n <= MAX_ID for n in asked):
        return PlatformError("BOX_NOT_FOUND", 404, "no such box")
    which = f"box {box_id}" if box_version_id is None else f"box {box_id} version {box_version_id}"
    return PlatformError("BOX_NOT_FOUND", 404, f"{which} not found")


def boxes_operator(directory: Directory, operator_id: str, for_player: bool) -> Operator:
    """The operator; for a player, only when it has the box game enabled (else 403
    GAME_DISABLED)."""
    operator = directory.operators[operator_id]
    if for_player and not operator.game_enabled(GAME_KEY):
        raise game_disabled(GAME_KEY)
    return operator


def box_answer(
    directory: Directory,
    operator: Operator,
    version: BoxVersion,
    currency: Currency,
    locale: str | None,
) -> BoxAnswer:
    catalog = directory.catalog
    offered = directory.boxes.offered(version.box_id)
    items = []
    for row in version.ranges():
        item = catalog[row.item_id]
        items.append(
            BoxItemAnswer(
                item_id=row.item_id,
                name=localised_name(item.names, locale),
                value_minor=reprice(item.value_minor, operator.base, currency),
                image_url=item.image_url,
                weight=row.weight,
                ticket_from=row.ticket_from,
                ticket_to=row.ticket_to,
                probability_bps=row.probability_bps,
            )
        )
    return BoxAnswer(
        box_id=version.box_id,
        box_version_id=version.box_version_id,
        name=localised_name(version.names, locale),
        image_url=version.image_url,
        price_minor=reprice(version.price_minor, operator.base, currency),
        currency=currency.code,
        odds_hash=version.odds_hash,
        total_tickets=version.total_tickets,
        rtp_bps=version.rtp_bps(catalog),
        available=version.available(catalog),
        offered=offered is not None and offered.key == version.key,
        items=items,
    )


def offered_boxes(
    directory: Directory,
    operator_id: str,
    currency: str | None,
    locale: str | None,
    *,
    for_player: bool,
) -> BoxesAnswer:
    """Each box's offered version, by ``boxId`` ascending."""
    operator = boxes_operator(directory, operator_id, for_player)
    shown = operator.currency(currency)
    return BoxesAnswer(
        boxes=[
            box_answer(directory, operator, version, shown, locale)
            for version in directory.boxes.offered_versions()
        ]
    )


def box_version_answer(
    directory: Directory,
    operator_id: str,
    box_id: int,
    box_version_id: int,
    currency: str | None,
    locale: str | None,
    *,
    for_player: bool,
) -> BoxAnswer:
    """One version by its key, inactive ones included; 404 BOX_NOT_FOUND otherwise."""
    operator = boxes_operator(directory, operator_id, for_player)
    shown = operator.currency(currency)
    version = directory.boxes.version(box_id, box_version_id)
    if version is None:
        raise box_not_found(box_id, box_version_id)
    return box_answer(directory, operator, version, shown, locale)

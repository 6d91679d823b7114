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

from typing import Annotated

from msgspec import Meta, Struct

from application.config.boxes import MAX_ID
from application.config.directory import Directory, Operator
from application.errors import PlatformError, game_disabled
from domain.boxes import BoxVersion
from domain.catalog import localised_name
from domain.money import Currency, reprice

GAME_KEY = "boxes"


class _Answer(Struct, rename="camel", frozen=True, kw_only=True):
    pass


def _words(text: str) -> Meta:
    """A field's description in the OpenAPI document."""
    return Meta(description=text)


class BoxItemAnswer(_Answer):
    """One line of a box's odds table: an item and its tickets."""

    item_id: Annotated[int, _words("catalogue item id")]
    name: Annotated[str, _words("the item's name in the requested locale")]
    value_minor: Annotated[int, _words("the item's value in `currency`")]
    image_url: Annotated[str | None, _words("the item's picture, or null")]
    weight: Annotated[int, _words("the item's number of tickets")]
    ticket_from: Annotated[int, _words("its first ticket (inclusive)")]
    ticket_to: Annotated[int, _words("its last ticket (inclusive)")]
    probability_bps: Annotated[int, _words("weight / totalTickets, in basis points")]


class BoxAnswer(_Answer):
    """A box version and its committed odds table (decisions §10)."""

    box_id: Annotated[int, _words("the box's id")]
    box_version_id: Annotated[int, _words("the version's id (a version never changes)")]
    name: Annotated[str, _words("the box's name in the requested locale")]
    image_url: Annotated[str | None, _words("the box's picture, or null")]
    price_minor: Annotated[int, _words("the price of one box, in `currency`")]
    currency: Annotated[str, _words("ISO 4217 code of the amounts")]
    odds_hash: Annotated[
        str, _words("SHA-256 (hex) of the version's odds JSON, the commitment draws use")
    ]
    total_tickets: Annotated[int, _words("the sum of the items' weights")]
    rtp_bps: Annotated[
        int, _words("return to player: the items' cash-back value per ticket over the price")
    ]
    available: Annotated[
        bool, _words("false when an item of it is no longer active or fulfillable")
    ]
    offered: Annotated[bool, _words("whether an open would take this version now")]
    items: Annotated[list[BoxItemAnswer], _words("the odds table, in table order")]


class BoxesAnswer(_Answer):
    """Each box's offered version."""

    boxes: Annotated[list[BoxAnswer], _words("the boxes, by boxId")]


def box_not_found(box_id: int, box_version_id: int | None = None) -> PlatformError:
    """404 BOX_NOT_FOUND naming the box (and version) asked for, when they are ids at all."""
    asked = [box_id] if box_version_id is None else [box_id, box_version_id]
    if not all(0 <= n <= MAX_ID for n in asked):
        return PlatformError("BOX_NOT_FOUND", "no such box")
    which = f"box {box_id}" if box_version_id is None else f"box {box_id} version {box_version_id}"
    return PlatformError("BOX_NOT_FOUND", f"{which} not found")


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

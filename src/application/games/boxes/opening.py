"""A box purchase's checks (decisions §10) and the opening they pin (``BoxOpening``).

Order, after the body's shape and the action's idempotency (``play.py``): the game
enabled (403 ``GAME_DISABLED``), the currency (422 ``UNSUPPORTED_CURRENCY``), the box
version known (404 ``BOX_NOT_FOUND``), the version the offered one (409
``BOX_VERSION_CHANGED`` with ``currentBoxVersionId``: the version to open now, null when
the box has no active version at all), every item of its table still active and
fulfillable (422 ``BOX_UNAVAILABLE``); then the operator's wallet must be configured (503
``WALLET_UNAVAILABLE``, known before any debit). Nothing is recorded before all pass.

The price: one box's price repriced into the round's currency (exact, then half-even,
decisions §2) once, times ``count``. The opening pins the whole table with each item's
terms at opening time (name in the round's locale, value in both currencies, cash-back
terms), so the settle and the audit need nothing but the round's own records.

Everything here is in memory (the configuration loaded at start-up).
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from application.config.directory import Operator
from application.errors import PlatformError, game_disabled
from application.games.boxes.answers import box_not_found
from application.platform import Platform
from application.wallet.refusals import wallet_unavailable
from domain.box_round import GAME_KEY, BoxOpening, BoxPinnedEntry
from domain.boxes import BoxVersion
from domain.catalog import localised_name
from domain.ids import round_public_id
from domain.money import reprice


@dataclass(frozen=True)
class OpenBoxes:
    """A purchase as asked (both APIs): ``count`` boxes of one version."""

    operator_id: str
    player_external_id: str
    client_action_id: str
    box_id: int
    box_version_id: int
    count: int = 1
    currency: str | None = None
    locale: str | None = None


def max_boxes_per_round(operator: Operator) -> int:
    """The operator's ``[operators.boxes] max_boxes_per_round``."""
    return operator.games[GAME_KEY].max_boxes_per_round


def check_version(platform: Platform, operator: Operator, asked: OpenBoxes) -> BoxVersion:
    """The checks from the game on, in order (the module docstring); the version to open."""
    directory = platform.directory
    if not operator.game_enabled(GAME_KEY):
        raise game_disabled(GAME_KEY)
    operator.currency(asked.currency)  # UNSUPPORTED_CURRENCY
    version = directory.boxes.version(asked.box_id, asked.box_version_id)
    if version is None:
        raise box_not_found(asked.box_id, asked.box_version_id)
    offered = directory.boxes.offered(asked.box_id)
    if offered is None or offered.key != version.key:
        current = None if offered is None else offered.box_version_id
        raise PlatformError(
            "BOX_VERSION_CHANGED",
            f"box {asked.box_id} version {asked.box_version_id} is not the version offered "
            + ("now" if offered is None else f"now ({current})"),
            currentBoxVersionId=current,
        )
    if not version.available(directory.catalog):
        raise PlatformError(
            "BOX_UNAVAILABLE",
            f"box {asked.box_id} version {asked.box_version_id} holds an item that is no "
            "longer active or fulfillable",
        )
    if not operator.config.wallet_url:
        raise wallet_unavailable()  # known before any debit: nothing is recorded
    return version


def box_opening(
    platform: Platform,
    operator: Operator,
    version: BoxVersion,
    asked: OpenBoxes,
    *,
    rid: UUID,
    fingerprint: str,
) -> BoxOpening:
    """The round's opening record: the purchase and everything its settle will grant."""
    catalog = platform.directory.catalog
    base = operator.base
    currency = operator.currency(asked.currency)
    rate = next(c.rate for c in operator.config.currencies if c.code == currency.code)
    price = reprice(version.price_minor, base, currency)
    entries = []
    for entry in version.entries:
        item = catalog[entry.item_id]
        entries.append(
            BoxPinnedEntry(
                item_id=item.item_id,
                weight=entry.weight,
                name=localised_name(item.names, asked.locale),
                value_minor=reprice(item.value_minor, base, currency),
                value_base_minor=item.value_minor,
                image_url=item.image_url,
                cashback_bps=item.cashback_bps,
                collectible=item.collectible,
            )
        )
    return BoxOpening(
        operator_id=operator.id,
        player_external_id=asked.player_external_id,
        client_action_id=asked.client_action_id,
        public_id=round_public_id(rid),
        mode="balance",
        fingerprint=fingerprint,
        wager_minor=asked.count * price,
        currency=currency.code,
        game=GAME_KEY,
        currency_exponent=currency.exponent,
        base_currency=base.code,
        base_exponent=base.exponent,
        fx_rate=rate,
        box_id=version.box_id,
        box_version_id=version.box_version_id,
        box_name=localised_name(version.names, asked.locale),
        odds_hash=version.odds_hash,
        total_tickets=version.total_tickets,
        count=asked.count,
        price_minor=price,
        price_base_minor=version.price_minor,
        entries=entries,
        credits_share_bps=operator.config.credits_share_bps,
        config_version=platform.config_versions.get(operator.id),
        opened_at=platform.clock.now(),
    )

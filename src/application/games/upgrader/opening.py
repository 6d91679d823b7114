"""The recorded opening of a round: everything an auditor needs to re-check it later.

The pinned rate, the settings in force (with the operator profile's and catalogue
item's versions), the band, the target and its value in base units.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from application.games.upgrader.quote import Quote, upgrader_settings
from application.platform import Platform
from domain.catalog import CatalogItem, Prize
from domain.ids import round_public_id
from domain.upgrader_round import PinnedBand, Target, UpgraderOpening


def round_opening(
    platform: Platform,
    quoted: Quote,
    item: CatalogItem,
    prize: Prize,
    *,
    rid: UUID,
    player: str,
    client_action_id: str,
    mode: str,
    fingerprint: str,
    **stake: Any,
) -> UpgraderOpening:
    """``stake``: items mode's ``stake``, ``stake_counted_minor`` and ``stake_uncredited``."""
    operator = quoted.operator
    settings = upgrader_settings(operator)
    rate = next(c.rate for c in operator.config.currencies if c.code == quoted.currency.code)
    return UpgraderOpening(
        operator_id=operator.id,
        player_external_id=player,
        client_action_id=client_action_id,
        public_id=round_public_id(rid),
        mode=mode,
        fingerprint=fingerprint,
        wager_minor=quoted.wager_minor,
        currency=quoted.currency.code,
        currency_exponent=quoted.currency.exponent,
        base_currency=operator.base.code,
        base_exponent=operator.base.exponent,
        fx_rate=rate,
        chance_bps=quoted.chance_bps,
        fee_bps=settings.house_edge_bps,
        no_loss=settings.no_loss,
        nuggets_cost_percent=settings.nuggets_cost,
        band=PinnedBand(lower_minor=quoted.band.lower_minor, upper_minor=quoted.band.upper_minor),
        target=Target(
            item_id=prize.item_id,
            name=prize.name,
            value_minor=prize.value_minor,
            currency=prize.currency,
            image_url=prize.image_url,
        ),
        target_value_base_minor=item.value_minor,
        target_cashback_bps=item.cashback_bps,
        target_collectible=item.collectible,
        credits_share_bps=operator.config.credits_share_bps,
        config_version=platform.config_versions.get(operator.id),
        catalog_version=platform.catalog_versions.get(item.item_id),
        **stake,
        opened_at=platform.clock.now(),
    )

"""Upgrader quotes: the checks of decisions §7 (after idempotency) and the band they yield.

Order: game enabled, mode enabled, currency, chance, (staked items), wager range, target.
The target is accepted when it is an eligible catalogue item (active, fulfillable) whose
value, repriced into the round's currency, lies in the band; the prize *list* is bounded
for display, but any eligible in-band item may be aimed at.
"""

from __future__ import annotations

from dataclasses import dataclass

from application.config.directory import Directory, Operator
from application.errors import PlatformError, validation_error
from domain.catalog import CatalogItem, Prize, prize_of
from domain.money import Currency
from domain.refusals import Refusal
from domain.upgrader_checks import (
    GAME_KEY,
    chance_refusal,
    game_refusal,
    mode_refusal,
    target_refusal,
    wager_refusal,
)
from domain.upgrader_rules import (
    Band,
    SelectorConfig,
    UpgraderSettings,
    derive_selector_config,
    target_band,
)


def upgrader_settings(operator: Operator) -> UpgraderSettings:
    """The operator's Upgrader settings (``Operator.games``)."""
    return operator.games[GAME_KEY]


@dataclass(frozen=True)
class Quote:
    operator: Operator
    currency: Currency
    config: SelectorConfig
    wager_minor: int
    chance_bps: int
    band: Band

    def prizes(self, directory: Directory, locale: str | None) -> list[Prize]:
        limit = upgrader_settings(self.operator).prize_list_limit
        return directory.price_index(self.operator, self.currency).select(self.band, locale, limit)


def refuse(refusal: Refusal | None) -> None:
    """Raise ``refusal`` (if any) as the application's error."""
    if refusal is not None:
        raise PlatformError(refusal.code, refusal.message)


def operator_for_mode(directory: Directory, operator_id: str, mode: str) -> Operator:
    operator = directory.operators[operator_id]
    refuse(game_refusal(operator.config.enabled_games))
    refuse(mode_refusal(upgrader_settings(operator), mode))
    return operator


def check_chance(config: SelectorConfig, chance_bps: int, *, for_play: bool) -> None:
    refusal = chance_refusal(config, chance_bps)
    if refusal is not None and not for_play:  # a quote's chance is a malformed field
        raise validation_error(f"chanceBps: {refusal.message}")
    refuse(refusal)


def quote(
    operator: Operator,
    currency_code: str | None,
    wager_minor: int,
    chance_bps: int,
    *,
    for_play: bool,
) -> Quote:
    """Currency, chance and wager checks (in that order), then the band."""
    currency = operator.currency(currency_code)
    settings = upgrader_settings(operator)
    config = derive_selector_config(settings, operator.base, currency)
    check_chance(config, chance_bps, for_play=for_play)
    refuse(wager_refusal(config, wager_minor))
    band = target_band(
        wager_minor,
        settings.house_edge_bps,
        chance_bps,
        settings.nuggets_cost_percent,
        settings.no_loss,
    )
    return Quote(operator, currency, config, wager_minor, chance_bps, band)


def check_target(
    quoted: Quote, catalog: dict[int, CatalogItem], target_item_id: int, locale: str | None
) -> tuple[CatalogItem, Prize]:
    item = catalog.get(target_item_id)
    base, currency = quoted.operator.base, quoted.currency
    refuse(target_refusal(item, target_item_id, quoted.band, base, currency))
    assert item is not None  # refused above otherwise
    return item, prize_of(item, base, currency, locale)

"""Upgrader quotes: the checks of decisions §7 (after idempotency) and the band they yield.

Order: game enabled, mode enabled, currency, chance, (staked items), wager range, target.
The target is accepted when it is an eligible catalogue item (active, fulfillable) whose
value, repriced into the round's currency, lies in the band; the prize *list* is bounded
for display, but any eligible in-band item may be aimed at.
"""

from __future__ import annotations

from dataclasses import dataclass

from application.directory import Directory, Operator
from application.errors import PlatformError, game_disabled, validation_error
from domain.catalog import CatalogItem, Prize, is_eligible, prize_of
from domain.money import Currency, reprice
from domain.upgrader_rules import Band, SelectorConfig, derive_selector_config, target_band

GAME_KEY = "upgrader"


@dataclass(frozen=True)
class Quote:
    operator: Operator
    currency: Currency
    config: SelectorConfig
    wager_minor: int
    chance_bps: int
    band: Band

    def prizes(self, directory: Directory, locale: str | None) -> list[Prize]:
        limit = self.operator.settings.prize_list_limit
        return directory.price_index(self.operator, self.currency).select(self.band, locale, limit)


def operator_for_mode(directory: Directory, operator_id: str, mode: str) -> Operator:
    operator = directory.operators[operator_id]
    if not operator.game_enabled(GAME_KEY):
        raise game_disabled()
    enabled = operator.settings.balance_mode if mode == "balance" else operator.settings.items_mode
    if not enabled:
        raise PlatformError(
            "UPGRADER_MODE_DISABLED",
            403,
            f"the Upgrader's {mode} mode is switched off for this operator",
        )
    return operator


def check_chance(config: SelectorConfig, chance_bps: int, *, for_play: bool) -> None:
    if chance_bps in config.chance_presets_bps:
        return
    message = (
        f"chanceBps {chance_bps} is not one of the offered presets "
        f"{list(config.chance_presets_bps)}"
    )
    if for_play:
        raise PlatformError("UPGRADER_CHANCE_INVALID", 422, message)
    raise validation_error(f"chanceBps: {message}")


def check_wager(config: SelectorConfig, wager_minor: int) -> None:
    if not config.min_wager_minor <= wager_minor <= config.max_wager_minor:
        raise PlatformError(
            "UPGRADER_WAGER_OUT_OF_RANGE",
            422,
            f"wager {wager_minor} is outside {config.min_wager_minor}..{config.max_wager_minor} "
            f"{config.currency}",
        )


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
    config = derive_selector_config(operator.settings, operator.base, currency)
    check_chance(config, chance_bps, for_play=for_play)
    check_wager(config, wager_minor)
    settings = operator.settings
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
    if item is not None and is_eligible(item):
        value = reprice(item.value_minor, quoted.operator.base, quoted.currency)
        if quoted.band.contains(value):
            return item, prize_of(item, quoted.operator.base, quoted.currency, locale)
    raise PlatformError(
        "UPGRADER_PRIZE_OUT_OF_RANGE",
        422,
        f"item {target_item_id} is not an eligible prize in the band "
        f"{quoted.band.lower_minor}..{quoted.band.upper_minor} {quoted.currency.code}",
    )

"""The Upgrader's checks of a play or quote (decisions §7), as pure functions.

Each returns a :class:`~domain.refusals.Refusal` when the rule is broken, ``None`` when it
is met. The application calls them in the order of decisions §7 (game, mode, currency,
chance, stake, wager, target) and raises the refusal; the auditor calls the same ones
on every recorded opening (``application/audit/auditor.py``).
"""

from __future__ import annotations

from collections.abc import Collection

from domain.catalog import CatalogItem, is_eligible
from domain.money import Currency, reprice
from domain.refusals import Refusal
from domain.upgrader_rules import Band, SelectorConfig, UpgraderSettings

GAME_KEY = "upgrader"
MODES = ("balance", "items")

GAME_DISABLED = "GAME_DISABLED"
MODE_DISABLED = "UPGRADER_MODE_DISABLED"
CHANCE_INVALID = "UPGRADER_CHANCE_INVALID"
WAGER_OUT_OF_RANGE = "UPGRADER_WAGER_OUT_OF_RANGE"
PRIZE_OUT_OF_RANGE = "UPGRADER_PRIZE_OUT_OF_RANGE"


def game_refusal(enabled_games: Collection[str]) -> Refusal | None:
    if GAME_KEY in enabled_games:
        return None
    return Refusal(GAME_DISABLED, "the Upgrader is not enabled for this operator")


def mode_refusal(settings: UpgraderSettings, mode: str) -> Refusal | None:
    """``mode`` ("balance" or "items") must be switched on; any other mode never is."""
    enabled = {"balance": settings.balance_mode, "items": settings.items_mode}.get(mode, False)
    if enabled:
        return None
    return Refusal(MODE_DISABLED, f"the Upgrader's {mode} mode is switched off for this operator")


def chance_refusal(config: SelectorConfig, chance_bps: int) -> Refusal | None:
    """The chance must be one of the presets offered in this currency."""
    if chance_bps in config.chance_presets_bps:
        return None
    return Refusal(
        CHANCE_INVALID,
        f"chanceBps {chance_bps} is not one of the offered presets "
        f"{list(config.chance_presets_bps)}",
    )


def wager_refusal(config: SelectorConfig, wager_minor: int) -> Refusal | None:
    """The wager must lie within the limits repriced into the selector's currency."""
    if config.min_wager_minor <= wager_minor <= config.max_wager_minor:
        return None
    return Refusal(
        WAGER_OUT_OF_RANGE,
        f"wager {wager_minor} is outside {config.min_wager_minor}..{config.max_wager_minor} "
        f"{config.currency}",
    )


def target_refusal(
    item: CatalogItem | None, item_id: int, band: Band, base: Currency, currency: Currency
) -> Refusal | None:
    """The target must be an eligible item whose value in ``currency`` is in the band
    (the prize *list* is bounded for display; any eligible in-band item may be aimed at)."""
    if (
        item is not None
        and is_eligible(item)
        and band.contains(reprice(item.value_minor, base, currency))
    ):
        return None
    return Refusal(
        PRIZE_OUT_OF_RANGE,
        f"item {item_id} is not an eligible prize in the band "
        f"{band.lower_minor}..{band.upper_minor} {currency.code}",
    )

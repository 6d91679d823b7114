"""The loaded configuration as domain objects, built once at start-up (never per request)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from application.config.boxes import box_catalog
from application.config.shape import CatalogItemConfig, Config, OperatorConfig
from application.errors import PlatformError
from domain.boxes import BoxCatalog
from domain.catalog import CatalogItem
from domain.money import Currency, parse_rate
from domain.signing import SigningKey
from domain.upgrader_rules import PriceIndex, UpgraderSettings


@dataclass(frozen=True)
class Operator:
    id: str
    config: OperatorConfig = field(repr=False)
    base: Currency
    currencies: dict[str, Currency]
    # each game's settings by its game key, built by GAME_SETTINGS (a game reads its own:
    # ``upgrader_settings(operator)``)
    games: Mapping[str, Any]

    def currency(self, code: str | None) -> Currency:
        """The requested currency (default: base); UNSUPPORTED_CURRENCY when not configured."""
        if code is None:
            return self.base
        currency = self.currencies.get(code)
        if currency is None:
            raise PlatformError(
                "UNSUPPORTED_CURRENCY",
                f"currency {code!r} is not configured for this operator",
            )
        return currency

    def game_enabled(self, game_key: str) -> bool:
        return game_key in self.config.enabled_games


def catalog_item(item: CatalogItemConfig) -> CatalogItem:
    return CatalogItem(
        item_id=item.item_id,
        names=tuple(sorted(item.name.items())),
        value_minor=item.value_minor,
        image_url=item.image_url,
        active=item.active,
        fulfillable=item.fulfillable,
        cashback_bps=item.cashback_bps,
        collectible=item.collectible,
    )


def _upgrader_settings(config: OperatorConfig) -> UpgraderSettings:
    u = config.upgrader
    return UpgraderSettings(
        house_edge_bps=u.house_edge_bps,
        chance_presets_bps=tuple(u.chance_presets_bps),
        default_chance_bps=u.default_chance_bps,
        max_chance_bps=u.max_chance_bps,
        min_wager_minor=u.min_wager_minor,
        max_wager_minor=u.max_wager_minor,
        balance_mode=u.balance_mode,
        items_mode=u.items_mode,
        prize_list_limit=u.prize_list_limit,
        no_loss=u.no_loss,
        nuggets_cost_percent=u.nuggets_cost_percent,
    )


# game key -> its settings as the game reads them, from the operator's configuration (the
# stored configuration events are unchanged: they record the configuration itself)
GAME_SETTINGS: dict[str, Callable[[OperatorConfig], Any]] = {
    "upgrader": _upgrader_settings,
    "boxes": lambda config: config.boxes,
}


def _operator(config: OperatorConfig) -> Operator:
    currencies = {
        c.code: Currency(code=c.code, rate=parse_rate(c.rate), exponent=c.exponent)
        for c in config.currencies
    }
    games = {key: build(config) for key, build in GAME_SETTINGS.items()}
    return Operator(config.id, config, currencies[config.base_currency], currencies, games)


@dataclass(frozen=True)
class Directory:
    operators: dict[str, Operator]
    keyring: dict[str, SigningKey] = field(repr=False)
    catalog_access: dict[str, bool]
    catalog: dict[int, CatalogItem]
    boxes: BoxCatalog = field(default_factory=BoxCatalog)
    _indexes: dict[tuple[str, str], PriceIndex] = field(default_factory=dict, repr=False)

    def price_index(self, operator: Operator, currency: Currency) -> PriceIndex:
        """The operator's eligible items priced in ``currency`` (built once, then cached)."""
        key = (operator.id, currency.code)
        index = self._indexes.get(key)
        if index is None:
            index = self._indexes[key] = PriceIndex(self.catalog.values(), operator.base, currency)
        return index

    @classmethod
    def from_config(cls, config: Config) -> Directory:
        keyring = {}
        access = {}
        for operator in config.operators:
            for key in operator.keys:
                keyring[key.key_id] = SigningKey(key.key_id, operator.id, key.secret, key.revoked)
                access[key.key_id] = key.catalog_access
        return cls(
            operators={o.id: _operator(o) for o in config.operators},
            keyring=keyring,
            catalog_access=access,
            catalog={i.item_id: catalog_item(i) for i in config.catalog.items},
            boxes=box_catalog(config),
        )

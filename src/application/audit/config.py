"""The configuration history an auditor rebuilds from the log (decisions §2).

Operator profiles (settings, rates) and catalogue items are replayed from their
``OperatorProfile`` / ``CatalogItemRecord`` events in notification order; a snapshot is
kept per aggregate version, so a round is judged by the settings, rates and prices in
force when it was opened (the version it pinned, which must already be recorded).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from domain.catalog import CatalogItem
from domain.config_history import CatalogItemRecord, OperatorProfile
from domain.money import Currency, parse_rate, reprice
from domain.upgrader_rules import SelectorConfig, UpgraderSettings, derive_selector_config


@dataclass
class ProfileSnapshot:
    """An operator profile as of one version (derived values cached: it never changes)."""

    version: int
    settings: dict[str, Any]
    rates: dict[str, dict[str, Any]]
    _cache: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)
    _prices: dict[tuple[int, str, str], int] = field(
        default_factory=dict, repr=False, compare=False
    )

    def upgrader(self) -> UpgraderSettings:
        if "upgrader" not in self._cache:
            self._cache["upgrader"] = self._upgrader()
        return self._cache["upgrader"]

    def _upgrader(self) -> UpgraderSettings:
        u = self.settings.get("upgrader") or {}
        return UpgraderSettings(
            house_edge_bps=u["house_edge_bps"],
            chance_presets_bps=tuple(u["chance_presets_bps"]),
            default_chance_bps=u["default_chance_bps"],
            max_chance_bps=u["max_chance_bps"],
            min_wager_minor=u["min_wager_minor"],
            max_wager_minor=u["max_wager_minor"],
            balance_mode=u["balance_mode"],
            items_mode=u["items_mode"],
            prize_list_limit=u.get("prize_list_limit", 24),
            no_loss=u.get("no_loss", False),
            nuggets_cost_percent=u.get("nuggets_cost_percent", 0),
        )

    def currency(self, code: str) -> Currency | None:
        key = ("currency", code)
        if key not in self._cache:
            entry = self.rates.get(code)
            self._cache[key] = (
                None
                if entry is None
                else Currency(code=code, rate=parse_rate(entry["rate"]), exponent=entry["exponent"])
            )
        return self._cache[key]

    def _own(self, base: Currency, currency: Currency) -> bool:
        """Whether both are this snapshot's Currency objects (then their codes name them)."""
        cache = self._cache
        return (
            cache.get(("currency", base.code)) is base
            and cache.get(("currency", currency.code)) is currency
        )

    def selector(self, base: Currency, currency: Currency) -> SelectorConfig:
        if not self._own(base, currency):
            return derive_selector_config(self.upgrader(), base, currency)
        # codes as the key: cheaper to hash than Currency objects and their Fraction rates
        key = ("selector", base.code, currency.code)
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = derive_selector_config(self.upgrader(), base, currency)
        return found

    def reprice(self, value_minor: int, base: Currency, currency: Currency) -> int:
        """``money.reprice`` of a base-currency amount, remembered per (amount, currencies)."""
        if type(value_minor) is not int or not self._own(base, currency):
            return reprice(value_minor, base, currency)
        key = (value_minor, base.code, currency.code)
        found = self._prices.get(key)
        if found is None:
            found = self._prices[key] = reprice(value_minor, base, currency)
        return found


def catalog_item(item: dict[str, Any]) -> CatalogItem:
    return CatalogItem(
        item_id=item["item_id"],
        names=tuple(sorted((item.get("name") or {}).items())),
        value_minor=item["value_minor"],
        image_url=item.get("image_url"),
        active=item.get("active", True),
        fulfillable=item.get("fulfillable", True),
        cashback_bps=item.get("cashback_bps"),
        collectible=item.get("collectible", False),
    )


def pinned_currencies(
    opening: dict[str, Any], profile: ProfileSnapshot
) -> tuple[Currency | None, Currency | None, list[tuple[str, str]]]:
    """The base currency and the round's currency as the profile recorded them, and the
    problems (kind, message) with the rate and exponents the opening pinned (any game)."""
    o = opening
    base_code = profile.settings.get("base_currency")
    base = profile.currency(base_code) if base_code else None
    currency = profile.currency(o["currency"])
    if base is None:
        return None, None, [("config", f"base currency {base_code!r} has no recorded rate")]
    if currency is None:
        return base, None, [("rate", f"currency {o['currency']} was not configured at the time")]
    problems = []
    recorded = profile.rates[o["currency"]]
    if o["fx_rate"] != recorded["rate"] or o["currency_exponent"] != recorded["exponent"]:
        problems.append(
            (
                "rate",
                f"rate {o['fx_rate']} (exponent {o['currency_exponent']}) pinned for "
                f"{o['currency']}, the recorded rate was {recorded['rate']} "
                f"(exponent {recorded['exponent']})",
            )
        )
    if o["base_currency"] != base.code or o["base_exponent"] != base.exponent:
        problems.append(("rate", f"base currency {o['base_currency']} is not {base.code}"))
    return base, currency, problems


class _Versions:
    """Snapshots of one aggregate by version (the last one is the current state)."""

    def __init__(self) -> None:
        self.by_version: dict[int, Any] = {}
        self.current = 0

    def record(self, version: int, snapshot: Any) -> None:
        self.by_version[version] = snapshot
        self.current = max(self.current, version)

    def at(self, pinned: int | None) -> tuple[Any, str | None]:
        """The snapshot a round pinned (or the current one), and a problem if any."""
        if not self.by_version:
            return None, "nothing recorded"
        if pinned is None or pinned == self.current:
            return self.by_version[self.current], None
        if pinned > self.current:
            return (
                self.by_version[self.current],
                f"pins version {pinned}, but only {self.current} was recorded before it",
            )
        snapshot = self.by_version.get(pinned)
        if snapshot is None:
            return self.by_version[self.current], f"pins version {pinned}, which is unknown"
        return snapshot, None


class ConfigHistory:
    PROFILE_PREFIX = "domain.config_history:OperatorProfile."
    CATALOG_PREFIX = "domain.config_history:CatalogItemRecord."

    def __init__(self) -> None:
        self._profiles: dict[str, _Versions] = {}
        self._profile_state: dict[Any, dict[str, Any]] = {}
        self._items: dict[int, _Versions] = {}
        self._item_of: dict[Any, int] = {}

    def apply(self, event: Any) -> None:
        if isinstance(event, OperatorProfile.Event):
            self._profile(event)
        elif isinstance(event, CatalogItemRecord.Event):
            self._catalog(event)

    def _profile(self, event: Any) -> None:
        key = event.originator_id
        if isinstance(event, OperatorProfile.Registered):
            state = {"operator_id": event.operator_id, "settings": {}, "rates": {}}
            self._profile_state[key] = state
            self._profiles.setdefault(event.operator_id, _Versions())
        state = self._profile_state.get(key)
        if state is None:
            return  # an event of a profile whose registration is missing
        if isinstance(event, OperatorProfile.SettingsChanged):
            state["settings"] = event.settings
        elif isinstance(event, OperatorProfile.RateSet):
            state["rates"] = {
                **state["rates"],
                event.code: {"rate": event.rate, "exponent": event.exponent},
            }
        elif isinstance(event, OperatorProfile.CurrencyRemoved):
            state["rates"] = {c: r for c, r in state["rates"].items() if c != event.code}
        self._profiles[state["operator_id"]].record(
            event.originator_version,
            ProfileSnapshot(event.originator_version, state["settings"], state["rates"]),
        )

    def _catalog(self, event: Any) -> None:
        key = event.originator_id
        if isinstance(event, CatalogItemRecord.Listed):
            self._item_of[key] = event.item_id
            self._items.setdefault(event.item_id, _Versions())
            item = event.item
        else:
            item_id = self._item_of.get(key)
            if item_id is None:
                return
            current = self._items[item_id]
            item = current.by_version[current.current]
            if isinstance(event, CatalogItemRecord.Priced):
                item = {**item, "value_minor": event.value_minor}
            elif isinstance(event, CatalogItemRecord.Changed):
                item = event.item
        self._items[self._item_of[key]].record(event.originator_version, item)

    def profile(self, operator_id: str, pinned: int | None) -> tuple[Any, str | None]:
        versions = self._profiles.get(operator_id)
        if versions is None:
            return None, f"operator {operator_id!r} has no recorded profile"
        return versions.at(pinned)

    def item(self, item_id: int, pinned: int | None) -> tuple[dict[str, Any] | None, str | None]:
        versions = self._items.get(item_id)
        if versions is None:
            return None, f"catalogue item {item_id} was never recorded"
        return versions.at(pinned)

    def item_snapshots(self, item_id: int) -> list[dict[str, Any]]:
        """Every recorded state of the item so far, newest first."""
        versions = self._items.get(item_id)
        if versions is None:
            return []
        return [versions.by_version[v] for v in sorted(versions.by_version, reverse=True)]

    def current_item(self, item_id: int) -> dict[str, Any] | None:
        versions = self._items.get(item_id)
        if versions is None or not versions.by_version:
            return None
        return versions.by_version[versions.current]

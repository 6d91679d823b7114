"""Upgrader rules: chance limits, selector config, target band and prize list (decisions §2).

The catalogue's own types (item, prize, localised name, eligibility) are in ``domain/catalog.py``.

All arithmetic is on integers (bps, percent, minor units); the band is computed in the
currency the wager is given in. Catalogue values are in the operator's base currency and
are repriced (exact, then half-even) before they are compared with the band.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from domain.catalog import (
    CatalogItem,
    Prize,
    is_eligible,
    localised_name,
    normalised_locale,
    prize_of,
)
from domain.money import Currency, reprice

BPS = 10000


@dataclass(frozen=True, slots=True)
class UpgraderSettings:
    """An operator's Upgrader settings; wager limits are in base-currency minor units."""

    house_edge_bps: int
    chance_presets_bps: tuple[int, ...]
    default_chance_bps: int
    max_chance_bps: int
    min_wager_minor: int
    max_wager_minor: int
    balance_mode: bool
    items_mode: bool
    prize_list_limit: int = 24
    no_loss: bool = False
    nuggets_cost_percent: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.house_edge_bps < BPS:
            raise ValueError(f"house_edge_bps out of range: {self.house_edge_bps}")
        if not 0 <= self.nuggets_cost_percent <= 99:
            raise ValueError(f"nuggets_cost_percent out of range: {self.nuggets_cost_percent}")
        if self.max_chance_bps < 0 or any(p < 1 for p in self.chance_presets_bps):
            raise ValueError("chances must be positive")
        if not 0 <= self.min_wager_minor <= self.max_wager_minor:
            raise ValueError("wager limits must satisfy 0 <= min <= max")
        if self.prize_list_limit < 0:
            raise ValueError("prize_list_limit must not be negative")

    @property
    def nuggets_cost(self) -> int:
        """The Nuggets cost ``c`` in percent: the setting when no-loss is on, else 0."""
        return self.nuggets_cost_percent if self.no_loss else 0


@dataclass(frozen=True, slots=True)
class SelectorConfig:
    """The selector configuration of interface 2.6, in one display currency."""

    house_edge_bps: int
    chance_presets_bps: tuple[int, ...]
    default_chance_bps: int
    max_chance_bps: int
    available: bool
    min_wager_minor: int
    max_wager_minor: int
    currency: str
    balance_mode: bool
    items_mode: bool


@dataclass(frozen=True, slots=True)
class Band:
    """The target band (interface 2.5a): a prize is in band when lower <= value <= upper."""

    lower_minor: int
    upper_minor: int

    def contains(self, value_minor: int) -> bool:
        return self.lower_minor <= value_minor <= self.upper_minor


def max_chance_bps(settings: UpgraderSettings) -> int:
    """The largest chance the rules allow, before the 'available' rule (decisions §2).

    ``min(operator max, 10000 - e, 9999)``; with no-loss on also at most
    ``floor(10000 - e * 100 / (100 - c))`` so that every target is worth the stake.
    Never below 0 (a negative limit offers nothing, like 0).
    """
    e = settings.house_edge_bps
    limit = min(settings.max_chance_bps, BPS - e, BPS - 1)
    if settings.no_loss:
        c = settings.nuggets_cost_percent
        limit = min(limit, BPS - _ceil_div(e * 100, 100 - c))
    return max(0, limit)


@lru_cache(maxsize=1024)  # immutable inputs; asked on every quote, play and prize read
def derive_selector_config(
    settings: UpgraderSettings, base: Currency, currency: Currency
) -> SelectorConfig:
    """The selector config shown for ``currency`` (interface 2.6, decisions §2)."""
    limit = max_chance_bps(settings)
    presets = tuple(sorted({p for p in settings.chance_presets_bps if 1 <= p <= limit}))
    available = bool(presets)
    # the operator default if offered, else the largest offered below it, else the smallest
    wanted = settings.default_chance_bps
    default = max((p for p in presets if p <= wanted), default=presets[0]) if available else 0
    return SelectorConfig(
        house_edge_bps=settings.house_edge_bps,
        chance_presets_bps=presets,
        default_chance_bps=default,
        max_chance_bps=limit if available else 0,
        available=available,
        min_wager_minor=reprice(settings.min_wager_minor, base, currency),
        max_wager_minor=reprice(settings.max_wager_minor, base, currency),
        currency=currency.code,
        balance_mode=settings.balance_mode,
        items_mode=settings.items_mode,
    )


def target_band(
    wager_minor: int, house_edge_bps: int, chance_bps: int, nuggets_cost_percent: int, no_loss: bool
) -> Band:
    """The target band for stake W, edge e and chance p (bps), Nuggets cost c (percent).

    ``upper = floor(W * ((10000 - e) * 100 - (10000 - p) * c) / (p * 100))`` and
    ``lower = ceil(upper * 10 / 11)``; with no-loss on ``lower = max(W, lower)``. The
    Nuggets cost only applies with no-loss on (c is 0 otherwise). Integers only.
    """
    if not (1 <= chance_bps <= BPS and 0 <= house_edge_bps <= BPS and wager_minor >= 0):
        raise ValueError("chance, house edge or wager out of range")
    if not 0 <= nuggets_cost_percent <= 99:
        raise ValueError(f"nuggets_cost_percent out of range: {nuggets_cost_percent}")
    c = nuggets_cost_percent if no_loss else 0
    numerator = wager_minor * ((BPS - house_edge_bps) * 100 - (BPS - chance_bps) * c)
    upper = numerator // (chance_bps * 100)
    lower = _ceil_div(upper * 10, 11)
    if no_loss:
        lower = max(wager_minor, lower)
    return Band(lower_minor=lower, upper_minor=upper)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def select_prizes(
    catalog: Iterable[CatalogItem],
    band: Band,
    base: Currency,
    currency: Currency,
    locale: str | None,
    limit: int,
) -> list[Prize]:
    """Eligible items whose repriced value is in band: highest value first, ties by
    ``item_id`` ascending, at most ``limit`` of them."""
    prizes = (prize_of(item, base, currency, locale) for item in catalog if is_eligible(item))
    in_band = [prize for prize in prizes if band.contains(prize.value_minor)]
    in_band.sort(key=lambda prize: (-prize.value_minor, prize.item_id))
    return in_band[: max(limit, 0)]


class PriceIndex:
    """Eligible items sorted by their value in one currency, for band look-ups.

    Built once per (operator, currency) from a fixed catalogue; ``select`` gives the same
    answer as :func:`select_prizes` by bisecting the band instead of repricing every item.
    """

    def __init__(self, catalog: Iterable[CatalogItem], base: Currency, currency: Currency):
        # ascending by value, ties by item_id DEScending: reversed, a slice is in the
        # answer's order (value descending, ties by item_id ascending)
        priced = sorted(
            (
                (reprice(item.value_minor, base, currency), item.item_id, item)
                for item in catalog
                if is_eligible(item)
            ),
            key=lambda entry: (entry[0], -entry[1]),
        )
        self.values = [value for value, _, _ in priced]
        self.items = [item for _, _, item in priced]
        self.base = base
        self.currency = currency
        # every item as a Prize, in index order (Prize is immutable), for no locale and
        # for each locale the catalogue names (normalised): a bounded set, whatever the
        # requests ask for. Any other locale string builds just the slice it is sent.
        self._prizes: dict[str | None, list[Prize]] = {}
        self._locales = {normalised_locale(loc) for item in self.items for loc, _ in item.names}

    def select(self, band: Band, locale: str | None, limit: int) -> list[Prize]:
        """In-band items, highest value first, ties by ``item_id`` ascending, at most ``limit``."""
        low = bisect_left(self.values, band.lower_minor)
        high = bisect_right(self.values, band.upper_minor)
        start = max(low, high - max(limit, 0))
        key = None if locale is None else normalised_locale(locale)
        prizes = self._prizes.get(key)
        if prizes is None:
            if key is not None and key not in self._locales:
                return self._prizes_of(locale, start, high)[::-1]
            # localised_name normalises the locale itself, so the key names the same
            prizes = self._prizes[key] = self._prizes_of(key, 0, len(self.items))
        return prizes[start:high][::-1]

    def _prizes_of(self, locale: str | None, start: int, stop: int) -> list[Prize]:
        """``prize_of`` for items ``start:stop``, with the value already repriced."""
        code = self.currency.code
        return [
            Prize(
                item_id=item.item_id,
                name=localised_name(item.names, locale),
                value_minor=value,
                currency=code,
                image_url=item.image_url,
            )
            for value, item in zip(self.values[start:stop], self.items[start:stop], strict=True)
        ]

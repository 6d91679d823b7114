"""The catalogue: items, their localised names, prizes and eligibility (interface 2.2, 4.2).

Shared by every game: an item's ``value_minor`` is in the operator's base currency; a
:class:`Prize` is an item as shown in one currency (repriced half-even) and one locale.
"""

from __future__ import annotations

from dataclasses import dataclass

from domain.money import Currency, reprice


@dataclass(frozen=True, slots=True)
class CatalogItem:
    """A catalogue item; ``value_minor`` is in the operator's base currency."""

    item_id: int
    names: tuple[tuple[str, str], ...]
    value_minor: int
    image_url: str | None
    active: bool
    fulfillable: bool
    cashback_bps: int | None
    collectible: bool


def normalised_locale(locale: str) -> str:
    return locale.strip().replace("_", "-").lower()


def localised_name(names: tuple[tuple[str, str], ...], locale: str | None) -> str:
    """The best copy of a name for any locale string (interface 4.2: any value is served).

    Order: exact locale (case-insensitive, ``_`` same as ``-``); the requested language
    alone (``de-AT`` -> ``de``); another region of that language (``de-DE``); then the
    same three steps for ``en``; then the first pair. No names at all gives ``""``.
    """
    normalised = [(normalised_locale(loc), name) for loc, name in names]
    requested = normalised_locale(locale) if locale is not None else ""
    for want in (requested, "en") if requested else ("en",):
        language = want.split("-", 1)[0]
        for exact in (want, language):
            for loc, name in normalised:
                if loc == exact:
                    return name
        for loc, name in normalised:
            if loc.split("-", 1)[0] == language:
                return name
    return names[0][1] if names else ""


@dataclass(frozen=True, slots=True)
class Prize:
    """The prize object of interface 2.2; ``value_minor`` is in ``currency``."""

    item_id: int
    name: str
    value_minor: int
    currency: str
    image_url: str | None


def prize_of(item: CatalogItem, base: Currency, currency: Currency, locale: str | None) -> Prize:
    """An item as a prize in ``currency`` (repriced half-even) with its localised name."""
    return Prize(
        item_id=item.item_id,
        name=localised_name(item.names, locale),
        value_minor=reprice(item.value_minor, base, currency),
        currency=currency.code,
        image_url=item.image_url,
    )


def is_eligible(item: CatalogItem) -> bool:
    """Whether an item may be a target at all: active and fulfillable."""
    return item.active and item.fulfillable

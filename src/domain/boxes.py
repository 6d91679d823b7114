"""Boxes: versions as committed odds tables (decisions §10). Pure: no I/O, integers only.

A box version is keyed by (``box_id``, ``box_version_id``) and holds its price (base
currency minor units) and its table: ``(item_id, weight)`` entries in *table order*. Each
entry owns ``weight`` consecutive tickets in table order, the first from ticket 0, so
``totalTickets`` is the sum of the weights (at most 2^31) and a drawn ticket names exactly
one entry. The price and the table never change under a recorded version id; its name,
image and ``active`` flag may (application/config/box_records.py records each change).

``oddsHash`` commits to the price and the table: the lowercase hex SHA-256 of the compact
JSON ``{"boxId":B,"boxVersionId":V,"priceMinor":P,"items":[[itemId,weight],...]}`` (keys in
that order, no spaces). A box's *offered* version is its active version with the highest
``box_version_id``; a version holding an item that is no longer active or fulfillable is
*unavailable* (still listed and readable, never opened).
"""

from __future__ import annotations

import hashlib
import json
from bisect import bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import accumulate

from domain.catalog import CatalogItem
from domain.fairness import MAX_DRAW_SPACE

BPS = 10000
MAX_TOTAL_TICKETS = MAX_DRAW_SPACE


@dataclass(frozen=True, slots=True)
class BoxEntry:
    """One row of a table: ``weight`` tickets for ``item_id``."""

    item_id: int
    weight: int


@dataclass(frozen=True, slots=True)
class TicketRange:
    """The tickets ``ticket_from..ticket_to`` (inclusive) of one entry, and its odds."""

    item_id: int
    weight: int
    ticket_from: int
    ticket_to: int
    probability_bps: int


def odds_json(
    box_id: int, box_version_id: int, price_minor: int, entries: Iterable[BoxEntry]
) -> str:
    """The compact JSON that ``oddsHash`` hashes (keys in this order, no spaces)."""
    document = {
        "boxId": box_id,
        "boxVersionId": box_version_id,
        "priceMinor": price_minor,
        "items": [[entry.item_id, entry.weight] for entry in entries],
    }
    return json.dumps(document, separators=(",", ":"), ensure_ascii=True)


def odds_hash(
    box_id: int, box_version_id: int, price_minor: int, entries: Iterable[BoxEntry]
) -> str:
    """Lowercase hex SHA-256 of :func:`odds_json`."""
    text = odds_json(box_id, box_version_id, price_minor, entries)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def probability_bps(weight: int, total_tickets: int) -> int:
    """``floor(10000 x weight / totalTickets)``."""
    return BPS * weight // total_tickets


@dataclass(frozen=True)
class BoxVersion:
    """One version of a box: immutable price and table, plus what may change."""

    box_id: int
    box_version_id: int
    price_minor: int
    entries: tuple[BoxEntry, ...]
    names: tuple[tuple[str, str], ...] = ()
    image_url: str | None = None
    active: bool = True
    _ends: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.entries:
            raise ValueError("a box version needs at least one item")
        if any(type(e.weight) is not int or e.weight < 1 for e in self.entries):
            raise ValueError("weights must be integers >= 1")
        if self.price_minor < 1:
            raise ValueError("a box price must be at least 1 minor unit")
        ends = tuple(accumulate(entry.weight for entry in self.entries))
        if ends[-1] > MAX_TOTAL_TICKETS:
            raise ValueError(f"totalTickets {ends[-1]} is above 2^31")
        object.__setattr__(self, "_ends", ends)

    @property
    def key(self) -> tuple[int, int]:
        return (self.box_id, self.box_version_id)

    @property
    def total_tickets(self) -> int:
        return self._ends[-1]

    @property
    def odds_hash(self) -> str:
        return odds_hash(self.box_id, self.box_version_id, self.price_minor, self.entries)

    def ranges(self) -> list[TicketRange]:
        """Each entry's tickets, in table order."""
        total = self.total_tickets
        return [
            TicketRange(
                item_id=entry.item_id,
                weight=entry.weight,
                ticket_from=end - entry.weight,
                ticket_to=end - 1,
                probability_bps=probability_bps(entry.weight, total),
            )
            for entry, end in zip(self.entries, self._ends, strict=True)
        ]

    def index_for_ticket(self, ticket: int) -> int:
        """The table index of the entry whose range holds ``ticket`` (0 <= ticket <
        totalTickets)."""
        if type(ticket) is not int or not 0 <= ticket < self.total_tickets:
            raise ValueError(f"ticket {ticket!r} is outside 0..{self.total_tickets - 1}")
        return bisect_right(self._ends, ticket)

    def entry_for_ticket(self, ticket: int) -> BoxEntry:
        """The entry whose range holds ``ticket`` (0 <= ticket < totalTickets)."""
        return self.entries[self.index_for_ticket(ticket)]

    def rtp_bps(self, catalog: Mapping[int, CatalogItem]) -> int:
        """``floor(10000 x sum(weight x cash-back value) / (totalTickets x price))``.

        The cash-back value is what the item would pay back now, ``value x cashback_bps``
        (0 when it is not cashable), in the base currency: the same in every currency.
        Exact: ``10000 x value x cashback_bps / 10000`` is ``value x cashback_bps``.
        """
        paid = 0
        for entry in self.entries:
            item = catalog[entry.item_id]
            paid += entry.weight * item.value_minor * (item.cashback_bps or 0)
        return paid // (self.total_tickets * self.price_minor)

    def available(self, catalog: Mapping[int, CatalogItem]) -> bool:
        """Whether every item of the table is still active and fulfillable."""
        for entry in self.entries:
            item = catalog.get(entry.item_id)
            if item is None or not (item.active and item.fulfillable):
                return False
        return True


class BoxCatalog:
    """Every configured box version, with each box's offered version."""

    def __init__(self, versions: Iterable[BoxVersion] = ()) -> None:
        self.versions: dict[tuple[int, int], BoxVersion] = {}
        for version in versions:
            if version.key in self.versions:
                raise ValueError(f"box {version.box_id} version {version.box_version_id} twice")
            self.versions[version.key] = version
        offered: dict[int, BoxVersion] = {}
        for version in self.versions.values():
            current = offered.get(version.box_id)
            if not version.active:
                continue
            if current is None or version.box_version_id > current.box_version_id:
                offered[version.box_id] = version
        self._offered = offered

    def version(self, box_id: int, box_version_id: int) -> BoxVersion | None:
        """Any version by its key, inactive ones included."""
        return self.versions.get((box_id, box_version_id))

    def offered(self, box_id: int) -> BoxVersion | None:
        """The box's active version with the highest ``box_version_id``, if any."""
        return self._offered.get(box_id)

    def offered_versions(self) -> list[BoxVersion]:
        """Each box's offered version, by ``box_id`` ascending."""
        return [self._offered[box_id] for box_id in sorted(self._offered)]

"""Recompute a box round's draws: each reel's ticket and the item it names (decisions §10).

A round of ``count`` boxes uses ``count`` consecutive nonces from its first one; reel
``k`` (0-based) draws with nonce ``first + k`` over the space ``totalTickets`` with
:func:`domain.fairness.draw_trace`, and its item is the table entry whose ticket range
holds the ticket. The table comes from the recorded box catalogue of a store
(``BoxCatalogRecord``, the events start-up records: price, table and ``oddsHash`` of every
version, inactive ones included); a bare space gives tickets only.

Used by ``upgrader verify --box/--space`` (entrypoints/cli_verify_box.py). Reading the store is
the only I/O here; nothing is written.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from typing import Any

from application.audit.claim_check import Check
from domain.boxes import BoxEntry, BoxVersion, TicketRange
from domain.fairness import draw_trace


class BadBoxInput(ValueError):
    """Input that cannot be verified at all (``upgrader verify``'s exit 2)."""


@dataclass(frozen=True, slots=True)
class RecordedBox:
    """A box version as the store recorded it: its table, and the ``oddsHash`` recorded
    with it (``version.odds_hash`` is the one recomputed from the table)."""

    version: BoxVersion
    recorded_odds_hash: str


@dataclass(frozen=True, slots=True)
class Reel:
    """One box of the round: its nonce, ticket (from block ``cursor``, word
    ``word_index``) and, when the table is known, the range that holds the ticket."""

    index: int
    nonce: int
    ticket: int
    cursor: int
    word_index: int
    total_tickets: int
    range: TicketRange | None = None

    @property
    def item_id(self) -> int | None:
        return None if self.range is None else self.range.item_id

    def as_json(self, box: BoxVersion | None) -> dict[str, Any]:
        """``facts.reels``' keys (``boxId, boxVersionId, nonce, ticket, totalTickets,
        itemId``), plus where the ticket came from and the item's ticket range."""
        answer: dict[str, Any] = {
            "boxId": None if box is None else box.box_id,
            "boxVersionId": None if box is None else box.box_version_id,
            "nonce": self.nonce,
            "ticket": self.ticket,
            "totalTickets": self.total_tickets,
            "itemId": self.item_id,
            "cursor": self.cursor,
            "wordIndex": self.word_index,
        }
        if self.range is not None:
            answer["ticketFrom"] = self.range.ticket_from
            answer["ticketTo"] = self.range.ticket_to
        return answer


def draw_reels(
    server_seed: str,
    client_seed: str,
    first_nonce: int,
    count: int,
    space: int,
    box: BoxVersion | None = None,
) -> list[Reel]:
    """The ``count`` reels of a round from ``first_nonce`` on, over ``space`` tickets
    (``box.total_tickets`` when a box is given; ValueError if they differ)."""
    if box is not None and box.total_tickets != space:
        raise ValueError(f"the box has {box.total_tickets} tickets, not {space}")
    if type(count) is not int or count < 1:
        raise ValueError(f"count must be an int >= 1: {count!r}")
    ranges = [] if box is None else box.ranges()
    ends = [held.ticket_to for held in ranges]
    reels = []
    for index in range(count):
        nonce = first_nonce + index
        trace = draw_trace(server_seed, client_seed, nonce, space)
        held = ranges[bisect_left(ends, trace.ticket)] if ranges else None
        reels.append(Reel(index, nonce, trace.ticket, trace.cursor, trace.word_index, space, held))
    return reels


def recorded_box(database_url: str, box_id: int, box_version_id: int) -> RecordedBox | None:
    """The version (``box_id``, ``box_version_id``) of the store's recorded catalogue, or
    None when the store recorded no such version (or no box catalogue at all)."""
    from application.config.box_records import recorded_box_catalog
    from application.platform import EventStore
    from application.store.database_url import parse_database_url

    env = parse_database_url(database_url).eventsourcing_env()
    if env["PERSISTENCE_MODULE"].endswith("postgres"):  # one reader: a small pool
        env.update({"POSTGRES_POOL_SIZE": "1", "POSTGRES_MAX_OVERFLOW": "1"})
    events = EventStore(env=env)
    try:
        record = recorded_box_catalog(events)
    finally:
        events.close()
    recorded = None if record is None else record.versions.get((box_id, box_version_id))
    if recorded is None:
        return None
    version = BoxVersion(
        box_id=box_id,
        box_version_id=box_version_id,
        price_minor=recorded["price_minor"],
        entries=tuple(BoxEntry(item_id, weight) for item_id, weight in recorded["items"]),
        names=tuple(sorted(recorded["name"].items())),
        image_url=recorded["image_url"],
        active=recorded["active"],
    )
    return RecordedBox(version, recorded["odds_hash"])


@dataclass(frozen=True, slots=True)
class BoxRequest:
    """What is to be recomputed (seeds, first nonce, boxes, the box or a bare space) and
    the claims made about it (each None when not claimed). From flags or a round JSON."""

    server_seed: str
    client_seed: str
    first_nonce: int
    count: int
    space: int | None
    box_key: tuple[int, int] | None
    tickets: list[int] | None
    items: list[int] | None
    server_seed_hash: str | None
    odds_hash: str | None
    total_tickets: int | None = None
    nonces: list[int] | None = None
    public_id: str | None = None


def checks_of(
    request: BoxRequest, reels: list[Reel], box: RecordedBox | None, hash_: str
) -> list[Check]:
    """Every claim of ``request`` against the recomputed hash, box and reels, in order."""
    checks = []

    def check(claim: str, claimed: Any, recomputed: Any) -> None:
        checks.append(Check(claim, claimed == recomputed, claimed, recomputed))

    if request.server_seed_hash is not None:
        check("serverSeedHash", request.server_seed_hash, hash_)
    if box is not None:
        check("recorded oddsHash", box.recorded_odds_hash, box.version.odds_hash)
        if request.odds_hash is not None:
            check("oddsHash", request.odds_hash, box.version.odds_hash)
    if request.total_tickets is not None:
        check("totalTickets", request.total_tickets, reels[0].total_tickets)
    for reel in reels:
        name = f"reel {reel.index + 1} (nonce {reel.nonce})"
        if request.nonces is not None:
            check(f"reel {reel.index + 1} nonce", request.nonces[reel.index], reel.nonce)
        if request.tickets is not None:
            check(f"{name} ticket", request.tickets[reel.index], reel.ticket)
        if request.items is not None:
            check(f"{name} itemId", request.items[reel.index], reel.item_id)
    return checks


def box_json(box: RecordedBox) -> dict[str, Any]:
    """The recorded version: its table with each item's ticket range."""
    version = box.version
    return {
        "boxId": version.box_id,
        "boxVersionId": version.box_version_id,
        "priceMinor": version.price_minor,
        "active": version.active,
        "oddsHash": version.odds_hash,
        "recordedOddsHash": box.recorded_odds_hash,
        "totalTickets": version.total_tickets,
        "items": [
            {
                "itemId": held.item_id,
                "weight": held.weight,
                "ticketFrom": held.ticket_from,
                "ticketTo": held.ticket_to,
                "probabilityBps": held.probability_bps,
            }
            for held in version.ranges()
        ],
    }

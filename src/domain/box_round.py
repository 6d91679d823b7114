"""The box round's typed records (decisions §10): what its opening pinned and what its
settle drew. A box round is a balance-mode :class:`~domain.round.Round` whose opening has
``game == "boxes"``; it uses the same events as the Upgrader's (``Opened``,
``DebitAttempted``, ``WagerDebited``, ``RoundSettled``, ...), and these records are their
dict payloads (``Round.Opened.opening``, ``Round.RoundSettled.settlement``).

Stored format: field names and order never change once recorded (``domain/records.py``).

The opening pins everything the settle and the audit need, so a round is self-contained:
the version's key, ``oddsHash`` and ``totalTickets`` (the audit checks them against the
recorded box catalogue), the price per box in the round's currency and in the base
currency, the rate, and every table entry's item terms at opening time, in table order
(``BoxPinnedEntry``: its weight, name, values and cash-back terms). The settle draws
``count`` reels with consecutive nonces from the player's active seed pair (one
``NonceUsed`` each) and grants one inventory item per reel, in reel order; item ``k``'s
``inventoryItemId`` is ``inventory_item_number(round id, salt=k)``.
"""

from __future__ import annotations

from msgspec import UNSET, UnsetType

from domain.records import Record
from domain.round import RoundTerms

GAME_KEY = "boxes"
PURCHASE_REASON = "boxes.purchase"  # the wallet.debit reason of a box purchase


class BoxPinnedEntry(Record, frozen=True, kw_only=True):
    """One table entry as the opening pinned it: ``weight`` tickets for ``item_id``, and
    the item as it would be granted (name in the round's locale, value in the round's
    currency and in the base currency, its cash-back terms)."""

    item_id: int
    weight: int
    name: str
    value_minor: int
    value_base_minor: int
    image_url: str | None
    cashback_bps: int | None
    collectible: bool


class BoxOpening(RoundTerms, frozen=True, kw_only=True):
    """A box purchase as asked and pinned (the ``Round.Opened`` payload); ``mode`` is
    "balance", ``game`` is "boxes" and ``wager_minor`` = ``count`` x ``price_minor``."""

    currency_exponent: int
    base_currency: str
    base_exponent: int
    fx_rate: str
    box_id: int
    box_version_id: int
    box_name: str
    odds_hash: str
    total_tickets: int
    count: int
    price_minor: int  # one box, repriced to the round's currency (half-even, once)
    price_base_minor: int  # one box, in the base currency (the version's price)
    entries: list[BoxPinnedEntry]  # the whole table, in table order
    credits_share_bps: int
    config_version: int | UnsetType | None = UNSET
    opened_at: float


class BoxReel(Record, frozen=True, kw_only=True):
    """One box opened: its nonce, the ticket drawn, the entry (``entry_index`` in table
    order) whose range holds it, and the inventory item granted for it."""

    nonce: int
    ticket: int
    entry_index: int
    item_id: int
    inventory_item_id: int


class BoxWonItem(Record, frozen=True, kw_only=True):
    """An item a box round granted, as answered."""

    inventory_item_id: int
    item_id: int
    name: str
    value_minor: int
    image_url: str | None
    cashback_minor: int | None
    cashback_uncredited: dict[str, int] | None
    currency: str


class BoxSettlement(Record, frozen=True, kw_only=True):
    """The draws and what they granted (the ``Round.RoundSettled`` payload)."""

    server_seed_hash: str
    client_seed: str
    nonce: int  # the first reel's nonce
    algorithm_key: str
    reels: list[BoxReel]
    payout_minor: int  # the sum of the won items' value_minor
    won_items: list[BoxWonItem]
    balance_after_minor: int | None
    settled_at: float

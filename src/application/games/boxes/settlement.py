"""A box round's settle: ``count`` draws and their grants, saved with the round's settle in
one commit by the shared ``application/rounds/settle.py`` (decisions §10).

Box ``k`` (from 0) takes the player's next nonce (``use_nonce``, one ``NonceUsed`` each,
so a round's nonces are consecutive: the pair is one aggregate and the commit fails
whole when another round took a nonce first, then all ``count`` are drawn again),
draws a ticket over the version's ``totalTickets`` with the active seed pair
(``domain.fairness.draw``), and is granted the item of the pinned table entry whose
range holds it, as inventory item ``inventory_item_number(round id, salt=k)``.
``payoutMinor`` is the sum of the won items' values in the round's currency; each won
item's cash-back estimate is what it would pay back now at the round's pinned rate
(decisions §5, its grant value as the current price).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

from application.games.boxes.round_answers import open_answer, recorded_answer
from application.platform import Platform
from application.rounds.fairness import FairnessService
from application.rounds.settle import Drawn, settle_with_retries
from domain.box_round import BoxOpening, BoxPinnedEntry, BoxReel, BoxSettlement, BoxWonItem
from domain.boxes import BoxEntry, BoxVersion
from domain.fairness import ALGORITHM_KEY, draw
from domain.ids import inventory_item_number
from domain.inventory import InventoryItem
from domain.money import Currency, parse_rate
from domain.round import Round
from domain.stake_counting import count_item, displayed


def pinned_version(opening: BoxOpening) -> BoxVersion:
    """The version as the opening pinned it (its table in table order)."""
    return BoxVersion(
        box_id=opening.box_id,
        box_version_id=opening.box_version_id,
        price_minor=opening.price_base_minor,
        entries=tuple(BoxEntry(e.item_id, e.weight) for e in opening.entries),
    )


def _cashback(
    opening: BoxOpening, entry: BoxPinnedEntry
) -> tuple[int | None, dict[str, int] | None]:
    """What the won item could cash back now, at the round's pinned rate (decisions §5)."""
    if entry.cashback_bps is None:
        return None, None
    grant = entry.value_base_minor
    counted = count_item(
        grant, grant, entry.collectible, entry.cashback_bps, opening.credits_share_bps
    )
    base = Currency(code=opening.base_currency, rate=Fraction(1), exponent=opening.base_exponent)
    currency = Currency(
        code=opening.currency, rate=parse_rate(opening.fx_rate), exponent=opening.currency_exponent
    )
    minor, parts = displayed(counted, base, currency)
    return minor, {
        "price_fall_minor": parts.price_fall_minor,
        "price_rise_minor": parts.price_rise_minor,
        "credits_share_minor": parts.credits_share_minor,
    }


def _grant(
    opening: BoxOpening, entry: BoxPinnedEntry, number: int, at: float
) -> tuple[InventoryItem, BoxWonItem]:
    item = InventoryItem(
        {
            "inventory_item_id": number,
            "operator_id": opening.operator_id,
            "player_external_id": opening.player_external_id,
            "item_id": entry.item_id,
            "name": entry.name,
            "grant_value_base_minor": entry.value_base_minor,
            "value_minor": entry.value_minor,
            "currency": opening.currency,
            "currency_exponent": opening.currency_exponent,
            "base_currency": opening.base_currency,
            "base_exponent": opening.base_exponent,
            "fx_rate": opening.fx_rate,
            "cashback_bps": entry.cashback_bps,
            "collectible": entry.collectible,
            "round_public_id": opening.public_id,
            "granted_at": at,
        }
    )
    cashback_minor, cashback_parts = _cashback(opening, entry)
    won = BoxWonItem(
        inventory_item_id=number,
        item_id=entry.item_id,
        name=entry.name,
        value_minor=entry.value_minor,
        image_url=entry.image_url,
        cashback_minor=cashback_minor,
        cashback_uncredited=cashback_parts,
        currency=opening.currency,
    )
    return item, won


def box_draw(
    platform: Platform, fairness: FairnessService, round_: Round, balance_after: int | None
) -> Drawn:
    """``count`` reels with consecutive nonces, one inventory item each."""
    opening = BoxOpening.of(round_.opening)
    version = pinned_version(opening)
    pair = fairness.load_or_begin(opening.operator_id, opening.player_external_id)
    server_seed = fairness.server_seed(pair.server_seed_hash)
    now = platform.clock.now()
    changed: list[Any] = [pair]
    reels: list[BoxReel] = []
    won_items: list[BoxWonItem] = []
    for k in range(opening.count):
        nonce = pair.use_nonce(opening.public_id)
        ticket = draw(server_seed, pair.client_seed, nonce, version.total_tickets)
        index = version.index_for_ticket(ticket)
        entry = opening.entries[index]
        number = inventory_item_number(round_.id, salt=k)
        item, won = _grant(opening, entry, number, now)
        changed.append(item)
        won_items.append(won)
        reels.append(
            BoxReel(
                nonce=nonce,
                ticket=ticket,
                entry_index=index,
                item_id=entry.item_id,
                inventory_item_id=number,
            )
        )
    settlement = BoxSettlement(
        server_seed_hash=pair.server_seed_hash,
        client_seed=pair.client_seed,
        nonce=reels[0].nonce,
        algorithm_key=ALGORITHM_KEY,
        reels=reels,
        payout_minor=sum(won.value_minor for won in won_items),
        won_items=won_items,
        balance_after_minor=balance_after,
        settled_at=now,
    )
    return Drawn(settlement, changed, open_answer(opening, settlement))


def settle_box_round(
    platform: Platform,
    fairness: FairnessService,
    load_round: Callable[[], Round],
    attempt: int,
    debit: dict[str, Any],
) -> Any:
    """Draw and record (retried when another round of the player took a nonce first)."""
    return settle_with_retries(
        platform,
        load_round,
        attempt,
        debit,
        lambda round_, balance: box_draw(platform, fairness, round_, balance),
        recorded_answer,
    )

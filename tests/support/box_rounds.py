"""Box rounds saved as the purchase path saves them, for tests of what reads rounds.

Until the purchase path (``POST /api/play/rounds/open``, ``/api/s2s/purchase``) is on
main, the audit, analytics and report tests build their box rounds here, through the
application's event store with the real aggregates: a ``Round`` opened with a
``BoxOpening`` and its ``DebitAttempted`` (one commit, the saga's intent), then in one
commit the ``WagerDebited`` and ``RoundSettled`` with a ``BoxSettlement``, one
``NonceUsed`` per box on the player's ``PlayerFairness`` and one ``InventoryItem`` per
reel (``inventory_item_number(round id, salt=k)``). The draws use the player's real seed
pair (the vault's server seed), so a later rotation reveals a seed that recomputes them.

Replace with real purchases over HTTP once the purchase path lands (decisions §10).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any
from uuid import UUID

from application.platform import Platform
from application.rounds.fairness import FairnessService
from domain.box_round import (
    GAME_KEY,
    BoxOpening,
    BoxPinnedEntry,
    BoxReel,
    BoxSettlement,
    BoxWonItem,
)
from domain.catalog import localised_name
from domain.fairness import ALGORITHM_KEY, draw
from domain.ids import inventory_item_number, round_id, round_public_id
from domain.inventory import InventoryItem
from domain.money import Currency, parse_rate, reprice
from domain.round import Round
from domain.stake_counting import count_item, displayed


@dataclass(frozen=True)
class SavedBoxRound:
    rid: UUID
    public_id: str
    opening: dict[str, Any]
    settlement: dict[str, Any]
    grants: list[dict[str, Any]]


def box_opening(
    platform: Platform,
    *,
    operator_id: str,
    player: str,
    action: str,
    box_id: int,
    box_version_id: int,
    count: int = 1,
    currency: str | None = None,
) -> BoxOpening:
    """The opening a purchase of ``count`` boxes records (prices repriced half-even once)."""
    directory = platform.directory
    operator = directory.operators[operator_id]
    shown = operator.currency(currency)
    version = directory.boxes.version(box_id, box_version_id)
    assert version is not None, (box_id, box_version_id)
    rate = next(c.rate for c in operator.config.currencies if c.code == shown.code)
    entries = []
    for entry in version.entries:
        item = directory.catalog[entry.item_id]
        entries.append(
            BoxPinnedEntry(
                item_id=item.item_id,
                weight=entry.weight,
                name=localised_name(item.names, None),
                value_minor=reprice(item.value_minor, operator.base, shown),
                value_base_minor=item.value_minor,
                image_url=item.image_url,
                cashback_bps=item.cashback_bps,
                collectible=item.collectible,
            )
        )
    price = reprice(version.price_minor, operator.base, shown)
    rid = round_id(operator_id, player, action)
    return BoxOpening(
        operator_id=operator_id,
        player_external_id=player,
        client_action_id=action,
        public_id=round_public_id(rid),
        mode="balance",
        fingerprint=f"test-box:{box_id}:{box_version_id}:{count}:{shown.code}",
        wager_minor=count * price,
        currency=shown.code,
        game=GAME_KEY,
        currency_exponent=shown.exponent,
        base_currency=operator.base.code,
        base_exponent=operator.base.exponent,
        fx_rate=rate,
        box_id=box_id,
        box_version_id=box_version_id,
        box_name=localised_name(version.names, None),
        odds_hash=version.odds_hash,
        total_tickets=version.total_tickets,
        count=count,
        price_minor=price,
        price_base_minor=version.price_minor,
        entries=entries,
        credits_share_bps=operator.config.credits_share_bps,
        config_version=platform.config_versions.get(operator_id),
        opened_at=platform.clock.now(),
    )


def _cashback(opening: BoxOpening, entry: BoxPinnedEntry) -> tuple[int | None, Any]:
    if entry.cashback_bps is None:
        return None, None
    counted = count_item(
        entry.value_base_minor,
        entry.value_base_minor,
        entry.collectible,
        entry.cashback_bps,
        opening.credits_share_bps,
    )
    base = Currency(opening.base_currency, Fraction(1), opening.base_exponent)
    shown = Currency(opening.currency, parse_rate(opening.fx_rate), opening.currency_exponent)
    minor, parts = displayed(counted, base, shown)
    return minor, {
        "price_fall_minor": parts.price_fall_minor,
        "price_rise_minor": parts.price_rise_minor,
        "credits_share_minor": parts.credits_share_minor,
    }


def save_box_round(
    platform: Platform,
    fairness: FairnessService,
    *,
    operator_id: str,
    player: str,
    action: str,
    box_id: int,
    box_version_id: int,
    count: int = 1,
    currency: str | None = None,
    balance_after_minor: int | None = None,
) -> SavedBoxRound:
    """Open, debit and settle one box round in the store (two commits, as the saga)."""
    opening = box_opening(
        platform,
        operator_id=operator_id,
        player=player,
        action=action,
        box_id=box_id,
        box_version_id=box_version_id,
        count=count,
        currency=currency,
    )
    round_ = Round(opening.record())
    key = f"{opening.public_id}:1"
    attempt = round_.attempt_debit(key, opening.wager_minor, opening.currency, opening.opened_at)
    platform.events.save(round_)

    pair = fairness.load_or_begin(operator_id, player)
    server_seed = fairness.server_seed(pair.server_seed_hash)
    version = platform.directory.boxes.version(box_id, box_version_id)
    assert version is not None
    now = platform.clock.now()
    reels, won, items, grants = [], [], [], []
    first = None
    for k in range(count):
        nonce = pair.use_nonce(opening.public_id)
        first = nonce if first is None else first
        ticket = draw(server_seed, pair.client_seed, nonce, opening.total_tickets)
        chosen = version.entry_for_ticket(ticket)
        index = version.entries.index(chosen)
        entry = opening.entries[index]
        number = inventory_item_number(round_.id, salt=k)
        reels.append(
            BoxReel(
                nonce=nonce,
                ticket=ticket,
                entry_index=index,
                item_id=entry.item_id,
                inventory_item_id=number,
            )
        )
        cashback_minor, uncredited = _cashback(opening, entry)
        won.append(
            BoxWonItem(
                inventory_item_id=number,
                item_id=entry.item_id,
                name=entry.name,
                value_minor=entry.value_minor,
                image_url=entry.image_url,
                cashback_minor=cashback_minor,
                cashback_uncredited=uncredited,
                currency=opening.currency,
            )
        )
        grant = {
            "inventory_item_id": number,
            "operator_id": operator_id,
            "player_external_id": player,
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
            "granted_at": now,
        }
        grants.append(grant)
        items.append(InventoryItem(grant))
    settlement = BoxSettlement(
        server_seed_hash=pair.server_seed_hash,
        client_seed=pair.client_seed,
        nonce=first if first is not None else 0,
        algorithm_key=ALGORITHM_KEY,
        reels=reels,
        payout_minor=sum(w.value_minor for w in won),
        won_items=won,
        balance_after_minor=balance_after_minor,
        settled_at=now,
    )
    debit = {
        "attempt": attempt,
        "idempotency_key": key,
        "balance_after_minor": balance_after_minor,
        "provider_txn_ref": None,
        "at": now,
    }
    round_.settle(debit, settlement.record())
    platform.events.save(round_, pair, *items)
    return SavedBoxRound(
        round_.id, opening.public_id, opening.record(), settlement.record(), grants
    )

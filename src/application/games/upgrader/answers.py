"""Rounds on the wire (interface 2.1, 2.3, 2.5), rendered only from recorded event data.

The play answer, its idempotent replay, the round history projection and the webhook all
render from the same two recorded records (the round's opening and its settlement, typed
by ``domain/upgrader_round.py``), so a retry returns the original answer byte for byte.
"""

from __future__ import annotations

from typing import Any

from application.clock import iso_utc
from application.inventory.items import uncredited_wire
from domain.round import Round
from domain.upgrader_round import Target, UpgraderOpening, UpgraderSettlement, WonItem


def prize_wire(target: Target) -> dict[str, Any]:
    return {
        "itemId": target.item_id,
        "name": target.name,
        "valueMinor": target.value_minor,
        "currency": target.currency,
        "imageUrl": target.image_url,
    }


def round_wire(opening: UpgraderOpening, settlement: UpgraderSettlement) -> dict[str, Any]:
    return {
        "publicId": opening.public_id,
        "status": "settled",
        "mode": opening.mode,
        "betMinor": opening.wager_minor,
        "payoutMinor": settlement.payout_minor,
        "currency": opening.currency,
        "chanceBps": opening.chance_bps,
        "feeBps": opening.fee_bps,
        "rolledBps": settlement.rolled_bps,
        "isWin": settlement.is_win,
        "target": prize_wire(opening.target),
        "fairness": {
            "serverSeedHash": settlement.server_seed_hash,
            "clientSeed": settlement.client_seed,
            "nonce": settlement.nonce,
            "algorithmKey": settlement.algorithm,
        },
        "nuggetsAwardedMinor": settlement.nuggets_minor,
        "settledAt": iso_utc(settlement.settled_at),
    }


def won_item_wire(won: WonItem | None) -> dict[str, Any] | None:
    if won is None:
        return None
    return {
        "inventoryItemId": won.inventory_item_id,
        "itemId": won.item_id,
        "name": won.name,
        "cashbackMinor": won.cashback_minor,
        "cashbackUncredited": uncredited_wire(won.cashback_uncredited),
        "currency": won.currency,
        "state": "unresolved",
    }


def facts_wire(opening: UpgraderOpening, settlement: UpgraderSettlement) -> dict[str, Any]:
    return {
        "currency": opening.currency,
        "reels": [],
        "deal": {
            "stakeCountedMinor": settlement.stake_counted_minor,
            "stakeUncredited": uncredited_wire(settlement.uncredited_stake),
            "nuggetsAwardedMinor": settlement.nuggets_minor,
        },
    }


def play_answer(opening: UpgraderOpening, settlement: UpgraderSettlement) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "round": round_wire(opening, settlement),
        "wonItem": won_item_wire(settlement.won_item),
    }
    if opening.mode == "items":
        answer["stake"] = opening.stake
    answer["balanceAfterMinor"] = settlement.balance_after_minor
    answer["facts"] = facts_wire(opening, settlement)
    return answer


def round_view(round_: Round) -> dict[str, Any]:
    """A settled round as its history shows it (the cancel's answers, decisions §11)."""
    return round_wire(UpgraderOpening.of(round_.opening), UpgraderSettlement.of(round_.settlement))


def recorded_answer(round_: Round) -> dict[str, Any]:
    """The play answer of a settled round, from its recorded opening and settlement."""
    return play_answer(UpgraderOpening.of(round_.opening), UpgraderSettlement.of(round_.settlement))

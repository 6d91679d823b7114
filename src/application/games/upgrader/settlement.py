"""The Upgrader's settle: the nonce, the roll, the payout and the item grant, saved with
the round's settle in one commit by the shared ``application/rounds/settle.py``."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any
from uuid import UUID

from application.games.upgrader.answers import play_answer, recorded_answer
from application.games.upgrader.views import AnyPlayAnswer
from application.platform import Platform
from application.rounds.fairness import FairnessService
from application.rounds.settle import Drawn, settle_with_retries
from domain.fairness import ALGORITHM_KEY, is_win, roll
from domain.ids import inventory_item_number
from domain.inventory import InventoryItem
from domain.money import Currency, parse_rate
from domain.round import Round
from domain.stake_counting import count_item, displayed
from domain.upgrader_round import UpgraderOpening, UpgraderSettlement, WonItem


def round_currencies(opening: UpgraderOpening) -> tuple[Currency, Currency]:
    """The base currency and the round's currency at the rate the round pinned."""
    base = Currency(code=opening.base_currency, rate=Fraction(1), exponent=opening.base_exponent)
    currency = Currency(
        code=opening.currency,
        rate=parse_rate(opening.fx_rate),
        exponent=opening.currency_exponent,
    )
    return base, currency


def cashback_estimate(opening: UpgraderOpening) -> tuple[int | None, dict[str, int] | None]:
    """What the won target could cash back now, at the round's pinned rate (decisions §5)."""
    if opening.target_cashback_bps is None:
        return None, None
    grant = opening.target_value_base_minor
    counted = count_item(
        grant,
        grant,
        opening.target_collectible,
        opening.target_cashback_bps,
        opening.credits_share_bps,
    )
    base, currency = round_currencies(opening)
    minor, parts = displayed(counted, base, currency)
    return minor, {
        "price_fall_minor": parts.price_fall_minor,
        "price_rise_minor": parts.price_rise_minor,
        "credits_share_minor": parts.credits_share_minor,
    }


def _grant(opening: UpgraderOpening, round_uuid: UUID, at: float) -> tuple[InventoryItem, WonItem]:
    number = inventory_item_number(round_uuid)
    cashback_minor, cashback_parts = cashback_estimate(opening)
    target = opening.target
    item = InventoryItem(
        {
            "inventory_item_id": number,
            "operator_id": opening.operator_id,
            "player_external_id": opening.player_external_id,
            "item_id": target.item_id,
            "name": target.name,
            "grant_value_base_minor": opening.target_value_base_minor,
            "value_minor": target.value_minor,
            "currency": opening.currency,
            "currency_exponent": opening.currency_exponent,
            "base_currency": opening.base_currency,
            "base_exponent": opening.base_exponent,
            "fx_rate": opening.fx_rate,
            "cashback_bps": opening.target_cashback_bps,
            "collectible": opening.target_collectible,
            "round_public_id": opening.public_id,
            "granted_at": at,
        }
    )
    won = WonItem(
        inventory_item_id=number,
        item_id=target.item_id,
        name=target.name,
        cashback_minor=cashback_minor,
        cashback_uncredited=cashback_parts,
        currency=opening.currency,
    )
    return item, won


def settlement_record(
    opening: UpgraderOpening,
    pair: Any,
    nonce: int,
    rolled: int,
    won_item: WonItem | None,
    balance_after_minor: int | None,
    now: float,
) -> UpgraderSettlement:
    """The ``RoundSettled`` record of a round rolled ``rolled`` with ``pair``'s seeds at
    ``nonce`` (the event's shape; the audit re-derives every field of it)."""
    won = is_win(rolled, opening.chance_bps)
    lost_with_nuggets = opening.no_loss and not won
    return UpgraderSettlement(
        server_seed_hash=pair.server_seed_hash,
        client_seed=pair.client_seed,
        nonce=nonce,
        algorithm_key=ALGORITHM_KEY,
        rolled_bps=rolled,
        is_win=won,
        payout_minor=opening.target.value_minor if won else 0,
        nuggets_minor=opening.wager_minor if lost_with_nuggets else 0,
        stake_counted_minor=opening.counted_stake_minor,
        stake_uncredited=opening.uncredited_stake,
        won_item=won_item,
        balance_after_minor=balance_after_minor,
        settled_at=now,
    )


def upgrader_draw(
    platform: Platform, fairness: FairnessService, round_: Round, balance_after: int | None
) -> Drawn:
    """The Upgrader's draw: the player's next nonce, the roll, and on a win the target
    granted as an inventory item."""
    opening = UpgraderOpening.of(round_.opening)
    pair = fairness.load_or_begin(opening.operator_id, opening.player_external_id)
    nonce = pair.use_nonce(opening.public_id)
    rolled = roll(fairness.server_seed(pair.server_seed_hash), pair.client_seed, nonce)
    now = platform.clock.now()
    changed: list[Any] = [pair]
    won_item = None
    if is_win(rolled, opening.chance_bps):
        item, won_item = _grant(opening, round_.id, now)
        changed.append(item)
    settlement = settlement_record(opening, pair, nonce, rolled, won_item, balance_after, now)
    return Drawn(settlement, changed, play_answer(opening, settlement))


def settle_round(
    platform: Platform,
    fairness: FairnessService,
    load_round: Callable[[], Round],
    attempt: int | None,
    debit: dict[str, Any] | None,
    extra: Callable[[Round], list[Any]] | None = None,
) -> AnyPlayAnswer:
    """Roll and record (``rounds.settle.settle_with_retries``: retried when another round
    of the player took the nonce first).

    ``load_round`` gives the round afresh on every try (balance mode: the recorded one;
    items mode: a new one, created in this same commit). Balance mode passes the accepted
    ``debit``; items mode passes ``extra``, which returns the consumed stake's aggregates
    to save in the same commit.
    """
    return settle_with_retries(
        platform,
        load_round,
        attempt,
        debit,
        lambda round_, balance: upgrader_draw(platform, fairness, round_, balance),
        recorded_answer,
        extra,
    )

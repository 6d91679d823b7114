"""Rounds on the wire (interface 2.1, 2.3, 2.5), rendered only from recorded event data.

The play answer, its idempotent replay, the round history projection and the webhook all
render from the same two recorded records (the round's opening and its settlement, typed
by ``domain/upgrader_round.py``) into the same views (``views.py``), so a retry returns
the original answer byte for byte.
"""

from __future__ import annotations

import msgspec

from application.clock import iso_utc
from application.games.upgrader.views import (
    GAME,
    AnyPlayAnswer,
    DealWire,
    FactsWire,
    FairnessWire,
    PlayAnswer,
    PlayItemsAnswer,
    PrizeWire,
    RoundSettledData,
    RoundWire,
    StakeWire,
    WonItemWire,
)
from application.inventory.items import uncredited_wire
from domain.catalog import Prize
from domain.round import Round
from domain.upgrader_round import Target, UpgraderOpening, UpgraderSettlement, WonItem


def prize_wire(prize: Prize | Target) -> PrizeWire:
    """A prize offered now (``Prize``), or a round's target as its opening pinned it."""
    return PrizeWire(
        item_id=prize.item_id,
        name=prize.name,
        value_minor=prize.value_minor,
        currency=prize.currency,
        image_url=prize.image_url,
    )


def round_wire(opening: UpgraderOpening, settlement: UpgraderSettlement) -> RoundWire:
    return RoundWire(
        public_id=opening.public_id,
        status="settled",
        game=GAME,
        mode=opening.mode,
        bet_minor=opening.wager_minor,
        payout_minor=settlement.payout_minor,
        currency=opening.currency,
        chance_bps=opening.chance_bps,
        fee_bps=opening.fee_bps,
        rolled_bps=settlement.rolled_bps,
        is_win=settlement.is_win,
        target=prize_wire(opening.target),
        fairness=FairnessWire(
            server_seed_hash=settlement.server_seed_hash,
            client_seed=settlement.client_seed,
            nonce=settlement.nonce,
            algorithm_key=settlement.algorithm,
        ),
        nuggets_awarded_minor=settlement.nuggets_minor,
        settled_at=iso_utc(settlement.settled_at),
    )


def won_item_wire(won: WonItem | None) -> WonItemWire | None:
    if won is None:
        return None
    return WonItemWire(
        inventory_item_id=won.inventory_item_id,
        item_id=won.item_id,
        name=won.name,
        cashback_minor=won.cashback_minor,
        cashback_uncredited=uncredited_wire(won.cashback_uncredited),
        currency=won.currency,
        state="unresolved",
    )


def facts_wire(opening: UpgraderOpening, settlement: UpgraderSettlement) -> FactsWire:
    return FactsWire(
        currency=opening.currency,
        reels=[],
        deal=DealWire(
            stake_counted_minor=settlement.stake_counted_minor,
            stake_uncredited=uncredited_wire(settlement.uncredited_stake),
            nuggets_awarded_minor=settlement.nuggets_minor,
        ),
    )


def stake_wire(opening: UpgraderOpening) -> StakeWire | None:
    """An items-mode round's stake as its opening recorded it (the view's dict); None in
    balance mode."""
    if opening.mode != "items":
        return None
    return msgspec.convert(opening.stake, StakeWire)


def play_answer(opening: UpgraderOpening, settlement: UpgraderSettlement) -> AnyPlayAnswer:
    round_ = round_wire(opening, settlement)
    won_item = won_item_wire(settlement.won_item)
    facts = facts_wire(opening, settlement)
    stake = stake_wire(opening)
    if stake is None:
        return PlayAnswer(
            round=round_,
            won_item=won_item,
            balance_after_minor=settlement.balance_after_minor,
            facts=facts,
        )
    return PlayItemsAnswer(
        round=round_, won_item=won_item, stake=stake, balance_after_minor=None, facts=facts
    )


def webhook_data(opening: UpgraderOpening, settlement: UpgraderSettlement) -> RoundSettledData:
    """The ``round_settled`` webhook's ``data``: the play answer's round, won item and
    facts, and the stake (null in balance mode)."""
    return RoundSettledData(
        round=round_wire(opening, settlement),
        won_item=won_item_wire(settlement.won_item),
        stake=stake_wire(opening),
        facts=facts_wire(opening, settlement),
    )


def recorded_answer(round_: Round) -> AnyPlayAnswer:
    """The play answer of a settled round, from its recorded opening and settlement."""
    return play_answer(UpgraderOpening.of(round_.opening), UpgraderSettlement.of(round_.settlement))

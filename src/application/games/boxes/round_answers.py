"""A box round on the wire (decisions §10), rendered only from its recorded records.

The open answer, its idempotent replay, the round history's view and the
``round_settled`` webhook's data all render from the same two records (the round's
``BoxOpening`` and its ``BoxSettlement``, ``domain/box_round.py``), so a retry answers the
original answer byte for byte and the webhook's ``facts`` equal the answer's.

The answer::

    {round: {publicId, status, game: "boxes", betMinor, payoutMinor, currency,
             box: {boxId, boxVersionId, count, oddsHash, totalTickets},
             fairness: {serverSeedHash, clientSeed, nonce, algorithmKey}, settledAt},
     wonItems: [{inventoryItemId, itemId, name, valueMinor, imageUrl, cashbackMinor,
                 cashbackUncredited, currency, state}],
     balanceAfterMinor,
     facts: {currency, reels: [{boxId, boxVersionId, nonce, ticket, totalTickets, itemId}],
             deal: {stakeCountedMinor}}}

``fairness.nonce`` is the first reel's; reel ``k`` used ``nonce + k``. ``wonItems`` and
``facts.reels`` are in reel order (the k-th won item is the k-th reel's).
"""

from __future__ import annotations

from typing import Annotated, Any

from application.clock import iso_utc
from application.games.upgrader.views import FairnessWire
from application.inventory.items import uncredited_wire
from application.inventory.views import UncreditedWire
from application.wallet.refusals import RoundHead
from application.wire import CurrencyOut, Wire, words
from domain.box_round import GAME_KEY, BoxOpening, BoxSettlement, BoxWonItem
from domain.round import Round


class BoxOfRound(Wire):
    """The box version a round opened, and how many of it."""

    box_id: Annotated[int, words("the box's id")]
    box_version_id: Annotated[int, words("the version opened (its odds table)")]
    count: Annotated[int, words("how many boxes the round opened")]
    odds_hash: Annotated[str, words("the version's oddsHash, the table the draws used")]
    total_tickets: Annotated[int, words("the version's number of tickets, the draws' space")]


class BoxRound(RoundHead):
    """A settled box round (decisions §10)."""

    game: Annotated[str, words('the game, "boxes"')]
    bet_minor: Annotated[int, words("the price paid: count x the price of one box")]
    payout_minor: Annotated[int, words("the sum of the won items' values")]
    currency: Annotated[str, words("ISO 4217 code of the round's amounts (the currency charged)")]
    box: BoxOfRound
    fairness: Annotated[
        FairnessWire,
        words("the seeds and the first box's nonce of the draws (box k, from 0, used nonce + k)"),
    ]
    settled_at: Annotated[str, words("when the round settled (UTC ISO 8601)")]


class BoxWonItemWire(Wire):
    """An item a box granted, now in the player's inventory."""

    inventory_item_id: Annotated[int, words("the item's id in the player's inventory")]
    item_id: Annotated[int, words("catalogue item id")]
    name: Annotated[str, words("the item's name in the requested locale")]
    value_minor: Annotated[int, words("the item's value in `currency` when it was won")]
    image_url: Annotated[str | None, words("the item's picture, or null")]
    cashback_minor: Annotated[
        int | None,
        words("what a cash-back would pay now at the round's rate; null when not cashable"),
    ]
    cashback_uncredited: UncreditedWire
    currency: CurrencyOut
    state: Annotated[str, words('"unresolved" when granted')]


class BoxReelWire(Wire):
    """One box opened: its draw and the item its ticket names."""

    box_id: Annotated[int, words("the box's id")]
    box_version_id: Annotated[int, words("the version's id")]
    nonce: Annotated[int, words("the nonce of this box's draw")]
    ticket: Annotated[int, words("the ticket drawn, 0..totalTickets-1")]
    total_tickets: Annotated[int, words("the draw's space")]
    item_id: Annotated[int, words("the item whose ticket range holds the ticket")]


class BoxDealWire(Wire):
    """How the stake counted."""

    stake_counted_minor: Annotated[int, words("the stake as counted: betMinor")]


class BoxFactsWire(Wire):
    """The round's figures, the same as in the round_settled webhook."""

    currency: CurrencyOut
    reels: Annotated[list[BoxReelWire], words("one entry per box opened, in order")]
    deal: BoxDealWire


class BoxOpenAnswer(Wire):
    """An opened box round (decisions §10): the round, the items won and its facts."""

    round: BoxRound
    won_items: Annotated[list[BoxWonItemWire], words("one item per box, in reel order")]
    balance_after_minor: Annotated[
        int | None,
        words(
            "the casino balance after the debit, as the wallet reported it (null if it did not say)"
        ),
    ]
    facts: BoxFactsWire


class BoxHistoryRound(BoxRound, kw_only=True):
    """A box round as round history shows it: the answer's ``round``, then the draws
    (``facts.reels``) and the won items, so that a player or an auditor can check it
    from the history alone (the Upgrader's history round carries its roll likewise)."""

    reels: Annotated[list[BoxReelWire], words("one entry per box opened, in order")]
    won_items: Annotated[list[BoxWonItemWire], words("one item per box, in reel order")]


class BoxRoundSettledData(Wire):
    """A settled box round as the open answered it (without the balance)."""

    round: BoxRound
    won_items: Annotated[list[BoxWonItemWire], words("one item per box, in reel order")]
    facts: BoxFactsWire


class BoxRoundSettledWebhook(Wire):
    """The ``round_settled`` webhook's body for a box round (sent to the operator's
    webhook_url; the platform renders it in ``projections.outbox``)."""

    id: Annotated[
        str, words("the webhook's id, derived from the round: the same on every delivery")
    ]
    type: Annotated[str, words('always "round_settled"')]
    created_at: Annotated[str, words("when the round settled (UTC ISO 8601)")]
    operator_id: Annotated[str, words("the operator's id on the platform")]
    player_external_id: Annotated[str, words("the operator's own id of the player")]
    data: BoxRoundSettledData


def box_round(opening: BoxOpening, settlement: BoxSettlement) -> BoxRound:
    return BoxRound(
        public_id=opening.public_id,
        status="settled",
        game=GAME_KEY,
        bet_minor=opening.wager_minor,
        payout_minor=settlement.payout_minor,
        currency=opening.currency,
        box=BoxOfRound(
            box_id=opening.box_id,
            box_version_id=opening.box_version_id,
            count=opening.count,
            odds_hash=opening.odds_hash,
            total_tickets=opening.total_tickets,
        ),
        fairness=FairnessWire(
            server_seed_hash=settlement.server_seed_hash,
            client_seed=settlement.client_seed,
            nonce=settlement.nonce,
            algorithm_key=settlement.algorithm_key,
        ),
        settled_at=iso_utc(settlement.settled_at),
    )


def won_item_wire(won: BoxWonItem) -> BoxWonItemWire:
    return BoxWonItemWire(
        inventory_item_id=won.inventory_item_id,
        item_id=won.item_id,
        name=won.name,
        value_minor=won.value_minor,
        image_url=won.image_url,
        cashback_minor=won.cashback_minor,
        cashback_uncredited=uncredited_wire(won.cashback_uncredited),
        currency=won.currency,
        state="unresolved",
    )


def box_facts(opening: BoxOpening, settlement: BoxSettlement) -> BoxFactsWire:
    return BoxFactsWire(
        currency=opening.currency,
        reels=[
            BoxReelWire(
                box_id=opening.box_id,
                box_version_id=opening.box_version_id,
                nonce=reel.nonce,
                ticket=reel.ticket,
                total_tickets=opening.total_tickets,
                item_id=reel.item_id,
            )
            for reel in settlement.reels
        ],
        deal=BoxDealWire(stake_counted_minor=opening.wager_minor),
    )


def open_answer(opening: BoxOpening, settlement: BoxSettlement) -> BoxOpenAnswer:
    return BoxOpenAnswer(
        round=box_round(opening, settlement),
        won_items=[won_item_wire(won) for won in settlement.won_items],
        balance_after_minor=settlement.balance_after_minor,
        facts=box_facts(opening, settlement),
    )


def recorded_answer(round_: Round) -> BoxOpenAnswer:
    """The open answer of a settled box round, from its recorded opening and settlement."""
    return open_answer(BoxOpening.of(round_.opening), BoxSettlement.of(round_.settlement))


# -- the registry's views (application/games/registry.py): from the stored opening's JSON


def round_view(opening_text: str, settlement: dict[str, Any]) -> BoxHistoryRound:
    """What round history shows: the answer's ``round``, its reels and its won items."""
    opening = BoxOpening.decode(opening_text)
    recorded = BoxSettlement.of(settlement)
    head = box_round(opening, recorded)
    return BoxHistoryRound(
        **{name: getattr(head, name) for name in head.__struct_fields__},
        reels=box_facts(opening, recorded).reels,
        won_items=[won_item_wire(won) for won in recorded.won_items],
    )


def webhook_data(opening_text: str, settlement: dict[str, Any]) -> BoxRoundSettledData:
    """The ``round_settled`` webhook's ``data``: the answer but its balance."""
    answer = open_answer(BoxOpening.decode(opening_text), BoxSettlement.of(settlement))
    return BoxRoundSettledData(round=answer.round, won_items=answer.won_items, facts=answer.facts)

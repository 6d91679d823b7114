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

import msgspec
from msgspec import Meta, Struct

from application.clock import iso_utc
from domain.box_round import GAME_KEY, BoxOpening, BoxSettlement, BoxWonItem
from domain.round import Round


class _Answer(Struct, rename="camel", frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


def _words(text: str) -> Meta:
    """A field's description in the OpenAPI document."""
    return Meta(description=text)


class BoxOfRound(_Answer):
    """The box version a round opened, and how many of it."""

    box_id: Annotated[int, _words("the box's id")]
    box_version_id: Annotated[int, _words("the version opened (its odds table)")]
    count: Annotated[int, _words("how many boxes the round opened")]
    odds_hash: Annotated[str, _words("the version's oddsHash, the table the draws used")]
    total_tickets: Annotated[int, _words("the version's number of tickets, the draw's space")]


class BoxFairness(_Answer):
    """What the draws are verifiable against (decisions §3, §10)."""

    server_seed_hash: Annotated[str, _words("SHA-256 (hex) of the server seed, committed first")]
    client_seed: Annotated[str, _words("the player's client seed")]
    nonce: Annotated[int, _words("the first box's nonce; box k (from 0) used nonce + k")]
    algorithm_key: Annotated[str, _words('the draw algorithm, "hmac_sha256_v1"')]


class BoxRound(_Answer):
    """A settled box round (decisions §10)."""

    public_id: Annotated[str, _words("the round's id, r_ and 32 hex digits")]
    status: Annotated[str, _words('"settled"')]
    game: Annotated[str, _words('"boxes"')]
    bet_minor: Annotated[int, _words("the price paid: count x the price of one box")]
    payout_minor: Annotated[int, _words("the sum of the won items' values")]
    currency: Annotated[str, _words("ISO 4217 code of the round's amounts (the currency charged)")]
    box: BoxOfRound
    fairness: BoxFairness
    settled_at: Annotated[str, _words("when the round settled (UTC ISO 8601)")]


class BoxUncredited(_Answer):
    """The part of a value not paid in Credits, by cause (interface 2.4)."""

    price_fall_minor: Annotated[int, _words("lost to a price fall, in minor units")]
    price_rise_minor: Annotated[int, _words("lost to a price rise, in minor units")]
    credits_share_minor: Annotated[
        int, _words("not paid because the operator's Credits share is below 100 %")
    ]


class BoxWonItemAnswer(_Answer):
    """An item a box granted, in the player's inventory."""

    inventory_item_id: Annotated[int, _words("the item's id in the player's inventory")]
    item_id: Annotated[int, _words("catalogue item id")]
    name: Annotated[str, _words("the item's name in the requested locale")]
    value_minor: Annotated[int, _words("the item's value in `currency` when it was won")]
    image_url: Annotated[str | None, _words("the item's picture, or null")]
    cashback_minor: Annotated[
        int | None,
        _words("what a cash-back would pay now at the round's rate; null when not cashable"),
    ]
    cashback_uncredited: BoxUncredited
    currency: Annotated[str, _words("ISO 4217 code of the amounts")]
    state: Annotated[str, _words('"unresolved" when granted')]


class BoxReelAnswer(_Answer):
    """One box opened: its draw and the item its ticket names."""

    box_id: Annotated[int, _words("the box's id")]
    box_version_id: Annotated[int, _words("the version's id")]
    nonce: Annotated[int, _words("the nonce of this box's draw")]
    ticket: Annotated[int, _words("the ticket drawn, 0..totalTickets-1")]
    total_tickets: Annotated[int, _words("the draw's space")]
    item_id: Annotated[int, _words("the item whose ticket range holds the ticket")]


class BoxDeal(_Answer):
    """How the stake counted."""

    stake_counted_minor: Annotated[int, _words("the stake as counted: betMinor")]


class BoxFacts(_Answer):
    """The round's figures, the same as in the round_settled webhook."""

    currency: Annotated[str, _words("ISO 4217 code of the amounts")]
    reels: Annotated[list[BoxReelAnswer], _words("one entry per box opened, in order")]
    deal: BoxDeal


class BoxOpenAnswer(_Answer):
    """An opened box round (decisions §10): the round, the items won and its facts."""

    round: BoxRound
    won_items: Annotated[list[BoxWonItemAnswer], _words("one item per box, in reel order")]
    balance_after_minor: Annotated[
        int | None,
        _words(
            "the casino balance after the debit, as the wallet reported it (null if it did not say)"
        ),
    ]
    facts: BoxFacts


class BoxRoundSettledData(_Answer):
    """A settled box round as the open answered it (without the balance)."""

    round: BoxRound
    won_items: Annotated[list[BoxWonItemAnswer], _words("one item per box, in reel order")]
    facts: BoxFacts


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
        fairness=BoxFairness(
            server_seed_hash=settlement.server_seed_hash,
            client_seed=settlement.client_seed,
            nonce=settlement.nonce,
            algorithm_key=settlement.algorithm_key,
        ),
        settled_at=iso_utc(settlement.settled_at),
    )


def _uncredited(parts: dict[str, int] | None) -> BoxUncredited:
    if not parts:
        return BoxUncredited(price_fall_minor=0, price_rise_minor=0, credits_share_minor=0)
    return BoxUncredited(
        price_fall_minor=parts["price_fall_minor"],
        price_rise_minor=parts["price_rise_minor"],
        credits_share_minor=parts["credits_share_minor"],
    )


def won_item_answer(won: BoxWonItem) -> BoxWonItemAnswer:
    return BoxWonItemAnswer(
        inventory_item_id=won.inventory_item_id,
        item_id=won.item_id,
        name=won.name,
        value_minor=won.value_minor,
        image_url=won.image_url,
        cashback_minor=won.cashback_minor,
        cashback_uncredited=_uncredited(won.cashback_uncredited),
        currency=won.currency,
        state="unresolved",
    )


def box_facts(opening: BoxOpening, settlement: BoxSettlement) -> BoxFacts:
    return BoxFacts(
        currency=opening.currency,
        reels=[
            BoxReelAnswer(
                box_id=opening.box_id,
                box_version_id=opening.box_version_id,
                nonce=reel.nonce,
                ticket=reel.ticket,
                total_tickets=opening.total_tickets,
                item_id=reel.item_id,
            )
            for reel in settlement.reels
        ],
        deal=BoxDeal(stake_counted_minor=opening.wager_minor),
    )


def open_answer(opening: BoxOpening, settlement: BoxSettlement) -> BoxOpenAnswer:
    return BoxOpenAnswer(
        round=box_round(opening, settlement),
        won_items=[won_item_answer(won) for won in settlement.won_items],
        balance_after_minor=settlement.balance_after_minor,
        facts=box_facts(opening, settlement),
    )


def recorded_answer(round_: Round) -> BoxOpenAnswer:
    """The open answer of a settled box round, from its recorded opening and settlement."""
    return open_answer(BoxOpening.of(round_.opening), BoxSettlement.of(round_.settlement))


# -- the registry's views (application/games/registry.py): from the stored opening's JSON


def round_view(opening_text: str, settlement: dict[str, Any]) -> dict[str, Any]:
    """What round history shows: the answer's ``round``."""
    opening = BoxOpening.decode(opening_text)
    return msgspec.to_builtins(box_round(opening, BoxSettlement.of(settlement)))


def answer_view(opening_text: str, settlement: dict[str, Any]) -> dict[str, Any]:
    """The open answer as plain JSON values."""
    opening = BoxOpening.decode(opening_text)
    return msgspec.to_builtins(open_answer(opening, BoxSettlement.of(settlement)))

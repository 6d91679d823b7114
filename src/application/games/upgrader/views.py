"""The Upgrader's answer views (interface 2.1-2.7, 4.3, 4.5; decisions §9): the one
definition of the round, the won item, the facts, the stake, the play answers and the
``round_settled`` webhook's body.

``answers.py`` builds them from a round's records; the play routes return them, the round
history projection stores a settled round's ``RoundWire`` and the webhook outbox a
``RoundSettledWebhook`` (each as ``json.dumps`` of ``msgspec.to_builtins``: key order is
field order), and the OpenAPI document is generated from them: each docstring and field
description is its words. A settled round names its game (``game``, decisions §10) right
after its status; a voided round is ``RoundHead`` alone (interface 2.1).
"""

from __future__ import annotations

from typing import Annotated

from application.inventory.views import UncreditedWire
from application.wallet.refusals import RoundHead
from application.wire import CurrencyOut, Wire, words

GAME = "upgrader"


class PrizeWire(Wire):
    """A catalogue item offered as a prize (interface 2.2)."""

    item_id: Annotated[int, words("catalogue item id (targetItemId of a play)")]
    name: Annotated[str, words("the item's name in the requested locale (or the best one)")]
    value_minor: Annotated[
        int, words("the item's value in `currency`, repriced from the base currency now")
    ]
    currency: CurrencyOut
    image_url: Annotated[str | None, words("the item's picture, or null")]


class FairnessWire(Wire):
    """What the roll is verifiable against (README, "Provable fairness")."""

    server_seed_hash: Annotated[
        str, words("SHA-256 (hex) of the server seed, committed before the roll")
    ]
    client_seed: Annotated[str, words("the player's client seed")]
    nonce: Annotated[int, words("the seed pair's round counter for this roll")]
    algorithm_key: Annotated[str, words('the roll algorithm, "hmac_sha256_v1"')]


class RoundWire(RoundHead, omit_defaults=True):
    """An Upgrader round (interface 2.1). A voided round (the wallet refused the debit)
    carries only publicId and status."""

    game: Annotated[str | None, words('the game, "upgrader"; absent on a voided round')] = None
    mode: Annotated[
        str | None, words('"balance" (wager from the casino balance) or "items" (stake of items)')
    ] = None
    bet_minor: Annotated[
        int | None, words("the stake: the wager, or the staked items' counted value")
    ] = None
    payout_minor: Annotated[int | None, words("the won prize's value on a win; 0 on a loss")] = None
    currency: Annotated[
        str | None, words("ISO 4217 code of the round's amounts (the currency charged)")
    ] = None
    chance_bps: Annotated[int | None, words("the win chance played, in basis points")] = None
    fee_bps: Annotated[int | None, words("the house edge applied, in basis points")] = None
    rolled_bps: Annotated[
        int | None, words("the roll in 0..9999; a win when rolledBps < chanceBps")
    ] = None
    is_win: Annotated[bool | None, words("whether the roll won the target")] = None
    target: Annotated[PrizeWire | None, words("the prize aimed at (won on a win)")] = None
    fairness: Annotated[FairnessWire | None, words("the seeds and nonce of the roll")] = None
    nuggets_awarded_minor: Annotated[
        int | None, words("Nuggets awarded for a lost round with no-loss on; else 0")
    ] = None
    settled_at: Annotated[str | None, words("when the round settled (UTC ISO 8601)")] = None


class WonItemWire(Wire):
    """The inventory item a win granted (interface 2.3)."""

    inventory_item_id: Annotated[int, words("the item's id in the player's inventory")]
    item_id: Annotated[int, words("catalogue item id")]
    name: Annotated[str, words("the item's name in the requested locale")]
    cashback_minor: Annotated[
        int | None,
        words("what a cash-back would pay now at the round's rate; null when not cashable"),
    ]
    cashback_uncredited: UncreditedWire
    currency: CurrencyOut
    state: Annotated[str, words('"unresolved" when granted')]


class DealWire(Wire):
    """How the stake was counted (interface 2.5)."""

    stake_counted_minor: Annotated[
        int, words("the stake as counted, what a miss loses, in the round's currency")
    ]
    stake_uncredited: UncreditedWire
    nuggets_awarded_minor: Annotated[int, words("Nuggets awarded (no-loss), else 0")]


class FactsWire(Wire):
    """The round's figures, the same as in the round_settled webhook (interface 2.5)."""

    currency: CurrencyOut
    reels: Annotated[list[int], words("always empty for an Upgrader round")]
    deal: DealWire


class StakeItemWire(Wire, omit_defaults=True):
    """A staked item and what it counted for (interface 2.7)."""

    inventory_item_id: Annotated[int, words("the item's id in the player's inventory")]
    item_id: Annotated[int, words("catalogue item id")]
    name: Annotated[str, words("the item's name")]
    value_minor: Annotated[int, words("what it counts for in the stake, in `currency`")]
    currency: CurrencyOut
    state: Annotated[str | None, words('"consumed" on a play answer; absent on prizes')] = None


class StakeWire(Wire):
    """The items staked and their combined value (interface 2.7)."""

    currency: CurrencyOut
    total_minor: Annotated[int, words("the combined stake value; equals wagerMinor")]
    items: Annotated[list[StakeItemWire], words("the staked items")]


class PlayAnswer(Wire):
    """A played balance-mode round (interface 4.3)."""

    round: RoundWire
    won_item: Annotated[WonItemWire | None, words("the granted item; null on a loss")]
    balance_after_minor: Annotated[
        int | None,
        words(
            "the casino balance after the debit, as the wallet reported it (null if it did not say)"
        ),
    ]
    facts: FactsWire


class PlayItemsAnswer(Wire):
    """A played items-mode round (interface 4.5): the stake is consumed win or lose."""

    round: RoundWire
    won_item: Annotated[WonItemWire | None, words("the granted item; null on a loss")]
    stake: StakeWire
    balance_after_minor: Annotated[None, words("always null: no wallet call")]
    facts: FactsWire


AnyPlayAnswer = PlayAnswer | PlayItemsAnswer  # what a play or a copy of it answers, by mode


class RoundSettledData(Wire):
    """The settled round as the play answered it."""

    round: RoundWire
    won_item: Annotated[WonItemWire | None, words("the granted item; null on a loss")]
    stake: Annotated[StakeWire | None, words("the staked items (items mode); null in balance mode")]
    facts: FactsWire


class RoundSettledWebhook(Wire):
    """The ``round_settled`` webhook's body (sent to the operator's webhook_url; the
    platform renders it in ``projections.outbox``: this struct documents it)."""

    id: Annotated[
        str, words("the webhook's id, derived from the round: the same on every delivery")
    ]
    type: Annotated[str, words('always "round_settled"')]
    created_at: Annotated[str, words("when the round settled (UTC ISO 8601)")]
    operator_id: Annotated[str, words("the operator's id on the platform")]
    player_external_id: Annotated[str, words("the operator's own id of the player")]
    data: RoundSettledData

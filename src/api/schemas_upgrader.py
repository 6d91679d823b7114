"""Wire structs of the Upgrader, rounds and fairness routes (interface 2, 4.2-4.3).

Each struct's docstring and each field's description are the OpenAPI document's words
(see ``api.schemas``)."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta

from api.schemas import CurrencyOut, PlayerId, UpgraderConfigWire, Wire, words
from application.games.boxes.round_answers import BoxOfRound

ClientActionId = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=80,
        description="your idempotency key of this action (per player): a copy with the same "
        "body answers the original answer and does nothing again; the same key with another "
        "body is 409 IDEMPOTENCY_CONFLICT",
    ),
]
CurrencyCode = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=8,
        description="ISO 4217 code, one of the operator's configured currencies; default: "
        "the operator's base currency",
    ),
]
Locale = Annotated[
    str,
    Meta(max_length=35, description="the language of item names (BCP 47, e.g. en or de-AT)"),
]
ClientSeed = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=64,
        pattern=r"^[\x20-\x7e]+$",
        description="the player's client seed for the next seed pair (printable ASCII); "
        "default: a random one",
    ),
]
Minor = Annotated[int, Meta(ge=-(2**53), le=2**53)]


class PlayBody(Wire):
    """A balance-mode play: POST /api/play/upgrader/play (the session's player)."""

    client_action_id: ClientActionId
    wager_minor: Annotated[Minor, words("the wager, in minor units of `currency`")]
    chance_bps: Annotated[Minor, words("the win chance, one of config.chancePresetsBps")]
    target_item_id: Annotated[
        Minor, words("the prize aimed at: an itemId of the prizes answer for this wager and chance")
    ]
    currency: CurrencyCode | None = None
    locale: Locale | None = None


class S2SPlayBody(PlayBody, kw_only=True):
    """A balance-mode play for a player: POST /api/s2s/upgrader/play."""

    player_external_id: PlayerId


class RotateBody(Wire):
    """POST /api/play/fairness/rotate. ``clientActionId`` is optional (README, "Provable
    fairness"): with it, a copy answers the original rotation and rotates nothing."""

    client_seed: ClientSeed | None = None
    client_action_id: ClientActionId | None = None


class S2SRotateBody(RotateBody, kw_only=True):
    """POST /api/s2s/fairness/rotate. Without ``clientActionId`` the signed request
    itself is the action (its X-Signature): a replay of it rotates nothing."""

    player_external_id: PlayerId


class TargetBand(Wire):
    """The value window a target prize must fall in (interface 2.5a)."""

    lower_minor: Annotated[int, words("the lowest prize value, in minor units")]
    upper_minor: Annotated[int, words("the highest prize value, in minor units")]


class PrizeWire(Wire):
    """A catalogue item offered as a prize (interface 2.2)."""

    item_id: Annotated[int, words("catalogue item id (targetItemId of a play)")]
    name: Annotated[str, words("the item's name in the requested locale (or the best one)")]
    value_minor: Annotated[
        int, words("the item's value in `currency`, repriced from the base currency now")
    ]
    currency: CurrencyOut
    image_url: Annotated[str | None, words("the item's picture, or null")]


class PrizesAnswer(Wire):
    """The target band and the prizes in it for a stake and chance (interface 4.2)."""

    wager_minor: Annotated[int, words("the stake, in minor units of `currency`")]
    chance_bps: Annotated[int, words("the chance asked for, in basis points")]
    fee_bps: Annotated[int, words("the house edge applied, in basis points")]
    currency: CurrencyOut
    target_band: TargetBand
    prizes: Annotated[
        list[PrizeWire],
        words(
            "the in-band prizes, highest value first (ties by itemId), at most the "
            "operator's prize_list_limit; empty when no item is in the band"
        ),
    ]
    config: UpgraderConfigWire


class FairnessWire(Wire):
    """What the roll is verifiable against (README, "Provable fairness")."""

    server_seed_hash: Annotated[
        str, words("SHA-256 (hex) of the server seed, committed before the roll")
    ]
    client_seed: Annotated[str, words("the player's client seed")]
    nonce: Annotated[int, words("the seed pair's round counter for this roll")]
    algorithm_key: Annotated[str, words('the roll algorithm, "hmac_sha256_v1"')]


class RoundWire(Wire, omit_defaults=True):
    """A round of any game: an Upgrader round (interface 2.1) or a box round (decisions
    §10: ``game`` "boxes", ``box``, and no Upgrader fields). A voided round (the wallet
    refused the debit) carries only publicId and status."""

    public_id: Annotated[str, words("the round's id, r_ and 32 hex digits")]
    status: Annotated[str, words('"settled", or "voided" when the wallet refused the debit')]
    game: Annotated[str | None, words('the game: "boxes" for a box round')] = None
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
    box: Annotated[
        BoxOfRound | None, words("a box round's box version and how many boxes it opened")
    ] = None


class UncreditedWire(Wire):
    """The part of a value not paid in Credits, by cause (interface 2.4); all 0 unless a
    collectible's price moved or the operator pays a share below 100 %."""

    price_fall_minor: Annotated[int, words("lost to a price fall, in minor units")]
    price_rise_minor: Annotated[int, words("lost to a price rise, in minor units")]
    credits_share_minor: Annotated[
        int, words("not paid because the operator's Credits share is below 100 %")
    ]


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


class RoundsPage(Wire):
    """A page of the player's rounds, newest first."""

    rounds: Annotated[list[RoundWire], words("the rounds, newest first")]
    next_cursor: Annotated[
        str | None, words("pass as `cursor` for the next (older) page; null on the last page")
    ]


class ActiveSeed(Wire):
    """The seed pair in use: its server seed is revealed only after a rotation."""

    server_seed_hash: Annotated[str, words("SHA-256 (hex) of the hidden server seed")]
    client_seed: Annotated[str, words("the player's client seed")]
    nonce: Annotated[int, words("the nonce the next round will use")]


class RevealedSeed(Wire):
    """A retired seed pair with its server seed: every round it rolled can be re-checked."""

    server_seed: Annotated[str, words("the server seed (hex), now revealed")]
    server_seed_hash: Annotated[str, words("SHA-256 (hex) of serverSeed, as committed")]
    client_seed: Annotated[str, words("the client seed used with it")]
    first_nonce: Annotated[int, words("the first nonce rolled with this pair")]
    last_nonce: Annotated[int | None, words("the last nonce rolled; null when none was")]
    revealed_at: Annotated[str, words("when it was revealed (UTC ISO 8601)")]


class FairnessAnswer(Wire):
    """The player's active seed pair and the revealed ones (README, "Provable fairness")."""

    active: ActiveSeed
    revealed: Annotated[list[RevealedSeed], words("retired pairs, newest first")]


class PreviousSeed(Wire):
    """The seed pair a rotation retired, its server seed revealed."""

    server_seed: Annotated[str, words("the server seed (hex), now revealed")]
    server_seed_hash: Annotated[str, words("SHA-256 (hex) of serverSeed, as committed")]
    client_seed: Annotated[str, words("the client seed used with it")]
    last_nonce: Annotated[int | None, words("the last nonce rolled; null when none was")]


class RotateAnswer(Wire):
    """A rotation: the retired pair revealed, and the new active pair."""

    previous: PreviousSeed
    active: ActiveSeed


class StakeItemWire(Wire):
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

"""Wire structs of the Upgrader, rounds and fairness routes (interface 2, 4.2-4.3): the
request bodies and the answers the routes build. The answers the application renders are
its views, defined once: the round, the play answers and the webhook's body in
``application/games/upgrader/views.py``, the fairness answers in
``application/rounds/views.py``.

Each struct's docstring and each field's description are the OpenAPI document's words
(see ``api.schemas``)."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta

from api.schemas import CurrencyOut, PlayerId, UpgraderConfigWire, Wire, words
from application.games.boxes.round_answers import BoxOfRound, BoxReelWire, BoxWonItemWire
from application.games.upgrader.views import PrizeWire, RoundWire

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


class HistoryRoundWire(RoundWire, kw_only=True):
    """A round of any game, as round history shows it: an Upgrader round (interface 2.1),
    or a box round (decisions §10: ``game`` "boxes" and ``box``, without the Upgrader's
    mode, chance, roll, target and Nuggets, and with its ``reels`` and ``wonItems``); the
    play answer's ``round`` either way. A voided round (the wallet refused the debit)
    carries only publicId and status."""

    game: Annotated[
        str | None, words('the game, "upgrader" or "boxes"; absent on a voided round')
    ] = None
    box: Annotated[
        BoxOfRound | None, words("a box round's box version and how many boxes it opened")
    ] = None
    reels: Annotated[
        list[BoxReelWire] | None, words("a box round's draws, one per box, in order")
    ] = None
    won_items: Annotated[
        list[BoxWonItemWire] | None, words("a box round's won items, in reel order")
    ] = None


class RoundsPage(Wire):
    """A page of the player's rounds, newest first."""

    rounds: Annotated[list[HistoryRoundWire], words("the rounds, newest first")]
    next_cursor: Annotated[
        str | None, words("pass as `cursor` for the next (older) page; null on the last page")
    ]

"""Wire structs of the foundation routes: camelCase, frozen, unknown fields refused (the
``Wire`` base, ``words`` and ``CurrencyOut`` are ``application.wire``'s, shared with the
answer views the application renders).

Every struct's docstring and every field's ``Meta(description=...)`` is what the OpenAPI
document says about it (``api.openapi_doc``; ``tests/integration/test_openapi_guide.py``
refuses a field without words)."""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import Meta

from application.games.boxes.answers import BoxAnswer
from application.wire import CurrencyOut, Wire, words
from domain.upgrader_rules import SelectorConfig

PlayerId = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=128,
        pattern=r"^[\x21-\x7e]+$",
        description="the operator's own id of the player (printable ASCII, no spaces)",
    ),
]


class Health(Wire):
    """The platform answers and its store is reachable."""

    status: Annotated[str, words('always "ok" (any failure is an error answer instead)')]
    time: Annotated[str, words("the platform's clock now, UTC ISO 8601")]


class LaunchRequest(Wire):
    """A launch of a game for one of your players (interface 4.1, decisions §10)."""

    player_external_id: PlayerId
    game_key: Annotated[
        str, Meta(min_length=1, max_length=64, description='the game: "upgrader" or "boxes"')
    ]
    target: Annotated[
        dict[str, Any],
        words(
            "what to open in the game: an empty object for the Upgrader (a boxId is refused), "
            '{"boxId": <integer>} for the box game'
        ),
    ]


class LaunchAnswer(Wire):
    """A one-time launch token and the URL of the game page carrying it."""

    launch_token: Annotated[
        str, words("signed, single-use token; the game page redeems it at session/init")
    ]
    expires_at: Annotated[str, words("when the token stops being accepted (UTC ISO 8601)")]
    launch_url: Annotated[
        str, words("the game page with the token, to open in the player's browser or iframe")
    ]


class SessionInitRequest(Wire):
    """Redeems a launch token (once) for a player session."""

    launch_token: Annotated[
        str, Meta(min_length=1, max_length=4096, description="launchToken from /api/s2s/launches")
    ]


class Modes(Wire):
    """Which Upgrader modes the operator offers."""

    balance: Annotated[bool, words("wagers from the casino balance (upgrader/play)")]
    items: Annotated[bool, words("won items as the stake (upgrader/play-with-items)")]


class UpgraderConfigWire(Wire):
    """The Upgrader's selector settings for this operator (interface 2.6)."""

    house_edge_bps: Annotated[int, words("the fee taken from the wager, in basis points")]
    chance_presets_bps: Annotated[
        list[int], words("the chances a player may pick, in basis points, ascending")
    ]
    default_chance_bps: Annotated[
        int,
        words(
            "pre-selected chance, one of chancePresetsBps; 0 when available is "
            "false (no chance can be offered, chancePresetsBps is empty)"
        ),
    ]
    max_chance_bps: Annotated[int, words("no chance above this is accepted, in basis points")]
    available: Annotated[
        bool, words("false when no chance can be offered (the game cannot be played)")
    ]
    min_wager_minor: Annotated[int, words("the smallest wager, in minor units of currency")]
    max_wager_minor: Annotated[int, words("the largest wager, in minor units of currency")]
    currency: Annotated[str, words("ISO 4217 code of minWagerMinor and maxWagerMinor")]
    modes: Modes

    @classmethod
    def of(cls, config: SelectorConfig) -> UpgraderConfigWire:
        return cls(
            house_edge_bps=config.house_edge_bps,
            chance_presets_bps=list(config.chance_presets_bps),
            default_chance_bps=config.default_chance_bps,
            max_chance_bps=config.max_chance_bps,
            available=config.available,
            min_wager_minor=config.min_wager_minor,
            max_wager_minor=config.max_wager_minor,
            currency=config.currency,
            modes=Modes(balance=config.balance_mode, items=config.items_mode),
        )


class GameInfo(Wire, omit_defaults=True):
    """The game the session opens: the Upgrader with its configuration, or the box game
    on the launched box."""

    key: Annotated[str, words('the game: "upgrader" or "boxes"')]
    config: Annotated[
        UpgraderConfigWire | None, words("the Upgrader's configuration (Upgrader sessions only)")
    ] = None
    box: Annotated[
        BoxAnswer | None,
        words(
            "box sessions only: the launched box's offered version, in the operator's base "
            "currency (as GET /api/play/boxes/{boxId}/versions/{boxVersionId} answers it)"
        ),
    ] = None
    max_boxes_per_round: Annotated[
        int | None, words("box sessions only: the most boxes one round may open (count)")
    ] = None


class PlayerInfo(Wire):
    """Whose session this is."""

    operator_id: Annotated[str, words("the operator's id on the platform")]
    player_external_id: Annotated[str, words("the operator's own id of the player")]


class BalanceAnswer(Wire):
    """The player's casino balance as the operator's wallet reports it (``wallet.balance``)."""

    balance_minor: Annotated[int, words("the balance in minor units of currency")]
    currency: CurrencyOut


class SessionInitAnswer(Wire):
    """A player session: the bearer token of the player API and what the game shows first."""

    session_token: Annotated[str, words("bearer token for /api/play/* (Authorization: Bearer ...)")]
    idle_expiry_seconds: Annotated[
        int, words("the session ends after this many seconds without a request")
    ]
    player: PlayerInfo
    game: GameInfo
    balance: Annotated[
        BalanceAnswer | None,
        words(
            "the balance in the operator's base currency, when the wallet "
            "answers wallet.balance within 1 s; null otherwise (the session starts anyway)"
        ),
    ]


class LogoutAnswer(Wire):
    """The session is ended; its token is refused from now on."""

    status: Annotated[str, words('always "logged_out"')]

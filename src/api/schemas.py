"""Wire structs of the foundation routes: camelCase, frozen, unknown fields refused."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta

from domain.upgrader_rules import SelectorConfig

PlayerId = Annotated[str, Meta(min_length=1, max_length=128, pattern=r"^[\x21-\x7e]+$")]


class Wire(msgspec.Struct, rename="camel", frozen=True, forbid_unknown_fields=True, kw_only=True):
    pass


class Health(Wire):
    status: str
    time: str


class LaunchRequest(Wire):
    player_external_id: PlayerId
    game_key: Annotated[str, Meta(min_length=1, max_length=64)]
    target: dict[str, Any]


class LaunchAnswer(Wire):
    launch_token: str
    expires_at: str
    launch_url: str


class SessionInitRequest(Wire):
    launch_token: Annotated[str, Meta(min_length=1, max_length=4096)]


class Modes(Wire):
    balance: bool
    items: bool


class UpgraderConfigWire(Wire):
    """Interface 2.6."""

    house_edge_bps: int
    chance_presets_bps: list[int]
    default_chance_bps: Annotated[
        int,
        Meta(
            description="pre-selected chance, one of chancePresetsBps; 0 when available is "
            "false (no chance can be offered, chancePresetsBps is empty)"
        ),
    ]
    max_chance_bps: int
    available: bool
    min_wager_minor: int
    max_wager_minor: int
    currency: str
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


class GameInfo(Wire):
    key: str
    config: UpgraderConfigWire


class PlayerInfo(Wire):
    operator_id: str
    player_external_id: str


class BalanceAnswer(Wire):
    """The player's casino balance as the operator's wallet reports it (``wallet.balance``)."""

    balance_minor: int
    currency: str


class SessionInitAnswer(Wire):
    session_token: str
    idle_expiry_seconds: int
    player: PlayerInfo
    game: GameInfo
    balance: Annotated[
        BalanceAnswer | None,
        Meta(
            description="the balance in the operator's base currency, when the wallet "
            "answers wallet.balance within 1 s; null otherwise (the session starts anyway)"
        ),
    ]


class LogoutAnswer(Wire):
    status: str

"""The configuration file contract (shared/spec/config.md): its shape.

TOML is decoded (``load.py``) into these frozen msgspec structs, which forbid
unknown fields; anything wrong raises ``ConfigError`` with one line naming the key.
Secrets are masked in every repr.
"""

from __future__ import annotations

from typing import Literal

import msgspec
from msgspec import Struct


class ConfigError(Exception):
    """A configuration problem, as one line that names the key."""


class _Strict(Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    pass


class ServiceConfig(_Strict):
    base_url: str = "http://127.0.0.1:8000"
    host: str = "127.0.0.1"
    port: int = 8000
    database_url: str = "sqlite:///var/upgrader.db"
    session_idle_seconds: int = 1800
    launch_token_ttl_seconds: int = 120
    uncertain_debit_grace_seconds: int = 60
    wallet_timeout_seconds: float = 10
    max_body_bytes: int = 65536
    # abuse limits counted in each API process's memory, or in the store (shared)
    rate_limits: Literal["process", "store"] = "process"
    # admission control (api/admission.py): plays one API process works on at once
    # (0: its store threads), and the store-call queue wait past which it refuses
    # new plays (milliseconds; 0: never)
    max_plays_in_flight: int = 0
    overload_store_wait_ms: int = 250


class KeyConfig(_Strict):
    key_id: str
    secret: str
    catalog_access: bool = False
    revoked: bool = False

    def __repr__(self) -> str:
        return f"KeyConfig(key_id={self.key_id!r}, secret='***', revoked={self.revoked})"


class CurrencyConfig(_Strict):
    code: str
    rate: str
    exponent: int


class UpgraderConfig(_Strict):
    house_edge_bps: int = 500
    chance_presets_bps: list[int] = msgspec.field(
        default_factory=lambda: [1000, 2500, 5000, 7500, 9000]
    )
    default_chance_bps: int = 5000
    max_chance_bps: int = 9500
    min_wager_minor: int = 10
    max_wager_minor: int = 10_000_000
    balance_mode: bool = True
    items_mode: bool = True
    prize_list_limit: int = 24
    no_loss: bool = False
    nuggets_cost_percent: int = 0


class LimitsConfig(_Strict):
    """Abuse limits per operator (429 RATE_LIMITED with Retry-After); 0 switches one off."""

    requests_per_second_per_key: int = 500
    requests_per_second_per_session: int = 30
    plays_per_second_per_player: int = 10


class BoxesConfig(_Strict):
    """The box game's operator settings (used when "boxes" is in enabled_games)."""

    max_boxes_per_round: int = 10


class OperatorConfig(_Strict):
    id: str
    base_currency: str
    outbound_secret: str
    wallet_url: str | None = None
    webhook_url: str | None = None
    enabled_games: list[str] = msgspec.field(default_factory=list)
    credits_share_bps: int = 10000
    keys: list[KeyConfig] = msgspec.field(default_factory=list)
    currencies: list[CurrencyConfig] = msgspec.field(default_factory=list)
    upgrader: UpgraderConfig = msgspec.field(default_factory=UpgraderConfig)
    boxes: BoxesConfig = msgspec.field(default_factory=BoxesConfig)
    limits: LimitsConfig = msgspec.field(default_factory=LimitsConfig)
    allowed_frame_origins: list[str] = msgspec.field(default_factory=lambda: ["*"])

    def __repr__(self) -> str:
        return f"OperatorConfig(id={self.id!r}, outbound_secret='***', keys={self.keys!r})"


class BoxEntryConfig(_Strict):
    item_id: int
    weight: int


class CatalogItemConfig(_Strict):
    item_id: int
    name: dict[str, str]
    value_minor: int
    image_url: str | None = None
    active: bool = True
    fulfillable: bool = True
    cashback_bps: int | None = None
    collectible: bool = False


class BoxConfig(_Strict):
    box_id: int
    box_version_id: int
    name: dict[str, str]
    price_minor: int
    image_url: str | None = None
    active: bool = True
    items: list[BoxEntryConfig] = msgspec.field(default_factory=list)


class CatalogConfig(_Strict):
    items: list[CatalogItemConfig] = msgspec.field(default_factory=list)
    boxes: list[BoxConfig] = msgspec.field(default_factory=list)


class Config(_Strict):
    service: ServiceConfig = msgspec.field(default_factory=ServiceConfig)
    operators: list[OperatorConfig] = msgspec.field(default_factory=list)
    catalog: CatalogConfig = msgspec.field(default_factory=CatalogConfig)

    def operator(self, operator_id: str) -> OperatorConfig | None:
        return next((o for o in self.operators if o.id == operator_id), None)

"""The Upgrader round's typed records: what its opening pinned and what its settle drew.

The stored events carry these as plain dicts (``Round.Opened.opening``,
``Round.RoundSettled.settlement``): field names and their order are a stored format
(``domain/records.py`` says how a record reads and writes its dict).
"""

from __future__ import annotations

from typing import Any

from msgspec import UNSET, UnsetType

from domain.fairness import ALGORITHM_KEY
from domain.records import Record
from domain.round import RoundTerms


class PinnedBand(Record, frozen=True, kw_only=True):
    lower_minor: int
    upper_minor: int


class Target(Record, frozen=True, kw_only=True):
    """The aimed-at item as offered: its name in the play's locale, value in its currency."""

    item_id: int
    name: str
    value_minor: int
    currency: str
    image_url: str | None


class UpgraderOpening(RoundTerms, frozen=True, kw_only=True):
    """What a round was asked, quoted and pinned (the ``Round.Opened`` payload): the
    terms every round has (mode "balance" or "items"), then the Upgrader's own."""

    currency_exponent: int
    base_currency: str
    base_exponent: int
    fx_rate: str
    chance_bps: int
    fee_bps: int
    no_loss: bool
    nuggets_cost_percent: int
    band: PinnedBand
    target: Target
    target_value_base_minor: int
    target_cashback_bps: int | None
    target_collectible: bool
    credits_share_bps: int
    config_version: int | UnsetType | None = UNSET
    catalog_version: int | UnsetType | None = UNSET
    # items mode only: the stake as answered, its counted value and what was not credited
    stake: dict[str, Any] | UnsetType = UNSET
    stake_counted_minor: int | UnsetType = UNSET
    stake_uncredited: dict[str, int] | UnsetType | None = UNSET
    opened_at: float

    @property
    def counted_stake_minor(self) -> int:
        """What the stake counted for: the staked items' value, or the balance bet."""
        counted = self.stake_counted_minor
        return self.wager_minor if isinstance(counted, UnsetType) else counted

    @property
    def uncredited_stake(self) -> dict[str, int] | None:
        parts = self.stake_uncredited
        return None if isinstance(parts, UnsetType) else parts


class WonItem(Record, frozen=True, kw_only=True):
    inventory_item_id: int
    item_id: int
    name: str
    cashback_minor: int | None
    cashback_uncredited: dict[str, int] | None
    currency: str


class UpgraderSettlement(Record, frozen=True, kw_only=True):
    """The roll and what it granted (the ``Round.RoundSettled`` payload)."""

    server_seed_hash: str
    client_seed: str
    nonce: int
    algorithm_key: str | UnsetType = UNSET
    rolled_bps: int
    is_win: bool
    payout_minor: int
    nuggets_minor: int
    stake_counted_minor: int
    stake_uncredited: dict[str, int] | UnsetType | None = UNSET
    won_item: WonItem | None
    balance_after_minor: int | None
    settled_at: float

    @property
    def uncredited_stake(self) -> dict[str, int] | None:
        parts = self.stake_uncredited
        return None if isinstance(parts, UnsetType) else parts

    @property
    def algorithm(self) -> str:
        key = self.algorithm_key
        return ALGORITHM_KEY if isinstance(key, UnsetType) else key

"""Wire structs of the Upgrader, rounds and fairness routes (interface 2, 4.2-4.3)."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta

from api.schemas import PlayerId, UpgraderConfigWire, Wire

ClientActionId = Annotated[str, Meta(min_length=1, max_length=80)]
CurrencyCode = Annotated[str, Meta(min_length=1, max_length=8)]
Locale = Annotated[str, Meta(max_length=35)]
ClientSeed = Annotated[str, Meta(min_length=1, max_length=64, pattern=r"^[\x20-\x7e]+$")]
Minor = Annotated[int, Meta(ge=-(2**53), le=2**53)]


class PlayBody(Wire):
    """POST /api/play/upgrader/play."""

    client_action_id: ClientActionId
    wager_minor: Minor
    chance_bps: Minor
    target_item_id: Minor
    currency: CurrencyCode | None = None
    locale: Locale | None = None


class S2SPlayBody(PlayBody, kw_only=True):
    """POST /api/s2s/upgrader/play."""

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
    lower_minor: int
    upper_minor: int


class PrizeWire(Wire):
    item_id: int
    name: str
    value_minor: int
    currency: str
    image_url: str | None


class PrizesAnswer(Wire):
    wager_minor: int
    chance_bps: int
    fee_bps: int
    currency: str
    target_band: TargetBand
    prizes: list[PrizeWire]
    config: UpgraderConfigWire


class FairnessWire(Wire):
    server_seed_hash: str
    client_seed: str
    nonce: int
    algorithm_key: str


class RoundWire(Wire):
    """A settled round; a voided one carries only publicId and status."""

    public_id: str
    status: str
    mode: str | None = None
    bet_minor: int | None = None
    payout_minor: int | None = None
    currency: str | None = None
    chance_bps: int | None = None
    fee_bps: int | None = None
    rolled_bps: int | None = None
    is_win: bool | None = None
    target: PrizeWire | None = None
    fairness: FairnessWire | None = None
    nuggets_awarded_minor: int | None = None
    settled_at: str | None = None


class UncreditedWire(Wire):
    price_fall_minor: int
    price_rise_minor: int
    credits_share_minor: int


class WonItemWire(Wire):
    inventory_item_id: int
    item_id: int
    name: str
    cashback_minor: int | None
    cashback_uncredited: UncreditedWire
    currency: str
    state: str


class DealWire(Wire):
    stake_counted_minor: int
    stake_uncredited: UncreditedWire
    nuggets_awarded_minor: int


class FactsWire(Wire):
    currency: str
    reels: list[int]
    deal: DealWire


class PlayAnswer(Wire):
    round: RoundWire
    won_item: WonItemWire | None
    balance_after_minor: int | None
    facts: FactsWire


class RoundsPage(Wire):
    rounds: list[RoundWire]
    next_cursor: str | None


class ActiveSeed(Wire):
    server_seed_hash: str
    client_seed: str
    nonce: int


class RevealedSeed(Wire):
    server_seed: str
    server_seed_hash: str
    client_seed: str
    first_nonce: int
    last_nonce: int | None
    revealed_at: str


class FairnessAnswer(Wire):
    active: ActiveSeed
    revealed: list[RevealedSeed]


class PreviousSeed(Wire):
    server_seed: str
    server_seed_hash: str
    client_seed: str
    last_nonce: int | None


class RotateAnswer(Wire):
    previous: PreviousSeed
    active: ActiveSeed


ItemIds = Annotated[list[Annotated[int, Meta(ge=1, le=2**53)]], Meta(min_length=1, max_length=20)]
Address = Annotated[
    dict[Annotated[str, Meta(min_length=1, max_length=40)], Annotated[str, Meta(max_length=200)]],
    Meta(min_length=1, max_length=20),
]


class PlayItemsBody(Wire):
    """POST /api/play/upgrader/play-with-items."""

    client_action_id: ClientActionId
    stake_item_ids: ItemIds
    chance_bps: Minor
    target_item_id: Minor
    currency: CurrencyCode | None = None
    locale: Locale | None = None


class S2SPlayItemsBody(PlayItemsBody, kw_only=True):
    player_external_id: PlayerId


class CashoutBody(Wire):
    client_action_id: ClientActionId
    inventory_item_ids: ItemIds
    currency: CurrencyCode | None = None


class S2SCashoutBody(CashoutBody, kw_only=True):
    player_external_id: PlayerId


class S2SShippingBody(Wire):
    player_external_id: PlayerId
    client_action_id: ClientActionId
    inventory_item_ids: ItemIds
    address: Address


class InventoryItemWire(Wire):
    inventory_item_id: int
    item_id: int
    name: str
    value_minor: int
    currency: str
    cashback_minor: int | None
    cashback_uncredited: UncreditedWire
    state: str
    round_public_id: str
    granted_at: str
    held: bool | None = None


class InventoryAnswer(Wire):
    items: list[InventoryItemWire]


class CashoutAnswer(Wire):
    credited_minor: int
    currency: str
    balance_after_minor: int | None
    items: list[InventoryItemWire]


class ShippingAnswer(Wire):
    shipment_id: str
    items: list[InventoryItemWire]


class StakeItemWire(Wire):
    inventory_item_id: int
    item_id: int
    name: str
    value_minor: int
    currency: str
    state: str | None = None


class StakeWire(Wire):
    currency: str
    total_minor: int
    items: list[StakeItemWire]


class PrizesByItemsAnswer(PrizesAnswer, kw_only=True):
    stake: StakeWire


class PlayItemsAnswer(Wire):
    round: RoundWire
    won_item: WonItemWire | None
    stake: StakeWire
    balance_after_minor: None
    facts: FactsWire

"""PlayUpgrader, items mode (interface 4.4-4.6): the stake is owned items, no wallet call.

The round is opened, the stake consumed, the roll made and the prize granted in ONE
commit. Two actions staking the same item race on that item's version: exactly one
commit succeeds, the other is refused ``UPGRADER_ITEM_NOT_OWNED``. A retry of the same
action returns the original answer and never consumes twice (the round id is derived
from the action, so a second commit of it conflicts). A store call abandoned at its
deadline after it began answers ``OUTCOME_UNKNOWN``: its commit may still land.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError
from msgspec import to_builtins
from msgspec.structs import replace

from application.errors import PlatformError, outcome_unknown
from application.games.upgrader.answers import recorded_answer
from application.games.upgrader.opening import round_opening
from application.games.upgrader.quote import (
    Quote,
    check_chance,
    check_target,
    operator_for_mode,
    quote,
    upgrader_settings,
)
from application.games.upgrader.settlement import settle_round
from application.games.upgrader.views import (
    AnyPlayAnswer,
    StakeItemWire,
    StakeWire,
)
from application.inventory.items import check_item_ids, count, load_open_items, sum_uncredited
from application.platform import Platform
from application.rounds.actions import ActionLocks, fingerprint, idempotency_conflict
from application.rounds.fairness import FairnessService
from application.store.calls import StoreOutcomeUnknown, in_store_write
from domain.ids import round_id
from domain.inventory import InventoryItem, ItemStateError
from domain.round import Round
from domain.upgrader_rules import derive_selector_config


@dataclass(frozen=True)
class PlayItems:
    operator_id: str
    player_external_id: str
    client_action_id: str
    stake_item_ids: list[int]
    chance_bps: int
    target_item_id: int
    currency: str | None = None
    locale: str | None = None


def item_not_owned(number: int) -> PlatformError:
    return PlatformError(
        "UPGRADER_ITEM_NOT_OWNED",
        f"inventory item {number} is not this player's or is no longer available",
    )


class _AlreadyRecorded(Exception):
    """The action's round was committed by a concurrent duplicate."""


def stake_quote(
    platform: Platform,
    operator_id: str,
    player: str,
    stake_ids: list[int],
    chance_bps: int,
    currency_code: str | None,
    *,
    for_play: bool,
) -> tuple[Quote, StakeWire, dict[str, Any], list]:
    """Checks in the order of decisions §7 and the counted stake (shared with prizes).

    The ids' shape (none, more than 20, one twice) is malformed input: it is answered
    before the game, mode and currency checks."""
    check_item_ids(stake_ids, "stakeItemIds")
    operator = operator_for_mode(platform.directory, operator_id, "items")
    currency = operator.currency(currency_code)
    config = derive_selector_config(upgrader_settings(operator), operator.base, currency)
    check_chance(config, chance_bps, for_play=for_play)
    items = load_open_items(platform, operator_id, player, stake_ids, item_not_owned)
    counted = [count(operator, platform.directory.catalog, item, currency) for item in items]
    total = sum(c.value_minor for c in counted)
    quoted = quote(operator, currency.code, total, chance_bps, for_play=for_play)
    stake = StakeWire(
        currency=currency.code,
        total_minor=total,
        items=[
            StakeItemWire(
                inventory_item_id=c.item.grant["inventory_item_id"],
                item_id=c.item.grant["item_id"],
                name=c.item.grant["name"],
                value_minor=c.value_minor,
                currency=currency.code,
            )
            for c in counted
        ],
    )
    return quoted, stake, sum_uncredited(counted), items


class ItemsPlays:
    def __init__(self, platform: Platform, fairness: FairnessService) -> None:
        self.platform = platform
        self.fairness = fairness
        self.locks = ActionLocks()

    async def play(self, command: PlayItems) -> AnyPlayAnswer:
        # malformed input first (decisions §7): before idempotency, game and mode
        check_item_ids(command.stake_item_ids, "stakeItemIds")
        rid = round_id(command.operator_id, command.player_external_id, command.client_action_id)
        operator = self.platform.directory.operators[command.operator_id]
        body_print = fingerprint(
            "items",
            sorted(command.stake_item_ids),
            command.chance_bps,
            command.target_item_id,
            command.currency or operator.base.code,
        )
        async with self.locks.hold(rid):
            try:
                return await in_store_write(self._play, command, rid, body_print)
            except StoreOutcomeUnknown:  # its one commit may still land
                raise outcome_unknown("the play may have been recorded") from None

    def _existing(self, rid: UUID, body_print: str) -> AnyPlayAnswer | None:
        try:
            round_: Round = self.platform.events.repository.get(rid)
        except AggregateNotFoundError:
            return None
        if round_.opening["fingerprint"] != body_print:
            raise idempotency_conflict()
        return recorded_answer(round_)

    def _play(self, command: PlayItems, rid: UUID, body_print: str) -> AnyPlayAnswer:
        # A new action is the common case: check and play it straight away. A recorded
        # one fails a check (its stake is consumed) or conflicts at the commit, and then
        # answers from its record.
        try:
            quoted, stake, uncredited, items = stake_quote(
                self.platform,
                command.operator_id,
                command.player_external_id,
                command.stake_item_ids,
                command.chance_bps,
                command.currency,
                for_play=True,
            )
            item, prize = check_target(
                quoted, self.platform.directory.catalog, command.target_item_id, command.locale
            )
        except PlatformError:
            existing = self._existing(rid, body_print)
            if existing is not None:
                return existing
            raise
        opening = round_opening(
            self.platform,
            quoted,
            item,
            prize,
            rid=rid,
            player=command.player_external_id,
            client_action_id=command.client_action_id,
            mode="items",
            fingerprint=body_print,
            stake=to_builtins(
                replace(stake, items=[replace(i, state="consumed") for i in stake.items])
            ),
            stake_counted_minor=quoted.wager_minor,
            stake_uncredited=uncredited,
        )
        public_id = opening.public_id
        recorded = opening.record()
        ids = [i.grant["inventory_item_id"] for i in items]

        tries = {"round": 0, "stake": 0}

        def load_round() -> Round:
            # the first try commits a new round; a conflict means it is recorded now
            tries["round"] += 1
            if tries["round"] > 1 and self._existing(rid, body_print) is not None:
                raise _AlreadyRecorded
            return Round(recorded)

        def consume(_: Round) -> list[InventoryItem]:
            # the first try consumes the stake as just loaded; a conflict reloads it
            tries["stake"] += 1
            fresh = items
            if tries["stake"] > 1:
                fresh = load_open_items(
                    self.platform,
                    command.operator_id,
                    command.player_external_id,
                    ids,
                    item_not_owned,
                )
            for stake_item in fresh:
                try:
                    stake_item.consume(public_id, self.platform.clock.now())
                except ItemStateError:
                    raise item_not_owned(stake_item.grant["inventory_item_id"]) from None
            return fresh

        try:
            return settle_round(self.platform, self.fairness, load_round, None, None, consume)
        except _AlreadyRecorded:
            return self._existing(rid, body_print) or {}

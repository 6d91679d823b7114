"""The past rounds of ``ops/bench/history.py``: settled balance rounds of one operator,
made by the platform's own functions, as the events a play records.

Each round: ``Round`` ``Opened`` and ``DebitAttempted`` (the intent), ``WagerDebited``,
``RoundSettled``, the player's ``PlayerFairness`` (``SeedPairStarted`` on its first round,
``NonceUsed``) and, for a win, ``InventoryItem`` ``ItemGranted``, in that order (the
order ``settle_round`` saves them in). The opening is ``round_opening`` of a real quote
and target, the roll ``roll`` of the player's seed pair, the settlement
``settlement_record``, the grant ``_grant``'s; only the aggregates' bookkeeping is left
out, which is what made a round cost milliseconds.
"""

from __future__ import annotations

import itertools
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

WAGER = 1000
CHANCE = 5000
START_BALANCE = 10**13


@dataclass
class _Pair:
    """One player's seed pair, as ``PlayerFairness`` holds it."""

    server_seed: str
    server_seed_hash: str
    client_seed: str
    aggregate_id: UUID
    version: int = 0  # the aggregate's last version written
    nonce: int = 0
    balance: int = START_BALANCE


@dataclass
class PastRound:
    """One generated round: its events (topic, originator, version, state) in commit
    order, and what its read-model rows are made of."""

    rid: UUID
    opening: dict[str, Any]
    debit: dict[str, Any]
    settlement: dict[str, Any]
    grant: dict[str, Any] | None
    events: list[tuple[str, UUID, int, dict[str, Any]]]
    started_pair: bool


class PastRounds:
    """Generates settled balance rounds of one operator with the platform's functions."""

    def __init__(self, platform: Any, operator_id: str) -> None:
        from eventsourcing.utils import get_topic

        from application.games.upgrader.play_balance import fingerprint
        from application.games.upgrader.quote import check_target, operator_for_mode, quote
        from domain.inventory import InventoryItem
        from domain.player_fairness import PlayerFairness
        from domain.round import Round

        self.platform = platform
        self.operator_id = operator_id
        operator = operator_for_mode(platform.directory, operator_id, "balance")
        self.quoted = quote(operator, None, WAGER, CHANCE, for_play=True)
        self.targets = []
        for prize in self.quoted.prizes(platform.directory, None):
            item, checked = check_target(
                self.quoted, platform.directory.catalog, prize.item_id, None
            )
            print_ = fingerprint("balance", WAGER, CHANCE, prize.item_id, self.quoted.currency.code)
            self.targets.append(self._templates(item, checked, print_))
        if not self.targets:
            raise RuntimeError("no in-band prize for W=1000 at 50 %: check the catalogue")
        self.topics = {
            name: get_topic(cls)
            for name, cls in (
                ("opened", Round.Opened),
                ("attempted", Round.DebitAttempted),
                ("debited", Round.WagerDebited),
                ("settled", Round.RoundSettled),
                ("pair", PlayerFairness.SeedPairStarted),
                ("nonce", PlayerFairness.NonceUsed),
                ("granted", InventoryItem.ItemGranted),
            )
        }
        self.round_topic = get_topic(Round)
        self.pair_topic = get_topic(PlayerFairness)
        self.item_topic = get_topic(InventoryItem)
        self.pairs: dict[str, _Pair] = {}
        self.sequence = itertools.count(1)
        self.tag = secrets.token_hex(3)

    def _templates(self, item: Any, prize: Any, print_: str) -> tuple[dict, dict, dict]:
        """The opening, grant and won-item dicts of a round aimed at ``prize``, made by the
        platform's functions once; a round then changes only its own fields."""
        from application.games.upgrader.opening import round_opening
        from application.games.upgrader.settlement import _grant

        dummy = UUID(int=1)
        opening = round_opening(
            self.platform,
            self.quoted,
            item,
            prize,
            rid=dummy,
            player="-",
            client_action_id="-",
            mode="balance",
            fingerprint=print_,
        )
        granted, won = _grant(opening, dummy, 0.0)
        return opening.record(), dict(granted.grant), won.record()

    def next_round(self, player: str) -> PastRound:
        from application.games.upgrader.settlement import settlement_record
        from domain.fairness import is_win, roll, seed_hash
        from domain.ids import (
            fairness_id,
            inventory_item_id,
            inventory_item_number,
            round_id,
            round_public_id,
        )
        from domain.upgrader_round import UpgraderOpening, WonItem

        now = self.platform.clock.now()
        stamp = datetime.fromtimestamp(now, UTC)
        number = next(self.sequence)
        action = f"history-{self.tag}-{number}"
        opening_t, grant_t, won_t = self.targets[number % len(self.targets)]
        rid = round_id(self.operator_id, player, action)
        public_id = round_public_id(rid)
        opening = {
            **opening_t,
            "player_external_id": player,
            "client_action_id": action,
            "public_id": public_id,
            "opened_at": now,
        }
        topics = self.topics
        key = f"{public_id}:1"
        events: list[tuple[str, UUID, int, dict[str, Any]]] = [
            (
                topics["opened"],
                rid,
                1,
                {"timestamp": stamp, "originator_topic": self.round_topic, "opening": opening},
            ),
            (
                topics["attempted"],
                rid,
                2,
                {
                    "timestamp": stamp,
                    "attempt": 1,
                    "idempotency_key": key,
                    "amount_minor": WAGER,
                    "currency": opening["currency"],
                    "at": now,
                },
            ),
        ]
        pair = self.pairs.get(player)
        started = pair is None
        if pair is None:
            server_seed = secrets.token_hex(32)
            pair = self.pairs[player] = _Pair(
                server_seed,
                seed_hash(server_seed),
                secrets.token_hex(8),
                fairness_id(self.operator_id, player),
            )
        nonce = pair.nonce
        rolled = roll(pair.server_seed, pair.client_seed, nonce)
        pair.balance -= WAGER
        won_item = grant = None
        if is_win(rolled, opening["chance_bps"]):
            number_ = inventory_item_number(rid)
            won_item = {**won_t, "inventory_item_id": number_}
            grant = {
                **grant_t,
                "inventory_item_id": number_,
                "player_external_id": player,
                "round_public_id": public_id,
                "granted_at": now,
            }
        settlement = settlement_record(
            UpgraderOpening.of(opening),
            pair,
            nonce,
            rolled,
            None if won_item is None else WonItem.of(won_item),
            pair.balance,
            now,
        ).record()
        debit = {
            "attempt": 1,
            "idempotency_key": key,
            "balance_after_minor": pair.balance,
            "provider_txn_ref": f"hist-{self.tag}-{number}",
            "at": now,
        }
        events.append((topics["debited"], rid, 3, {"timestamp": stamp, **debit}))
        events.append((topics["settled"], rid, 4, {"timestamp": stamp, "settlement": settlement}))
        pair_id = pair.aggregate_id
        if started:
            pair.version = 1
            events.append(
                (
                    topics["pair"],
                    pair_id,
                    1,
                    {
                        "timestamp": stamp,
                        "originator_topic": self.pair_topic,
                        "operator_id": self.operator_id,
                        "player_external_id": player,
                        "server_seed_hash": pair.server_seed_hash,
                        "client_seed": pair.client_seed,
                        "at": now,
                    },
                )
            )
        pair.version += 1
        pair.nonce += 1
        events.append(
            (
                topics["nonce"],
                pair_id,
                pair.version,
                {"timestamp": stamp, "round_public_id": public_id, "nonce": nonce},
            )
        )
        if grant is not None:
            events.append(
                (
                    topics["granted"],
                    inventory_item_id(grant["inventory_item_id"]),
                    1,
                    {"timestamp": stamp, "originator_topic": self.item_topic, "grant": grant},
                )
            )
        return PastRound(rid, opening, debit, settlement, grant, events, started)

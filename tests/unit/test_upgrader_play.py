"""The Upgrader's balance play (its handler on the wager saga) without I/O: the store in
memory (POPO), a fake wallet port and a fake seed vault; the configuration is the
integration tests' (parsed, nothing opened)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import msgspec
import pytest
from eventsourcing.application import AggregateNotFoundError

from api.errors import status_of
from application.clock import ManualClock
from application.config.directory import Directory
from application.errors import PlatformError
from application.games.upgrader.play_balance import BalancePlays, PlayBalance
from application.platform import EventStore
from application.wallet.client import Accepted
from domain.fairness import roll, seed_hash
from domain.ids import fairness_id, inventory_item_id, inventory_item_number, round_id
from domain.player_fairness import PlayerFairness
from tests.support.config import make_config
from tests.unit.test_wager_saga import FakeWallet

CLIENT_SEED = "client-seed-1"


class FakeFairness:
    """The fairness port: seed pairs in the in-memory store, server seeds in a dict."""

    def __init__(self, platform: Any, server_seed: str) -> None:
        self.platform = platform
        self.seeds = {seed_hash(server_seed): server_seed}
        self.next_hash = seed_hash(server_seed)

    def load_or_begin(self, operator_id: str, player: str) -> PlayerFairness:
        try:
            return self.platform.events.repository.get(fairness_id(operator_id, player))
        except AggregateNotFoundError:
            return PlayerFairness(
                operator_id=operator_id,
                player_external_id=player,
                server_seed_hash=self.next_hash,
                client_seed=CLIENT_SEED,
                at=self.platform.clock.now(),
            )

    def server_seed(self, server_seed_hash: str) -> str:
        return self.seeds[server_seed_hash]


def _seed(winning: bool) -> str:
    """The first test seed whose first roll at chance 5000 wins (or loses)."""
    return next(
        seed
        for seed in (f"{i:064x}" for i in range(100))
        if (roll(seed, CLIENT_SEED, 0) < 5000) is winning
    )


def _plays(server_seed: str, *outcomes: Any) -> tuple[BalancePlays, FakeWallet, Any]:
    config = make_config("sqlite:///never-opened.db", wallet_url="http://wallet.invalid")
    platform = SimpleNamespace(
        config=config,
        directory=Directory.from_config(config),
        events=EventStore(env={"PERSISTENCE_MODULE": "eventsourcing.popo"}),
        clock=ManualClock(),
        config_versions={},
        catalog_versions={},
    )
    wallet = FakeWallet(*outcomes)
    fairness = FakeFairness(platform, server_seed)
    return BalancePlays(platform, wallet, fairness), wallet, platform  # type: ignore[arg-type]


PLAY = PlayBalance("op-a", "p-1", "act-1", wager_minor=1000, chance_bps=5000, target_item_id=7)


async def test_a_won_play_debits_the_bet_rolls_and_grants_the_target() -> None:
    server_seed = _seed(winning=True)
    plays, wallet, platform = _plays(server_seed, Accepted(9000, "t-1"))
    view = await plays.play(PLAY)
    answer = msgspec.to_builtins(view)
    rid = round_id("op-a", "p-1", "act-1")
    public_id = f"r_{rid.hex}"
    rolled = roll(server_seed, CLIENT_SEED, 0)
    assert [(method, body["amountMinor"], body["reason"]) for method, body in wallet.calls] == [
        ("wallet.debit", 1000, "upgrader.wager")
    ]
    assert answer["round"]["publicId"] == public_id
    assert (answer["round"]["status"], answer["round"]["game"]) == ("settled", "upgrader")
    assert (answer["round"]["rolledBps"], answer["round"]["isWin"]) == (rolled, True)
    assert (answer["round"]["payoutMinor"], answer["round"]["betMinor"]) == (1900, 1000)
    assert answer["round"]["fairness"] == {
        "serverSeedHash": seed_hash(server_seed),
        "clientSeed": CLIENT_SEED,
        "nonce": 0,
        "algorithmKey": "hmac_sha256_v1",
    }
    number = inventory_item_number(rid)
    assert answer["wonItem"] == {
        "inventoryItemId": number,
        "itemId": 7,
        "name": "Item 7",
        "cashbackMinor": 1710,  # 90 % of 1900
        "cashbackUncredited": {"priceFallMinor": 0, "priceRiseMinor": 0, "creditsShareMinor": 0},
        "currency": "EUR",
        "state": "unresolved",
    }
    assert answer["balanceAfterMinor"] == 9000
    granted = platform.events.repository.get(inventory_item_id(number))
    assert (granted.grant["item_id"], granted.grant["round_public_id"]) == (7, public_id)
    assert platform.events.repository.get(fairness_id("op-a", "p-1")).nonce == 1
    # a copy answers the same bytes without a second debit
    assert msgspec.json.encode(await plays.play(PLAY)) == msgspec.json.encode(view)
    assert len(wallet.calls) == 1


async def test_a_lost_play_grants_nothing() -> None:
    server_seed = _seed(winning=False)
    plays, _, platform = _plays(server_seed, Accepted(9000, None))
    answer = msgspec.to_builtins(await plays.play(PLAY))
    rid = round_id("op-a", "p-1", "act-1")
    assert (answer["round"]["isWin"], answer["round"]["payoutMinor"], answer["wonItem"]) == (
        False,
        0,
        None,
    )
    with pytest.raises(AggregateNotFoundError):
        platform.events.repository.get(inventory_item_id(inventory_item_number(rid)))


async def test_a_chance_not_offered_is_refused_before_anything_is_recorded() -> None:
    plays, wallet, platform = _plays(_seed(winning=True))
    with pytest.raises(PlatformError) as refused:
        await plays.play(
            PlayBalance("op-a", "p-1", "act-2", wager_minor=1000, chance_bps=2600, target_item_id=7)
        )
    assert (refused.value.code, status_of(refused.value), refused.value.message) == (
        "UPGRADER_CHANCE_INVALID",
        422,
        "chanceBps 2600 is not one of the offered presets [1000, 2500, 5000, 7500, 9000]",
    )
    assert (wallet.calls, platform.events.recorder.max_notification_id()) == ([], None)

"""Items-mode test support: a catalogue variant, a restartable platform, event-log reads.

The variant adds to the standard test configuration (``tests/support/config.py``):

- items granted at 1000 (EUR minor) that a W=1000, p=9000 balance play can aim at
  (band [960, 1055]): a plain item with cash-back 90%, a collectible with cash-back 80%,
  an item without cash-back, and one that a later configuration makes non-fulfillable;
- cheap targets for the counted stakes the tests make at chance 9000 (edge 5%):
  W=900 -> [864, 950], W=720 -> [691, 760], W=800 -> [768, 844], W=450 -> [432, 475];
  and for the no-loss operator at chance 5000 (edge 10%, Nuggets cost 20%):
  W=1000 -> [1455, 1600], W=900 -> [1310, 1440];
- ``op-no-items`` (items mode off) and ``op-nuggets`` (no-loss on, Nuggets cost 20%,
  edge 10%, presets [5000, 8000, 9000], max 9900: chance 9000 is not offered).
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from application.clock import ManualClock
from application.platform import Platform
from domain.cashout import Cashout
from domain.ids import inventory_item_id
from entrypoints.app import create_app
from ops.reference_operator.wallet import ThreadedWalletServer
from tests.support.config import make_config, raw_config
from tests.support.ledger import (
    cancel_credits,
    cancelled_balance_bets,
    open_cancel_credits,
    open_uncertain_attempts,
    settled_balance_bets,
)
from tests.support.live import Api, LiveServer
from tests.support.waiting import wait_until

PLAIN = 101  # granted at 1000, cash-back 90%, not a collectible
COLLECTIBLE = 102  # granted at 1000, cash-back 80%, a collectible
NO_CASHBACK = 103  # granted at 1000, no cash-back
SOON_DIGITAL = 109  # granted at 1000 while fulfillable; SHIP_OFF makes it non-fulfillable
T900, T740, T800, T450, T1500, T1400 = 104, 105, 106, 107, 108, 110

KEY_B = {"key_id": "key-b", "secret": "secret-b-1"}
KEY_ITEMS_ONLY = {"key_id": "key-i", "secret": "secret-i-1"}
KEY_NO_ITEMS = {"key_id": "key-x", "secret": "secret-x-1"}
KEY_NUGGETS = {"key_id": "key-n", "secret": "secret-n-1"}
KEY_OPERATOR = {
    "key-a": "op-a",
    "key-b": "op-b",
    "key-i": "op-items-only",
    "key-x": "op-no-items",
    "key-n": "op-nuggets",
}
EXTRA_OUTBOUND = {"op-no-items": "outbound-x-secret", "op-nuggets": "outbound-n-secret"}
OPERATORS = ("op-a", "op-b", "op-items-only", "op-off", "op-no-items", "op-nuggets")

_ITEMS = [
    (PLAIN, "Plain", 1000, {"cashback_bps": 9000}),
    (COLLECTIBLE, "Collectible", 1000, {"cashback_bps": 8000, "collectible": True}),
    (NO_CASHBACK, "No cash-back", 1000, {}),
    (T900, "Target 900", 900, {"cashback_bps": 9000}),
    (T740, "Target 740", 740, {"cashback_bps": 9000}),
    (T800, "Target 800", 800, {"cashback_bps": 9000}),
    (T450, "Target 450", 450, {"cashback_bps": 9000}),
    (T1500, "Target 1500", 1500, {"cashback_bps": 9000}),
    (SOON_DIGITAL, "Soon digital", 1000, {"cashback_bps": 9000}),
    (T1400, "Target 1400", 1400, {"cashback_bps": 9000}),
]
NAMES = {item_id: name for item_id, name, _, _ in _ITEMS}


def variant_raw(database_url: str) -> dict[str, Any]:
    raw = raw_config(database_url)
    raw["catalog"]["items"] += [
        {"item_id": item_id, "name": {"en": name}, "value_minor": value, **extra}
        for item_id, name, value, extra in _ITEMS
    ]
    common = {"base_currency": "EUR", "enabled_games": ["upgrader"]}
    eur = [{"code": "EUR", "rate": "1", "exponent": 2}]
    raw["operators"] += [
        {
            "id": "op-no-items",
            "outbound_secret": EXTRA_OUTBOUND["op-no-items"],
            "keys": [{"key_id": "key-x", "secret": "secret-x-1"}],
            "currencies": eur,
            "upgrader": {"items_mode": False},
            **common,
        },
        {
            "id": "op-nuggets",
            "outbound_secret": EXTRA_OUTBOUND["op-nuggets"],
            "keys": [{"key_id": "key-n", "secret": "secret-n-1"}],
            "currencies": eur,
            "upgrader": {
                "house_edge_bps": 1000,
                "chance_presets_bps": [5000, 8000, 9000],
                "default_chance_bps": 8000,
                "max_chance_bps": 9900,
                "no_loss": True,
                "nuggets_cost_percent": 20,
            },
            **common,
        },
    ]
    # abuse limits count hits per second of the (manual) clock: lift them on every operator
    # the way the standard test configuration does for op-a, when it sets them
    limits = operator_entry(raw, "op-a").get("limits")
    if limits is not None:
        for operator in raw["operators"]:
            operator["limits"] = dict(limits)
    return raw


def catalog_entry(raw: dict[str, Any], item_id: int) -> dict[str, Any]:
    return next(i for i in raw["catalog"]["items"] if i["item_id"] == item_id)


def operator_entry(raw: dict[str, Any], operator_id: str) -> dict[str, Any]:
    return next(o for o in raw["operators"] if o["id"] == operator_id)


class ItemsEnv:
    """A platform on a configuration variant, served on loopback, restartable on the same
    store with another variant (each applied change is then recorded as an event)."""

    def __init__(self, database_url: str, clock: ManualClock, wallet: ThreadedWalletServer) -> None:
        self.database_url = database_url
        self.clock = clock
        self.wallet = wallet
        self.raw = variant_raw(database_url)
        self.platform: Platform | None = None
        self.live: LiveServer | None = None
        self.api: Api | None = None
        # (operator, player, clientActionId) -> creditedMinor of each credited cash-back
        self.credited: dict[tuple[str, str, str], int] = {}
        wallet.secrets.update(EXTRA_OUTBOUND)

    def start(self, raw: dict[str, Any] | None = None) -> int:
        """Start on ``raw`` (default: the variant); returns the configuration events appended."""
        if raw is not None:
            self.raw = copy.deepcopy(raw)
        config = make_config(
            self.database_url,
            self.raw,
            wallet_url=self.wallet.url,
            wallet_timeout_seconds=1,
            uncertain_debit_grace_seconds=30,
        )
        self.platform = Platform(config, clock=self.clock)
        appended = self.platform.record_configuration()
        self.live = LiveServer(create_app(self.platform)).__enter__()
        self.api = Api(self.live.url, self.clock)
        return appended

    def stop(self) -> None:
        if self.api is not None:
            self.api.close()
        if self.live is not None:
            self.live.__exit__(None, None, None)
        if self.platform is not None:
            self.platform.close()
        self.api = self.live = self.platform = None

    def __enter__(self) -> ItemsEnv:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def restart(self, raw: dict[str, Any]) -> int:
        self.stop()
        return self.start(raw)

    def last_topics(self, count: int) -> list[str]:
        """Topics of the last ``count`` events of the log, oldest first."""
        recorder = self.platform.events.recorder
        head = recorder.max_notification_id() or 0
        return [n.topic for n in recorder.select_notifications(head - count + 1, count)]


def checked_env(
    database_url: str, clock: ManualClock, wallet: ThreadedWalletServer
) -> Iterator[ItemsEnv]:
    """An ``ItemsEnv`` for one test (the body of an ``env`` fixture); after the test the
    money holds: for every operator the wallet's net debits equal the bets of settled
    balance rounds, its cancel credits the bets of the cancelled ones (decisions §11),
    and its other credits both the ``creditedMinor`` of the cash-back answers the test
    kept in ``env.credited`` and the cash-backs the log records."""
    with ItemsEnv(database_url, clock, wallet) as items_env:
        yield items_env
        platform, ledger = items_env.platform, wallet.ledger
        wait_until(lambda: open_uncertain_attempts(platform) == 0, timeout=15, what="rollbacks")
        wait_until(lambda: open_cancel_credits(platform) == 0, timeout=15, what="cancels")
        from_log = credited_cashbacks(platform)
        for operator in OPERATORS:
            assert ledger.net_debits(operator) == settled_balance_bets(platform, operator)
            cancels = sum(cancel_credits(ledger, operator).values())
            assert cancels == cancelled_balance_bets(platform, operator)
            answered = sum(v for (op, _, _), v in items_env.credited.items() if op == operator)
            assert ledger.net_credits(operator) - cancels == answered == from_log.get(operator, 0)


# -- wire helpers ---------------------------------------------------------------------------


def error_of(response: httpx.Response) -> tuple[int, str]:
    return response.status_code, response.json()["error"]["code"]


def post(api: Api, path: str, body: dict[str, Any], **key: str) -> httpx.Response:
    return api.s2s("POST", path, json.dumps(body).encode(), **key)


def launch_session(api: Api, player: str, **key: str) -> str:
    body = json.dumps({"playerExternalId": player, "gameKey": "upgrader", "target": {}})
    launch = api.s2s("POST", "/api/s2s/launches", body.encode(), **key)
    assert launch.status_code == 200, launch.text
    init = api.http.post(
        "/api/play/session/init", json={"launchToken": launch.json()["launchToken"]}
    )
    assert init.status_code == 200, init.text
    return init.json()["sessionToken"]


def win_items(
    env: ItemsEnv,
    player: str,
    target: int,
    count: int,
    prefix: str,
    *,
    chance: int = 9000,
    **key: str,
) -> list[int]:
    """Balance plays at W=1000 EUR aiming at ``target`` until ``count`` wins (bounded);
    returns the won inventoryItemIds in order."""
    operator = KEY_OPERATOR[key.get("key_id", "key-a")]
    tries = count * 3 + 20
    env.wallet.ledger.fund(operator, player, "EUR", 1000 * tries)
    won: list[int] = []
    for n in range(tries):
        body = {
            "playerExternalId": player,
            "clientActionId": f"{prefix}-{n}",
            "wagerMinor": 1000,
            "chanceBps": chance,
            "targetItemId": target,
        }
        response = post(env.api, "/api/s2s/upgrader/play", body, **key)
        assert response.status_code == 200, response.text
        answer = response.json()
        if answer["round"]["isWin"]:
            assert answer["wonItem"]["itemId"] == target
            won.append(answer["wonItem"]["inventoryItemId"])
            if len(won) == count:
                return won
    pytest.fail(f"only {len(won)} of {count} wins in {tries} plays at chance {chance}")


# -- event-log reads --------------------------------------------------------------------------


def item_moves(platform: Platform, number: int) -> Counter:
    """How many of each event the inventory item's aggregate has (by event class name)."""
    events = platform.events.recorder.select_events(inventory_item_id(number))
    return Counter(e.topic.rsplit(".", 1)[-1] for e in events)


def credited_cashbacks(platform: Platform) -> dict[str, int]:
    """Per operator, the sum of ``creditedMinor`` of the cash-backs the log records credited."""
    totals: dict[str, int] = {}
    recorder = platform.events.recorder
    position = 0
    while True:
        batch = recorder.select_notifications(position + 1, 1000)
        if not batch:
            return totals
        for notification in batch:
            if notification.topic.endswith("Cashout.CashoutCredited"):
                cashout: Cashout = platform.events.repository.get(notification.originator_id)
                operator = cashout.request["operator_id"]
                totals[operator] = totals.get(operator, 0) + cashout.request["credited_minor"]
        position = batch[-1].id


def band(wager: int, edge: int, chance: int, cost: int = 0, no_loss: bool = False) -> dict:
    """decisions §2, written from the text (integers only)."""
    c = cost if no_loss else 0
    upper = wager * ((10000 - edge) * 100 - (10000 - chance) * c) // (chance * 100)
    lower = -(-upper * 10 // 11)
    if no_loss:
        lower = max(wager, lower)
    return {"lowerMinor": lower, "upperMinor": upper}

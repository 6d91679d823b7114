"""The golden log's scenario: its two configurations and the calls it makes, day by day.

See ``tests/golden/record.py`` for what it covers and how it is recorded. Every call is
a real signed HTTP request to the served platform, and each answer is checked, so a
recording that went a different way (a timeout on a slow machine) stops with an error
instead of writing a golden file.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import httpx

from application.clock import ManualClock
from application.platform import Platform
from domain.cashout import cashout_id
from domain.ids import round_id
from entrypoints.cli_ops import pending_wallet_operations
from ops.reference_operator.wallet import ThreadedWalletServer
from tests.support.live import Api, LiveServer
from tests.support.waiting import wait_until

DAY = 24 * 3600
WALLET_TIMEOUT = 2
OUTBOUND = {"op-a": "outbound-a-secret", "op-b": "outbound-b-secret"}
PLAY = "/api/s2s/upgrader/play"
VALUES = (500, 960, 1000, 1055, 1728, 1800, 1900, 1901, 9000, 9500, 20000)  # items 1-11
NO_LIMITS = {
    "requests_per_second_per_key": 0,
    "requests_per_second_per_session": 0,
    "plays_per_second_per_player": 0,
}


def _item(item_id: int, name: str, value: int, **extra: Any) -> dict[str, Any]:
    return {"item_id": item_id, "name": {"en": name}, "value_minor": value, **extra}


def first_config(wallet_url: str) -> dict[str, Any]:
    """The configuration of day 1 (``shared/spec/config.md``), without a database URL."""
    webhook_url = wallet_url.rsplit("/", 1)[0] + "/webhooks"
    common = {
        "base_currency": "EUR",
        "wallet_url": wallet_url,
        "webhook_url": webhook_url,
        "enabled_games": ["upgrader"],
        "limits": dict(NO_LIMITS),
    }
    return {
        "service": {
            "base_url": "http://127.0.0.1:8000",
            "database_url": "",
            "session_idle_seconds": 1800,
            "launch_token_ttl_seconds": 120,
            "uncertain_debit_grace_seconds": 30,
            "wallet_timeout_seconds": WALLET_TIMEOUT,
        },
        "operators": [
            {
                "id": "op-a",
                "outbound_secret": OUTBOUND["op-a"],
                "keys": [
                    {"key_id": "key-a", "secret": "secret-a-1", "catalog_access": True},
                    {"key_id": "key-a-old", "secret": "secret-a-0", "revoked": True},
                ],
                "currencies": [
                    {"code": "EUR", "rate": "1", "exponent": 2},
                    {"code": "USD", "rate": "1.1", "exponent": 2},
                ],
                "upgrader": {
                    "house_edge_bps": 500,
                    "chance_presets_bps": [1000, 2500, 5000, 7500, 9000],
                    "default_chance_bps": 5000,
                    "max_chance_bps": 9500,
                    "min_wager_minor": 10,
                    "max_wager_minor": 1_000_000,
                },
                **common,
            },
            {
                "id": "op-b",
                "outbound_secret": OUTBOUND["op-b"],
                "keys": [{"key_id": "key-b", "secret": "secret-b-1"}],
                "currencies": [
                    {"code": "EUR", "rate": "1", "exponent": 2},
                    {"code": "CHF", "rate": "0.95", "exponent": 2},
                ],
                "upgrader": {"no_loss": True, "nuggets_cost_percent": 20},
                **common,
            },
        ],
        "catalog": {
            "items": [
                _item(i, f"Item {i}", v, cashback_bps=9000) for i, v in enumerate(VALUES, start=1)
            ]
            + [
                _item(12, "Retired", 1850, active=False),
                _item(13, "Digital only", 1750, fulfillable=False, cashback_bps=9000),
                {
                    "item_id": 14,
                    "name": {"en": "Crème brûlée torch", "de": "Flambierbrenner für Crème brûlée"},
                    "value_minor": 1000,
                    "cashback_bps": 8000,
                    "collectible": True,
                    "image_url": "https://cdn.example/items/14.png",
                },
            ]
        },
    }


def second_config(first: dict[str, Any]) -> dict[str, Any]:
    """Day 2: op-a's fee 500 -> 400, key-a revoked and key-a-2 added, USD 1.1 -> 1.2 and
    GBP added; op-b's CHF removed; item 6 repriced 1800 -> 1850, item 9 renamed, item 15
    listed."""
    raw = copy.deepcopy(first)
    op_a, op_b = raw["operators"]
    op_a["upgrader"]["house_edge_bps"] = 400
    op_a["keys"][0]["revoked"] = True
    op_a["keys"].append({"key_id": "key-a-2", "secret": "secret-a-2", "catalog_access": True})
    op_a["currencies"][1]["rate"] = "1.2"
    op_a["currencies"].append({"code": "GBP", "rate": "0.85", "exponent": 2})
    op_b["currencies"] = op_b["currencies"][:1]
    items = {item["item_id"]: item for item in raw["catalog"]["items"]}
    items[6]["value_minor"] = 1850
    items[9]["name"] = {"en": "Gold watch", "de": "Golduhr"}
    raw["catalog"]["items"].append(_item(15, "Item 15", 1870, cashback_bps=9000))
    return raw


class Scenario:
    """The calls of the golden log, made against whichever platform is attached."""

    def __init__(self, clock: ManualClock, wallet: ThreadedWalletServer) -> None:
        self.clock = clock
        self.wallet = wallet
        self.keys = {"op-a": ("key-a", "secret-a-1"), "op-b": ("key-b", "secret-b-1")}
        self.owned: dict[tuple[str, str], list[int]] = {}
        self.players: set[tuple[str, str]] = set()
        self.shipments: list[str] = []
        self.ticks = 0
        self.platform: Platform
        self.api: Api
        self.runtime: Any = None

    def attach(self, platform: Platform, live: LiveServer) -> None:
        self.platform = platform
        self.api = Api(live.url, self.clock)
        self.runtime = live.server.config.app.state.runtime

    def detach(self) -> None:
        self.api.close()

    # -- calls --------------------------------------------------------------------------------

    def tick(self) -> None:
        """A little time between two calls (uneven, so timestamps carry microseconds)."""
        self.ticks += 1
        self.clock.advance(1 + (self.ticks % 7) * 0.137)

    def call(
        self, operator: str, method: str, path: str, body: Any = None, params: Any = None
    ) -> httpx.Response:
        self.tick()
        key_id, secret = self.keys[operator]
        raw = json.dumps(body).encode() if body is not None else b""
        return self.api.s2s(method, path, raw, params=params, key_id=key_id, secret=secret)

    @staticmethod
    def check(response: httpx.Response, expect: int | tuple[int, str]) -> dict[str, Any]:
        status, code = expect if isinstance(expect, tuple) else (expect, None)
        assert response.status_code == status, response.text
        answer = response.json()
        if code is not None:
            assert answer["error"]["code"] == code, response.text
        return answer

    def prizes(self, operator: str, player: str, wager: int, chance: int, currency: str | None):
        params = {"playerExternalId": player, "wagerMinor": wager, "chanceBps": chance}
        if currency:
            params["currency"] = currency
        prizes = self.check(
            self.call(operator, "GET", "/api/s2s/upgrader/prizes", None, params), 200
        )
        return [prize["itemId"] for prize in prizes["prizes"]]

    def play(
        self,
        operator: str,
        player: str,
        action: str,
        wager: int,
        chance: int,
        *,
        currency: str | None = None,
        target: int | None = None,
        expect: int | tuple[int, str] = 200,
    ) -> dict[str, Any]:
        offered = self.prizes(operator, player, wager, chance, currency)
        assert offered and (target is None or target in offered), (target, offered)
        body = {
            "playerExternalId": player,
            "clientActionId": action,
            "wagerMinor": wager,
            "chanceBps": chance,
            "targetItemId": offered[0] if target is None else target,
            **({"currency": currency} if currency else {}),
        }
        self.players.add((operator, player))
        answer = self.check(self.call(operator, "POST", PLAY, body), expect)
        self._won(operator, player, answer)
        return answer

    def _won(self, operator: str, player: str, answer: dict[str, Any]) -> None:
        won = answer.get("wonItem")
        if won:
            self.owned.setdefault((operator, player), []).append(won["inventoryItemId"])

    def win_items(self, operator: str, player: str, count: int, prefix: str) -> None:
        """Balance plays at 90 % aiming at items worth about the wager, until ``count``
        are owned (the losses on the way are part of the log)."""
        for n in range(count * 3):
            if len(self.owned.get((operator, player), [])) >= count:
                return
            self.play(operator, player, f"{prefix}-{n}", 1000, 9000, target=(3, 14, 4)[n % 3])
        raise AssertionError(f"fewer than {count} wins in {count * 3} plays at 90 %")

    def take(self, operator: str, player: str, count: int) -> list[int]:
        owned = self.owned[(operator, player)]
        taken, owned[:] = owned[:count], owned[count:]
        assert len(taken) == count, "not enough items won"
        return taken

    def play_items(self, operator: str, player: str, action: str, stake: list[int]) -> None:
        for chance in (7500, 5000, 9000, 2500):
            params = {"playerExternalId": player, "stakeItemIds": stake, "chanceBps": chance}
            path = "/api/s2s/upgrader/prizes-by-items"
            offered = self.check(self.call(operator, "GET", path, None, params), 200)["prizes"]
            if offered:
                break
        else:
            raise AssertionError(f"no prize for the stake {stake}")
        body = {
            "playerExternalId": player,
            "clientActionId": action,
            "stakeItemIds": stake,
            "chanceBps": chance,
            "targetItemId": offered[0]["itemId"],
        }
        path = "/api/s2s/upgrader/play-with-items"
        self._won(operator, player, self.check(self.call(operator, "POST", path, body), 200))

    def play_as_player(self, operator: str, player: str, action: str, target: int) -> None:
        """One balance play over the player API (launch, session, play)."""
        launch = {"playerExternalId": player, "gameKey": "upgrader", "target": {}}
        token = self.check(self.call(operator, "POST", "/api/s2s/launches", launch), 200)
        self.tick()
        init = self.api.http.post(
            "/api/play/session/init", json={"launchToken": token["launchToken"]}
        )
        session = self.check(init, 200)["sessionToken"]
        self.tick()
        body = {
            "clientActionId": action,
            "wagerMinor": 1000,
            "chanceBps": 5000,
            "targetItemId": target,
        }
        answer = self.check(self.api.play("POST", "/api/play/upgrader/play", session, body), 200)
        self._won(operator, player, answer)

    def cash_out(
        self,
        operator: str,
        player: str,
        action: str,
        items: list[int],
        currency: str | None = None,
        expect: int | tuple[int, str] = 200,
    ) -> None:
        body = {"playerExternalId": player, "clientActionId": action, "inventoryItemIds": items}
        if currency:
            body["currency"] = currency
        self.check(self.call(operator, "POST", "/api/s2s/cashout", body), expect)

    def ship(self, operator: str, player: str, action: str, items: list[int]) -> None:
        body = {
            "playerExternalId": player,
            "clientActionId": action,
            "inventoryItemIds": items,
            "address": {"name": "A. Player", "line1": "1 Strait Street", "city": "Valletta"},
        }
        answer = self.check(self.call(operator, "POST", "/api/s2s/shipping", body), 200)
        self.shipments.append(answer["shipmentId"])

    def rotate(self, operator: str, player: str) -> None:
        body = {"playerExternalId": player}
        self.check(self.call(operator, "POST", "/api/s2s/fairness/rotate", body), 200)

    # -- waiting for the background loops -----------------------------------------------------

    def attempt(self, operator: str, player: str, action: str, attempt: int) -> dict[str, Any]:
        round_ = self.platform.events.repository.get(round_id(operator, player, action))
        return round_.attempts.get(attempt, {})

    def wait_rolled_back(self, operator: str, player: str, action: str) -> None:
        wait_until(
            lambda: self.attempt(operator, player, action, 1).get("state") == "rolled_back",
            timeout=20,
            what=f"the rollback of {action}",
        )

    def wait_credited(self, operator: str, player: str, action: str) -> None:
        cid = cashout_id(operator, player, action)
        wait_until(
            lambda: self.platform.events.repository.get(cid).status == "credited",
            timeout=20,
            what=f"the credit of {action}",
        )

    def settle_background(self) -> None:
        """Nothing left for the reconciler but the escalated rollback; projections level."""
        wait_until(
            lambda: all(row[4] == "escalated" for row in pending_wallet_operations(self.runtime)),
            timeout=20,
            what="the wallet operations settled",
        )
        self.runtime.runner.catch_up()

    # -- the days -------------------------------------------------------------------------------

    def day_one(self) -> None:
        ledger, faults = self.wallet.ledger, self.wallet.faults
        for operator, player, currency, amount in (
            ("op-a", "p-1", "EUR", 200_000),
            ("op-a", "p-1", "USD", 50_000),
            ("op-a", "p-2", "EUR", 100_000),
            ("op-a", "p-2", "USD", 50_000),
            ("op-a", "p-3", "EUR", 500),
            ("op-a", "p-4", "EUR", 100_000),
            ("op-b", "n-1", "EUR", 100_000),
            ("op-b", "n-1", "CHF", 50_000),
        ):
            ledger.fund(operator, player, currency, amount)
        ledger.block("op-a", "p-4")
        self.win_items("op-a", "p-1", 10, "a")
        self.play("op-a", "p-1", "usd-0", 1100, 5000, currency="USD")
        self.play("op-a", "p-1", "usd-1", 1100, 9000, currency="USD")
        self.play_as_player("op-a", "p-1", "session-0", target=6)
        for n in range(3):
            self.play("op-a", "p-2", f"b-{n}", 1000, 1000)
        self.play("op-a", "p-2", "b-3", 1000, 9000)
        self.play("op-a", "p-3", "poor", 1000, 5000, expect=(422, "INSUFFICIENT_FUNDS"))
        self.play("op-a", "p-4", "blocked", 1000, 5000, expect=(403, "PLAYER_BLOCKED"))
        # an uncertain debit (503): rolled back, then the retry of the action settles
        faults.configure(status_5xx=503, only_types={"wallet.debit"}, times=1)
        self.play("op-a", "p-2", "unsure", 1000, 5000, expect=(503, "WALLET_UNAVAILABLE"))
        self.wait_rolled_back("op-a", "p-2", "unsure")
        self.play("op-a", "p-2", "unsure", 1000, 5000)
        # a timeout: the money moved, the answer was lost; rolled back, never retried
        faults.configure(
            stall_seconds=WALLET_TIMEOUT + 1,
            stall_after_apply=True,
            only_types={"wallet.debit"},
            times=1,
        )
        self.play("op-a", "p-2", "lost", 1000, 5000, expect=(503, "WALLET_UNAVAILABLE"))
        self.wait_rolled_back("op-a", "p-2", "lost")
        faults.configure()
        # items mode, cash-backs (accepted, refused, uncertain then re-sent) and shipping
        self.play_items("op-a", "p-1", "items-0", self.take("op-a", "p-1", 1))
        self.play_items("op-a", "p-1", "items-1", self.take("op-a", "p-1", 2))
        self.cash_out("op-a", "p-1", "cash-eur", self.take("op-a", "p-1", 1))
        self.cash_out("op-a", "p-1", "cash-usd", self.take("op-a", "p-1", 1), currency="USD")
        released = self.take("op-a", "p-1", 1)
        faults.configure(refuse_with="DAILY_LIMIT", only_types={"wallet.credit"}, times=1)
        self.cash_out("op-a", "p-1", "cash-refused", released, expect=(422, "DAILY_LIMIT"))
        faults.configure(status_5xx=503, only_types={"wallet.credit"}, times=1)
        self.cash_out("op-a", "p-1", "cash-unsure", released, expect=(503, "WALLET_UNAVAILABLE"))
        self.wait_credited("op-a", "p-1", "cash-unsure")
        faults.configure()
        self.ship("op-a", "p-1", "ship-1", self.take("op-a", "p-1", 2))
        # the no-loss operator: losses award Nuggets
        for n in range(3):
            self.play("op-b", "n-1", f"n-{n}", 1170, 1000)
        self.play("op-b", "n-1", "n-win", 1000, 9000)
        self.play("op-b", "n-1", "n-chf", 1000, 5000, currency="CHF")
        # a rotation mid-log: later rounds of p-1 roll with the next seed pair
        self.rotate("op-a", "p-1")
        self.play("op-a", "p-1", "after-rotation", 1000, 9000, target=3)
        # a rollback that fails for 24 h is escalated (and the clock is on day 2)
        faults.configure(status_5xx=503, only_types={"wallet.debit", "wallet.rollback"})
        self.play("op-a", "p-2", "escalated", 1000, 5000, expect=(503, "WALLET_UNAVAILABLE"))
        self.clock.advance(DAY + 1)
        wait_until(
            lambda: self.attempt("op-a", "p-2", "escalated", 1).get("escalated"),
            timeout=20,
            tick=lambda: self.clock.advance(61),
            what="the escalation",
        )
        faults.configure()

    def day_two(self) -> None:
        """Under the second configuration (op-a signs with key-a-2 now)."""
        self.wallet.ledger.fund("op-a", "p-2", "GBP", 50_000)
        query = {"playerExternalId": "p-1", "wagerMinor": 1000, "chanceBps": 5000}
        revoked = self.call("op-a", "GET", "/api/s2s/upgrader/prizes", None, query)
        self.check(revoked, (401, "INVALID_SIGNATURE"))  # key-a is revoked now
        self.keys["op-a"] = ("key-a-2", "secret-a-2")
        self.play("op-a", "p-1", "day2-repriced", 1000, 5000, target=6)
        self.play("op-a", "p-2", "day2-usd", 1100, 5000, currency="USD")
        self.play("op-a", "p-2", "day2-gbp", 900, 5000, currency="GBP")
        self.play("op-a", "p-1", "day2-win", 1000, 9000, target=14)
        self.play_items("op-a", "p-1", "day2-items", self.take("op-a", "p-1", 1))
        self.cash_out("op-a", "p-1", "day2-cash", self.take("op-a", "p-1", 1))
        self.ship("op-a", "p-1", "ship-2", self.take("op-a", "p-1", 1))
        self.play("op-b", "n-1", "n-day2", 1170, 1000)

    def day_three(self, shipped: Callable[[str], list[int]]) -> None:
        """The first parcel leaves; then every player's seeds are rotated (all revealed)."""
        assert shipped(self.shipments[0])
        for operator, player in sorted(self.players):
            self.rotate(operator, player)

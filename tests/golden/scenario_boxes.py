"""The second golden log's scenario (``--scenario boxes``): box rounds and cancels.

Recorded by ``python -m tests.golden.record --scenario boxes`` into
``events_boxes.jsonl`` and ``expected_boxes.json`` (see ``tests/golden/record.py`` for how
a log is recorded), after the first log (``events.jsonl``, the Upgrader only) was frozen:
its events and payloads are the formats that came with the box game (decisions §10) and
cancels (decisions §11). The calls are made as in ``tests/golden/scenario.py``, whose
``Scenario`` this extends; one operator, ``op-a`` (EUR, USD), with ``upgrader`` and
``boxes`` enabled.

  day 1, first configuration: boxes 1 and 2 at version 1 (the box catalogue's
  ``Started`` and ``VersionRecorded``); purchases of one box and of several over the S2S
  API and over the player API (a box launch, then ``rounds/open``), in EUR and USD; a
  debit refused (INSUFFICIENT_FUNDS, the round voided) and one uncertain (wallet 503)
  rolled back by the reconciler, then retried to success; a box-won item cashed back, one
  staked in an items-mode Upgrader play and one shipped; the rounds to be cancelled (box
  rounds and an Upgrader one);
  day 2, second configuration: box 1 at version 2 (new price and table) and version 1
  inactive (``VersionActiveChanged``), box 2 renamed (``VersionDisplayChanged``); a
  purchase of the new version over each API; cancels: accepted (a box round of two
  boxes bought on version 1, now inactive), refused by the wallet (the round held) then
  cancelled by a later cancel (an Upgrader win), uncertain (wallet 503) and completed by
  the service re-sending the same key (a box round), and refused and left held;
  day 3: the shipment marked shipped, then every player's seeds rotated, so every draw's
  seed is revealed (the audit verifies them all).
"""

from __future__ import annotations

import copy
from typing import Any

from entrypoints.cli_ops import pending_wallet_operations
from tests.golden.scenario import NO_LIMITS, OUTBOUND, WALLET_TIMEOUT, Scenario, _item
from tests.support.waiting import wait_until

PURCHASE = "/api/s2s/purchase"
OPEN = "/api/play/rounds/open"
VALUES = (500, 960, 1000, 1055, 1728, 1800, 1900, 1901, 9000, 9500, 2500, 4000, 7000)  # items 1-13


def _box(box_id: int, version: int, name: str, price: int, table: list[tuple[int, int]]):
    return {
        "box_id": box_id,
        "box_version_id": version,
        "name": {"en": name},
        "price_minor": price,
        "items": [{"item_id": item, "weight": weight} for item, weight in table],
    }


def first_config(wallet_url: str) -> dict[str, Any]:
    """Day 1 (``shared/spec/config.md``), without a database URL."""
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
                "keys": [{"key_id": "key-a", "secret": "secret-a-1", "catalog_access": True}],
                "currencies": [
                    {"code": "EUR", "rate": "1", "exponent": 2},
                    {"code": "USD", "rate": "1.1", "exponent": 2},
                ],
                "upgrader": {"house_edge_bps": 500},
                "boxes": {"max_boxes_per_round": 5},
                "base_currency": "EUR",
                "wallet_url": wallet_url,
                "webhook_url": wallet_url.rsplit("/", 1)[0] + "/webhooks",
                "enabled_games": ["upgrader", "boxes"],
                "limits": dict(NO_LIMITS),
            }
        ],
        "catalog": {
            "items": [
                _item(i, f"Item {i}", v, cashback_bps=9000) for i, v in enumerate(VALUES, start=1)
            ]
            + [
                {
                    "item_id": 14,
                    "name": {"en": "Crème brûlée torch", "de": "Flambierbrenner für Crème brûlée"},
                    "value_minor": 1000,
                    "cashback_bps": 8000,
                    "collectible": True,
                    "image_url": "https://cdn.example/items/14.png",
                },
            ],
            "boxes": [
                _box(1, 1, "Starter box", 1000, [(1, 50), (3, 30), (4, 15), (14, 5)]),
                _box(2, 1, "Big box", 2500, [(5, 40), (7, 30), (8, 20), (10, 10)]),
            ],
        },
    }


def second_config(first: dict[str, Any]) -> dict[str, Any]:
    """Day 2: box 1 version 2 (price 1000 -> 1200, a new table) offered, version 1
    inactive; box 2 renamed, with an image."""
    raw = copy.deepcopy(first)
    boxes = raw["catalog"]["boxes"]
    boxes[0]["active"] = False
    boxes[1]["name"] = {"en": "Big box", "de": "Große Kiste"}
    boxes[1]["image_url"] = "https://cdn.example/boxes/2.png"
    boxes.append(_box(1, 2, "Starter box", 1200, [(2, 40), (3, 30), (6, 20), (14, 10)]))
    return raw


class BoxScenario(Scenario):
    """The calls of the second golden log."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.won_by_round: dict[str, list[int]] = {}
        self.cancels: dict[str, str] = {}  # what each cancel-bound round is for: its publicId

    # -- calls --------------------------------------------------------------------------------

    def _box_body(self, action: str, box: int, version: int, count: int, currency: str | None):
        body: dict[str, Any] = {"clientActionId": action, "boxId": box, "boxVersionId": version}
        if count != 1:
            body["count"] = count
        if currency:
            body["currency"] = currency
        return body

    def _bought(self, player: str, answer: dict[str, Any], count: int) -> str:
        public_id = answer["round"]["publicId"]
        items = [won["inventoryItemId"] for won in answer["wonItems"]]
        assert answer["round"]["game"] == "boxes" and len(items) == count, answer
        self.won_by_round[public_id] = items
        self.owned.setdefault(("op-a", player), []).extend(items)
        return public_id

    def purchase(
        self,
        player: str,
        action: str,
        box: int,
        version: int,
        count: int = 1,
        currency: str | None = None,
        expect: int | tuple[int, str] = 200,
    ) -> str | None:
        """``POST /api/s2s/purchase``: the round's publicId (when answered)."""
        body = {"playerExternalId": player, **self._box_body(action, box, version, count, currency)}
        self.players.add(("op-a", player))
        answer = self.check(self.call("op-a", "POST", PURCHASE, body), expect)
        if expect != 200:
            return answer.get("round", {}).get("publicId")
        return self._bought(player, answer, count)

    def box_session(self, player: str, box: int) -> str:
        """A box launch and its session: the session token."""
        launch = {"playerExternalId": player, "gameKey": "boxes", "target": {"boxId": box}}
        token = self.check(self.call("op-a", "POST", "/api/s2s/launches", launch), 200)
        self.tick()
        init = self.api.http.post(
            "/api/play/session/init", json={"launchToken": token["launchToken"]}
        )
        answer = self.check(init, 200)
        assert answer["game"]["key"] == "boxes", answer
        self.players.add(("op-a", player))
        return answer["sessionToken"]

    def open(
        self,
        session: str,
        player: str,
        action: str,
        box: int,
        version: int,
        count: int = 1,
        currency: str | None = None,
    ) -> str:
        """``POST /api/play/rounds/open`` (the session's player): the round's publicId."""
        self.tick()
        body = self._box_body(action, box, version, count, currency)
        answer = self.check(self.api.play("POST", OPEN, session, body), 200)
        return self._bought(player, answer, count)

    def take_from(self, player: str, public_id: str, count: int) -> list[int]:
        """``count`` items the round ``public_id`` granted (no longer owned here)."""
        owned = self.owned[("op-a", player)]
        taken = self.won_by_round[public_id][:count]
        assert len(taken) == count and all(item in owned for item in taken)
        owned[:] = [item for item in owned if item not in taken]
        return taken

    def cancel(self, player: str, public_id: str, action: str, expect: Any = 200) -> dict:
        body = {"playerExternalId": player, "clientActionId": action, "reason": "golden log"}
        path = f"/api/s2s/rounds/{public_id}/cancel"
        return self.check(self.call("op-a", "POST", path, body), expect)

    def round_status(self, public_id: str) -> str:
        view = self.call("op-a", "GET", f"/api/s2s/rounds/{public_id}")
        return self.check(view, 200)["status"]

    def settle_background(self) -> None:
        """Nothing left for the reconciler but the cancel refused and left held (the
        operator's to retry); projections level."""
        wait_until(
            lambda: [row[4] for row in pending_wallet_operations(self.runtime)] == ["refused"],
            timeout=20,
            what="the wallet operations settled",
        )
        self.runtime.runner.catch_up()

    # -- the days -------------------------------------------------------------------------------

    def day_one(self) -> None:
        ledger, faults = self.wallet.ledger, self.wallet.faults
        for player, currency, amount in (
            ("b-1", "EUR", 100_000),
            ("b-1", "USD", 50_000),
            ("b-2", "EUR", 50_000),
            ("b-2", "USD", 50_000),
            ("b-3", "EUR", 500),
            ("c-1", "EUR", 50_000),
            ("c-1", "USD", 20_000),
        ):
            ledger.fund("op-a", player, currency, amount)
        one = self.purchase("b-1", "box-1", 1, 1)
        three = self.purchase("b-1", "box-3-usd", 2, 1, count=3, currency="USD")
        session = self.box_session("b-2", 2)
        self.open(session, "b-2", "open-2", 2, 1, count=2)
        self.open(session, "b-2", "open-1-usd", 1, 1, currency="USD")
        # refused: voided with the wallet's code; uncertain: rolled back, then retried
        self.purchase("b-3", "poor", 2, 1, expect=(422, "INSUFFICIENT_FUNDS"))
        faults.configure(status_5xx=503, only_types={"wallet.debit"}, times=1)
        self.purchase("b-1", "unsure", 1, 1, count=2, expect=(503, "WALLET_UNAVAILABLE"))
        self.wait_rolled_back("op-a", "b-1", "unsure")
        faults.configure()
        unsure = self.purchase("b-1", "unsure", 1, 1, count=2)
        # box-won items cashed back, staked in an items-mode Upgrader play, shipped
        self.cash_out("op-a", "b-1", "box-cash", self.take_from("b-1", one, 1))
        self.play_items("op-a", "b-1", "box-stake", self.take_from("b-1", three, 1))
        self.ship("op-a", "b-1", "box-ship", self.take_from("b-1", unsure, 1))
        # rounds to cancel on day 2
        self.cancels["accepted"] = self.purchase("c-1", "c-box-2", 1, 1, count=2)
        self.cancels["unsure"] = self.purchase("c-1", "c-box-usd", 2, 1, currency="USD")
        self.cancels["held"] = self.purchase("c-1", "c-box-held", 2, 1)
        for n in range(10):  # an Upgrader win (its item is taken back with the cancel)
            upgrader = self.play("op-a", "c-1", f"c-up-{n}", 1000, 9000, target=3)
            if upgrader["wonItem"]:
                break
        else:
            raise AssertionError("no win in 10 plays at 90 %")
        self.cancels["refused"] = upgrader["round"]["publicId"]
        self.clock.advance(DAY_REST)

    def day_two(self) -> None:
        """Under the second configuration: box 1's version 2, then the cancels."""
        faults = self.wallet.faults
        self.purchase("b-1", "day2-box", 1, 2, count=2)
        session = self.box_session("b-2", 1)
        self.open(session, "b-2", "day2-open-usd", 1, 2, currency="USD")
        # accepted: a round of two boxes of version 1 (inactive now), both items cancelled
        answer = self.cancel("c-1", self.cancels["accepted"], "cancel-accepted")
        assert answer["round"]["status"] == "cancelled", answer
        # refused (the round held), then cancelled by a later cancel
        faults.configure(refuse_with="LIMIT_REACHED", only_types={"wallet.credit"}, times=1)
        self.cancel("c-1", self.cancels["refused"], "cancel-refused", (422, "LIMIT_REACHED"))
        assert self.round_status(self.cancels["refused"]) == "held"
        answer = self.cancel("c-1", self.cancels["refused"], "cancel-again")
        assert answer["round"]["status"] == "cancelled", answer
        # uncertain: held; the service re-sends the same key until the wallet answers
        faults.configure(status_5xx=503, only_types={"wallet.credit"}, times=1)
        self.cancel("c-1", self.cancels["unsure"], "cancel-unsure", (503, "OUTCOME_UNKNOWN"))
        wait_until(
            lambda: self.round_status(self.cancels["unsure"]) == "cancelled",
            timeout=20,
            tick=lambda: self.clock.advance(3),
            what="the cancel completed by the service",
        )
        # refused, never retried: the round stays held
        faults.configure(refuse_with="LIMIT_REACHED", only_types={"wallet.credit"}, times=1)
        self.cancel("c-1", self.cancels["held"], "cancel-held", (422, "LIMIT_REACHED"))
        faults.configure()


DAY_REST = 24 * 3600 - 600  # day 1 ends: the second configuration starts on day 2

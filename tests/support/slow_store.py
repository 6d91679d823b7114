"""A store made slow on purpose, and reads of what a play did (tests of what a 503 says).

``StoreHold`` stops the store's writes from another connection (an open write
transaction on SQLite, the event table's lock on PostgreSQL; reads go on);
``HookedLedger`` is the reference wallet's ledger, unchanged, with a hook that runs after
it applied a debit and before the wallet answers, so a test can make the store slow
exactly between the wallet's acceptance and the settle.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable
from typing import Any

import httpx
import psycopg
import pytest

from application.clock import ManualClock
from application.config.shape import Config
from application.platform import Platform
from domain.ids import round_id, round_public_id
from ops.reference_operator.wallet import Ledger, ThreadedWalletServer
from tests.support.config import make_config
from tests.support.items import PLAIN, variant_raw
from tests.support.ledger import open_uncertain_attempts
from tests.support.live import Api
from tests.support.waiting import wait_until

PLAY = "/api/s2s/upgrader/play"
GRACE = 30  # uncertain_debit_grace_seconds


class HookedLedger(Ledger):
    """The reference ledger, unchanged, that runs ``on_accepted_debit`` (once) after it
    applied a debit and before the wallet answers it."""

    def __init__(self) -> None:
        super().__init__()
        self.on_accepted_debit: Callable[[], None] | None = None

    def handle(self, body: dict[str, Any], *, refuse_with: str | None = None) -> dict[str, Any]:
        answer = super().handle(body, refuse_with=refuse_with)
        hook = self.on_accepted_debit
        if body["type"] == "wallet.debit" and answer.get("accepted") and hook is not None:
            self.on_accepted_debit = None
            hook()
        return answer


def limits_off_config(database_url: str, wallet_url: str) -> Config:
    """The items variant (tests/support/items.py) with every abuse limit off (0), so that
    a rate-limit count (a store write on SQLite) is not what meets a slow store."""
    raw = variant_raw(database_url)
    for operator in raw["operators"]:
        operator["limits"] = {
            "requests_per_second_per_key": 0,
            "requests_per_second_per_session": 0,
            "plays_per_second_per_player": 0,
        }
    return make_config(
        database_url,
        raw,
        wallet_url=wallet_url,
        wallet_timeout_seconds=1,
        uncertain_debit_grace_seconds=GRACE,
    )


class StoreHold:
    """Another connection that stops the store's writes while it is held."""

    def __init__(self, platform: Platform) -> None:
        location = platform.location
        if location.kind == "sqlite":
            self.conn: Any = sqlite3.connect(
                location.path, isolation_level=None, check_same_thread=False, timeout=10
            )
            self.statement = "BEGIN IMMEDIATE"
        else:
            self.conn = psycopg.connect(location.conninfo())
            self.statement = f'LOCK TABLE "{location.schema}".upgrader_events IN EXCLUSIVE MODE'
        self.held = threading.Event()
        self.released = threading.Event()
        self._lock = threading.Lock()

    def take(self) -> None:
        self.conn.execute(self.statement)
        self.held.set()

    def release(self) -> None:
        with self._lock:
            if not self.held.is_set() or self.released.is_set():
                return
            if isinstance(self.conn, sqlite3.Connection):
                self.conn.execute("ROLLBACK")
            else:
                self.conn.rollback()
            self.released.set()

    def close(self) -> None:
        self.release()
        self.conn.close()


def play(api: Api, player: str, action: str) -> httpx.Response:
    """A balance play of 1000 EUR at chance 90% aiming at the PLAIN item."""
    body = {
        "playerExternalId": player,
        "clientActionId": action,
        "wagerMinor": 1000,
        "chanceBps": 9000,
        "targetItemId": PLAIN,
    }
    return post(api, PLAY, body)


def post(api: Api, path: str, body: dict[str, Any]) -> httpx.Response:
    return api.s2s("POST", path, json.dumps(body).encode())


def won_item(api: Api, wallet: ThreadedWalletServer, player: str) -> int:
    """Balance plays at chance 90% until one wins the PLAIN item (bounded)."""
    wallet.ledger.fund("op-a", player, "EUR", 20_000)
    for n in range(20):
        answer = play(api, player, f"win-{n}")
        assert answer.status_code == 200, answer.text
        if answer.json()["round"]["isWin"]:
            return answer.json()["wonItem"]["inventoryItemId"]
    pytest.fail("no win in 20 plays at chance 90%")


def code(response: httpx.Response) -> str:
    return "OK" if response.status_code == 200 else response.json()["error"]["code"]


def history(api: Api, player: str) -> list[str]:
    """The publicIds of the player's rounds in the round history."""
    query = {"playerExternalId": player, "limit": 100}
    response = api.s2s("GET", "/api/s2s/rounds", params=query)
    assert response.status_code == 200, response.text
    return [r["publicId"] for r in response.json()["rounds"]]


def public_id(player: str, action: str) -> str:
    return round_public_id(round_id("op-a", player, action))


def debit_keys(ledger: Ledger, round_public: str) -> tuple[set[str], set[str]]:
    """(applied, kept) debit keys of one round at the wallet."""
    keys = {r.idempotency_key for r in ledger.requests_of("wallet.debit")}
    mine = {k for k in keys if k and k.startswith(round_public + ":")}
    return mine & ledger.applied_debit_keys("op-a"), mine & ledger.open_debit_keys("op-a")


def reconcile(platform: Platform, clock: ManualClock) -> None:
    """Past the grace period: every attempt without an answer is rolled back."""
    wait_until(
        lambda: open_uncertain_attempts(platform) == 0,
        timeout=20,
        tick=lambda: clock.advance(GRACE + 1),
        what="every unanswered debit attempt rolled back",
    )

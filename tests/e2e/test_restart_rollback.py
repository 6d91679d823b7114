"""A server killed with SIGKILL mid-debit rolls the debit back after a restart (decisions §4).

Real processes end to end: ``python -m entrypoints.cli serve --config FILE`` as a child process
group, the reference operator wallet on loopback (with its fault injection), signed S2S
calls over real HTTP, SQLite and PostgreSQL stores. The play saves ``Opened`` +
``DebitAttempted`` before the wallet hears of the debit, so after a crash the restarted
process finds the attempt with no answer, declares it uncertain once
``uncertain_debit_grace_seconds`` have passed and sends ``wallet.rollback``:

A. killed after the wallet applied the debit (its answer lost): the rollback gives the
   money back, and a retry of the same action settles with the next key ``{publicId}:2``;
B. killed before the wallet applied it (a late wallet): the rollback arrives first and is
   remembered as a tombstone, and the late debit is refused ``ROLLED_BACK``.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import httpx
import pytest

from ops.reference_operator.wallet import Ledger, ReceivedRequest, ThreadedWalletServer
from tests.support import config_toml
from tests.support.processes import ServerProcess, wait_until

OPERATOR = "e2e-op"
KEY_ID = "e2e-key"
PLAYER = "player-restart"
FUNDS = 100_000
WAGER = 1000
CHANCE_BPS = 5000  # W=1000, p=5000, fee 500 bps: target band [1728, 1900]
TARGET_ITEM = 6  # value 1800, in the band
PLAY_PATH = "/api/s2s/upgrader/play"
DEBIT, ROLLBACK = "wallet.debit", "wallet.rollback"

GRACE_SECONDS = 4
WALLET_TIMEOUT_SECONDS = 3
RECOVERY_TIMEOUT = 30.0  # restart + grace + reconciler pass, with a wide margin
LATE_WALLET_STALL = 10.0  # scenario B: longer than restart + grace + rollback (about 5-6 s)


@dataclass
class Stack:
    wallet: ThreadedWalletServer
    server: ServerProcess

    @property
    def ledger(self) -> Ledger:
        return self.wallet.ledger


@pytest.fixture
def stack(database_url: str, tmp_path: Path) -> Iterator[Stack]:
    """The reference wallet (player funded) and a configured, not yet started, server."""
    inbound = f"in-{secrets.token_hex(16)}"
    outbound = f"out-{secrets.token_hex(16)}"
    wallet = ThreadedWalletServer({OPERATOR: outbound}).start()
    server: ServerProcess | None = None
    try:
        wallet.ledger.fund(OPERATOR, PLAYER, "EUR", FUNDS)
        config_path = tmp_path / "config.toml"
        config_path.write_text(
            config_toml.balance_config(
                database_url,
                operator_id=OPERATOR,
                key=config_toml.Key(KEY_ID, inbound, catalog_access=True),
                wallet_url=wallet.url,
                outbound_secret=outbound,
                grace_seconds=GRACE_SECONDS,
                wallet_timeout_seconds=WALLET_TIMEOUT_SECONDS,
            ),
            encoding="utf-8",
        )
        server = ServerProcess(
            config_path,
            tmp_path / "server.log",
            key_id=KEY_ID,
            secret=inbound,
            database_url=database_url,
            redact=[outbound],
        )
        yield Stack(wallet, server)
        raw_log = server.log_path.read_text(encoding="utf-8", errors="replace")
        leaked = [
            name
            for name, value in (("inbound", inbound), ("outbound", outbound))
            if value in raw_log
        ]
        assert leaked == [], "a secret appears in the server's output"
    finally:
        if server is not None:
            server.kill()
        wallet.stop()


def play_body(client_action_id: str) -> bytes:
    return json.dumps(
        {
            "playerExternalId": PLAYER,
            "clientActionId": client_action_id,
            "wagerMinor": WAGER,
            "chanceBps": CHANCE_BPS,
            "targetItemId": TARGET_ITEM,
            "currency": "EUR",
        }
    ).encode()


class HangingPlay(threading.Thread):
    """A play request sent in the background: it hangs while the wallet stalls."""

    def __init__(self, server: ServerProcess, body: bytes) -> None:
        super().__init__(name="hanging-play", daemon=True)
        self.server, self.body = server, body
        self.response: httpx.Response | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.response = self.server.signed("POST", PLAY_PATH, self.body, timeout=60)
        except BaseException as exc:  # the connection dies with the server
            self.error = exc


def only_request(requests: list[ReceivedRequest], what: str) -> ReceivedRequest:
    assert len(requests) == 1, f"expected exactly one {what}, got {len(requests)}"
    return requests[0]


def seconds_between(first: ReceivedRequest, then: ReceivedRequest) -> float:
    """Seconds between two wallet calls by their ``requestedAt`` (service clock, ms)."""

    def moment(request: ReceivedRequest) -> datetime:
        return datetime.fromisoformat(request.body["requestedAt"].replace("Z", "+00:00"))

    return (moment(then) - moment(first)).total_seconds()


def crash_mid_debit(stack: Stack, body: bytes, *, applied: bool) -> ReceivedRequest:
    """Send a play whose debit the wallet stalls on, then SIGKILL the server under it."""
    play = HangingPlay(stack.server, body)
    play.start()
    try:
        debit = wait_until(
            lambda: next(iter(stack.ledger.requests_of(DEBIT)), None),
            10,
            "the wallet to receive the debit",
        )
        if applied:
            wait_until(
                lambda: debit.idempotency_key in stack.ledger.applied_debit_keys(OPERATOR),
                10,
                "the wallet to apply the debit",
            )
        assert debit.http_status is None, "the wallet answered; the fault did not stall it"
        assert stack.server.running
    finally:
        stack.server.kill()  # SIGKILL: no shutdown hook runs, as in a crash
        play.join(timeout=15)
    assert not play.is_alive(), "the play request outlived the killed server"
    assert play.response is None, "the killed server answered the play"
    assert isinstance(play.error, httpx.TransportError), repr(play.error)
    return debit


# --------------------------------------------------------------------------- scenario A


def test_killed_after_the_wallet_applied_the_debit_is_rolled_back_on_restart(
    stack: Stack,
) -> None:
    ledger, server = stack.ledger, stack.server
    server.start()
    assert ledger.requests == []  # starting up calls no wallet
    stack.wallet.faults.configure(
        stall_seconds=30, stall_after_apply=True, only_types={DEBIT}, times=1
    )
    body = play_body("restart-a")

    debit = crash_mid_debit(stack, body, applied=True)
    public_id = debit.body["roundId"]
    first_key = f"{public_id}:1"
    assert debit.idempotency_key == first_key
    assert debit.body["amountMinor"] == WAGER
    # The money is out and nobody has asked for it back yet.
    assert ledger.net_debits(OPERATOR) == WAGER
    assert ledger.balance(OPERATOR, PLAYER, "EUR") == FUNDS - WAGER
    assert ledger.requests_of(ROLLBACK) == []

    server.start()
    wait_until(
        lambda: (
            ledger.rollback_count(first_key, OPERATOR) == 1 and ledger.net_debits(OPERATOR) == 0
        ),
        RECOVERY_TIMEOUT,
        "the restarted server to roll the applied debit back",
    )

    rollback = only_request(ledger.requests_of(ROLLBACK), "rollback request")
    assert rollback.body["originalIdempotencyKey"] == first_key
    assert rollback.idempotency_key == f"{first_key}:rollback"
    assert rollback.body["amountMinor"] == WAGER
    assert rollback.body["roundId"] == public_id
    assert rollback.answer is not None and rollback.answer["accepted"] is True
    assert seconds_between(debit, rollback) >= GRACE_SECONDS - 0.25  # not before the grace
    assert ledger.rolled_back_keys(OPERATOR) == {first_key}
    assert ledger.tombstoned_keys(OPERATOR) == set()
    assert ledger.balance(OPERATOR, PLAYER, "EUR") == FUNDS

    # A retry of the same action makes the next attempt, with the next key, and settles.
    retry = server.signed("POST", PLAY_PATH, body, timeout=30)
    assert retry.status_code == 200, retry.text
    answer = retry.json()
    assert answer["round"]["publicId"] == public_id
    assert answer["round"]["status"] == "settled"
    assert answer["round"]["betMinor"] == WAGER
    second_key = f"{public_id}:2"
    assert ledger.applied_debit_keys(OPERATOR) == {first_key, second_key}
    assert ledger.open_debit_keys(OPERATOR) == {second_key}
    assert ledger.net_debits(OPERATOR) == answer["round"]["betMinor"] == WAGER
    assert ledger.balance(OPERATOR, PLAYER, "EUR") == FUNDS - WAGER

    # Once more: byte for byte the same answer, and no money moves.
    debits_before = len(ledger.requests_of(DEBIT))
    again = server.signed("POST", PLAY_PATH, body, timeout=30)
    assert again.status_code == 200, again.text
    assert again.content == retry.content
    assert len(ledger.requests_of(DEBIT)) == debits_before
    assert ledger.net_debits(OPERATOR) == WAGER
    assert ledger.rollback_count(first_key, OPERATOR) == 1
    assert ledger.rollback_count(second_key, OPERATOR) == 0
    only_request(ledger.requests_of(ROLLBACK), "rollback request")


# --------------------------------------------------------------------------- scenario B


def test_killed_before_the_wallet_applied_the_debit_refuses_the_late_debit(
    stack: Stack,
) -> None:
    ledger, server = stack.ledger, stack.server
    server.start()
    assert ledger.requests == []
    stack.wallet.faults.configure(
        stall_seconds=LATE_WALLET_STALL, stall_after_apply=False, only_types={DEBIT}, times=1
    )
    body = play_body("restart-b")

    debit = crash_mid_debit(stack, body, applied=False)
    public_id = debit.body["roundId"]
    first_key = f"{public_id}:1"
    assert debit.idempotency_key == first_key
    # The wallet is still sleeping on the debit: nothing has moved.
    assert ledger.applied_debit_keys(OPERATOR) == set()
    assert ledger.net_debits(OPERATOR) == 0

    server.start()
    wait_until(
        lambda: first_key in ledger.tombstoned_keys(OPERATOR),
        RECOVERY_TIMEOUT,
        "the restarted server to roll back the debit the wallet has not seen yet",
    )
    assert debit.answer is None, (
        f"the late debit was handled before the rollback arrived; "
        f"LATE_WALLET_STALL ({LATE_WALLET_STALL} s) is too short for this machine"
    )
    rollback = only_request(ledger.requests_of(ROLLBACK), "rollback request")
    assert rollback.body["originalIdempotencyKey"] == first_key
    assert rollback.idempotency_key == f"{first_key}:rollback"
    assert rollback.body["amountMinor"] == WAGER
    assert rollback.answer is not None and rollback.answer["accepted"] is True
    assert seconds_between(debit, rollback) >= GRACE_SECONDS - 0.25  # not before the grace
    assert ledger.rollback_count(first_key, OPERATOR) == 0  # nothing to give back

    # The late debit finally reaches the ledger, and is refused: the key was rolled back.
    wait_until(
        lambda: debit.answer is not None,
        LATE_WALLET_STALL + 10,
        "the stalled wallet to handle the late debit",
    )
    assert debit.answer["accepted"] is False
    assert debit.answer["errorCode"] == "ROLLED_BACK"
    assert ledger.tombstoned_keys(OPERATOR) == {first_key}
    assert ledger.rolled_back_keys(OPERATOR) == {first_key}
    assert ledger.applied_debit_keys(OPERATOR) == set()
    assert ledger.net_debits(OPERATOR) == 0
    assert ledger.balance(OPERATOR, PLAYER, "EUR") == FUNDS

    # The player's retry of the action settles with the next key.
    retry = server.signed("POST", PLAY_PATH, body, timeout=30)
    assert retry.status_code == 200, retry.text
    answer = retry.json()
    assert answer["round"]["publicId"] == public_id
    assert answer["round"]["status"] == "settled"
    assert ledger.applied_debit_keys(OPERATOR) == {f"{public_id}:2"}
    assert ledger.net_debits(OPERATOR) == answer["round"]["betMinor"] == WAGER
    only_request(ledger.requests_of(ROLLBACK), "rollback request")

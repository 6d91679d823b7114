"""The reference operator wallet over real HTTP on loopback (no mocks).

Requests are signed here from the interface text (5.1), independently of the wallet
module: canonical string ``timestamp\\nMETHOD\\npath\\nsha256hex(body)``, lowercase hex
HMAC-SHA256 keyed with the operator's outbound secret.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest

from ops.reference_operator.wallet import (
    Faults,
    Ledger,
    ThreadedWalletServer,
    WalletServer,
    parse_cli,
)

OP = "op-1"
OP2 = "op-2"
SECRET = "outbound-secret-op-1"
SECRET2 = "outbound-secret-op-2"
PLAYER = "player-1"
NOW = 1_700_000_000
FROM_BODY = "<the body's idempotencyKey>"


class FakeClock:
    def __init__(self, now: int) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def sign(secret: str, timestamp: str, method: str, path: str, body: bytes) -> str:
    canonical = "\n".join([timestamp, method.upper(), path, hashlib.sha256(body).hexdigest()])
    return hmac.new(secret.encode(), canonical.encode(), hashlib.sha256).hexdigest()


def signed_headers(
    body: bytes, *, path: str, secret: str = SECRET, timestamp: int = NOW
) -> dict[str, str]:
    ts = str(timestamp)
    return {
        "Content-Type": "application/json",
        "X-Timestamp": ts,
        "X-Signature": sign(secret, ts, "POST", path, body),
    }


def debit(key: str, amount: int, *, player: str = PLAYER, op: str = OP, **extra: Any) -> dict:
    return {
        "type": "wallet.debit",
        "operatorId": op,
        "playerExternalId": player,
        "amountMinor": amount,
        "currency": "EUR",
        "idempotencyKey": key,
        "roundId": "rnd-" + key,
        "reason": "upgrader.wager",
        "requestedAt": "2023-11-14T22:13:20Z",
        **extra,
    }


def credit(key: str, amount: int, *, player: str = PLAYER, op: str = OP) -> dict:
    return {
        "type": "wallet.credit",
        "operatorId": op,
        "playerExternalId": player,
        "amountMinor": amount,
        "currency": "EUR",
        "idempotencyKey": key,
        "reason": "cancel",
        "roundId": "rnd-c",
        "requestedAt": "2023-11-14T22:13:20Z",
    }


def rollback(key: str, original: str, amount: int, *, player: str = PLAYER, op: str = OP) -> dict:
    return {
        "type": "wallet.rollback",
        "operatorId": op,
        "playerExternalId": player,
        "amountMinor": amount,
        "currency": "EUR",
        "idempotencyKey": key,
        "originalIdempotencyKey": original,
        "roundId": "rnd-" + original,
        "requestedAt": "2023-11-14T22:13:20Z",
    }


def balance_request(*, player: str = PLAYER, op: str = OP) -> dict:
    return {
        "type": "wallet.balance",
        "operatorId": op,
        "playerExternalId": player,
        "currency": "EUR",
    }


class Client:
    """Signs and posts wallet calls to a running WalletServer."""

    def __init__(self, session: aiohttp.ClientSession, server: WalletServer) -> None:
        self.session = session
        self.server = server

    async def post(
        self,
        body: dict,
        *,
        secret: str = SECRET,
        timestamp: int = NOW,
        idempotency_key: str | None = FROM_BODY,
        headers: dict[str, str] | None = None,
        url: str | None = None,
        timeout: float | None = None,
    ) -> tuple[int, Any]:
        url = url or self.server.url
        raw = json.dumps(body).encode()
        path = urllib.parse.urlsplit(url).path
        all_headers = signed_headers(raw, path=path, secret=secret, timestamp=timestamp)
        if idempotency_key is FROM_BODY:
            idempotency_key = body.get("idempotencyKey")
        if idempotency_key is not None:
            all_headers["Idempotency-Key"] = idempotency_key
        if headers is not None:
            all_headers = headers
        client_timeout = aiohttp.ClientTimeout(total=timeout) if timeout else None
        async with self.session.post(
            url, data=raw, headers=all_headers, timeout=client_timeout
        ) as response:
            text = await response.text()
            try:
                return response.status, json.loads(text)
            except ValueError:
                return response.status, text


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(NOW)


@pytest.fixture
async def server(clock: FakeClock) -> AsyncIterator[WalletServer]:
    async with WalletServer({OP: SECRET, OP2: SECRET2}, clock=clock) as running:
        running.ledger.fund(OP, PLAYER, "EUR", 10_000)
        yield running


@pytest.fixture
async def client(server: WalletServer) -> AsyncIterator[Client]:
    async with aiohttp.ClientSession() as session:
        yield Client(session, server)


async def eventually(condition: Callable[[], bool], timeout: float = 3.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.01)


def all_answered(server: WalletServer) -> bool:
    return all(r.http_status is not None for r in server.ledger.requests)


# --------------------------------------------------------------------------- money


async def test_server_binds_loopback_on_a_free_port(server: WalletServer) -> None:
    assert server.port > 0
    assert server.url == f"http://127.0.0.1:{server.port}/wallet"
    assert server.webhook_url == f"http://127.0.0.1:{server.port}/webhooks"


async def test_balance(client: Client) -> None:
    assert await client.post(balance_request()) == (
        200,
        {"balanceMinor": 10_000, "currency": "EUR"},
    )
    unknown = balance_request(player="nobody")
    assert await client.post(unknown) == (200, {"balanceMinor": 0, "currency": "EUR"})


async def test_debit_accepted_with_exact_balance_after(
    client: Client, server: WalletServer
) -> None:
    status, answer = await client.post(debit("r1:1", 2_500))
    assert status == 200
    assert answer["accepted"] is True
    assert answer["balanceAfterMinor"] == 7_500
    assert isinstance(answer["providerTxnRef"], str) and answer["providerTxnRef"]
    assert server.ledger.balance(OP, PLAYER, "EUR") == 7_500
    assert server.ledger.applied_debit_keys() == {"r1:1"}
    assert server.ledger.net_debits() == 2_500


async def test_duplicate_key_returns_identical_answer_and_moves_once(
    client: Client, server: WalletServer
) -> None:
    first = await client.post(debit("r1:1", 2_500))
    second = await client.post(debit("r1:1", 2_500, requestedAt="2023-11-14T22:13:25Z"))
    assert first == second
    assert server.ledger.balance(OP, PLAYER, "EUR") == 7_500
    assert server.ledger.net_debits() == 2_500
    assert [r.idempotency_key for r in server.ledger.requests_of("wallet.debit")] == [
        "r1:1",
        "r1:1",
    ]


async def test_same_key_other_amount_or_type_is_refused(
    client: Client, server: WalletServer
) -> None:
    await client.post(debit("r1:1", 2_500))
    status, answer = await client.post(debit("r1:1", 2_600))
    assert status == 200
    assert answer == {"accepted": False, "errorCode": "IDEMPOTENCY_KEY_REUSED"}
    _, answer = await client.post(credit("r1:1", 2_500))
    assert answer["errorCode"] == "IDEMPOTENCY_KEY_REUSED"
    _, answer = await client.post(debit("r1:1", 2_500, player="player-2"))
    assert answer["errorCode"] == "IDEMPOTENCY_KEY_REUSED"
    assert server.ledger.balance(OP, PLAYER, "EUR") == 7_500
    assert server.ledger.net_debits() == 2_500
    assert server.ledger.net_credits() == 0


async def test_insufficient_funds(client: Client, server: WalletServer) -> None:
    status, answer = await client.post(debit("r1:1", 10_001))
    assert (status, answer) == (200, {"accepted": False, "errorCode": "INSUFFICIENT_FUNDS"})
    assert server.ledger.balance(OP, PLAYER, "EUR") == 10_000
    assert server.ledger.applied_debit_keys() == set()
    # The exact balance is enough.
    _, answer = await client.post(debit("r2:1", 10_000))
    assert answer["accepted"] is True and answer["balanceAfterMinor"] == 0


async def test_blocked_player(client: Client, server: WalletServer) -> None:
    server.ledger.block(OP, PLAYER)
    _, answer = await client.post(debit("r1:1", 100))
    assert answer == {"accepted": False, "errorCode": "PLAYER_BLOCKED"}
    assert server.ledger.balance(OP, PLAYER, "EUR") == 10_000


async def test_refusals_carry_the_balance_only_when_switched_on(clock: FakeClock) -> None:
    """Interface 2.9 shows a refusal as exactly {accepted, errorCode}; the switch (argument
    and CLI flag) adds the balance as some wallets do, and a replay answers the same."""
    async with (
        WalletServer({OP: SECRET}, clock=clock, balance_in_refusals=True) as kind,
        aiohttp.ClientSession() as session,
    ):
        kind.ledger.fund(OP, PLAYER, "EUR", 2_000)
        client = Client(session, kind)
        refused = {"accepted": False, "errorCode": "INSUFFICIENT_FUNDS", "balanceAfterMinor": 2_000}
        assert await client.post(debit("r1:1", 2_001)) == (200, refused)
        assert await client.post(debit("r1:1", 2_001)) == (200, refused)
        kind.ledger.block(OP, PLAYER)
        _, blocked = await client.post(debit("r2:1", 10))
        assert blocked == {
            "accepted": False,
            "errorCode": "PLAYER_BLOCKED",
            "balanceAfterMinor": 2_000,
        }
        kind.faults.configure(refuse_with="ACCOUNT_CLOSED", only_types={"wallet.credit"})
        _, credit_refused = await client.post(credit("c1", 5))
        assert credit_refused == {
            "accepted": False,
            "errorCode": "ACCOUNT_CLOSED",
            "balanceAfterMinor": 2_000,
        }
    assert Ledger().balance_in_refusals is False
    assert WalletServer({OP: SECRET}).ledger.balance_in_refusals is False
    assert parse_cli(["--secret", "op=s"]).balance_in_refusals is False
    assert parse_cli(["--secret", "op=s", "--balance-in-refusals"]).balance_in_refusals is True


async def test_answer_fields_put_the_wallet_out_of_contract_on_the_wire_only(
    client: Client, server: WalletServer
) -> None:
    server.faults.configure(answer_fields={"balanceMinor": -5}, only_types={"wallet.balance"})
    assert await client.post(balance_request()) == (200, {"balanceMinor": -5, "currency": "EUR"})
    _, accepted = await client.post(debit("r1:1", 100))
    assert accepted["balanceAfterMinor"] == 9_900
    server.faults.configure(answer_fields={"balanceAfterMinor": 2**70}, times=1)
    _, tampered = await client.post(debit("r2:1", 100))
    assert tampered["balanceAfterMinor"] == 2**70
    assert server.ledger.requests_of("wallet.debit")[-1].fault == "answer_fields"
    _, replay = await client.post(debit("r2:1", 100))  # the ledger kept its own answer
    assert replay["balanceAfterMinor"] == 9_800
    assert server.ledger.balance(OP, PLAYER, "EUR") == 9_800


async def test_credit_adds(client: Client, server: WalletServer) -> None:
    status, answer = await client.post(credit("c1", 1_234))
    assert status == 200
    assert answer["accepted"] is True and answer["balanceAfterMinor"] == 11_234
    assert (await client.post(credit("c1", 1_234)))[1] == answer
    assert server.ledger.balance(OP, PLAYER, "EUR") == 11_234
    assert server.ledger.net_credits() == 1_234


async def test_rollback_of_applied_debit_restores_once(
    client: Client, server: WalletServer
) -> None:
    await client.post(debit("r1:1", 2_500))
    status, answer = await client.post(rollback("rb-1", "r1:1", 2_500))
    assert status == 200
    assert answer["accepted"] is True and answer["balanceAfterMinor"] == 10_000
    assert (await client.post(rollback("rb-1", "r1:1", 2_500)))[1] == answer
    # Another rollback of the same debit is accepted and moves nothing.
    _, again = await client.post(rollback("rb-2", "r1:1", 2_500))
    assert again["accepted"] is True and again["balanceAfterMinor"] == 10_000
    ledger = server.ledger
    assert ledger.balance(OP, PLAYER, "EUR") == 10_000
    assert ledger.rollback_count("r1:1") == 1
    assert ledger.rolled_back_keys() == {"r1:1"}
    assert ledger.applied_debit_keys() == {"r1:1"}
    assert ledger.open_debit_keys() == set()
    assert ledger.net_debits() == 0
    # The debit itself, replayed, still answers its original answer and moves nothing.
    _, replay = await client.post(debit("r1:1", 2_500))
    assert replay["balanceAfterMinor"] == 7_500
    assert ledger.balance(OP, PLAYER, "EUR") == 10_000


async def test_rollback_of_unseen_debit_then_late_debit_refused(
    client: Client, server: WalletServer
) -> None:
    status, answer = await client.post(rollback("rb-1", "r1:1", 2_500))
    assert status == 200
    assert answer["accepted"] is True and answer["balanceAfterMinor"] == 10_000
    assert server.ledger.tombstoned_keys() == {"r1:1"}
    assert server.ledger.rollback_count("r1:1") == 0
    _, late = await client.post(debit("r1:1", 2_500))
    assert late == {"accepted": False, "errorCode": "ROLLED_BACK"}
    assert (await client.post(debit("r1:1", 2_500)))[1] == late
    assert server.ledger.balance(OP, PLAYER, "EUR") == 10_000
    assert server.ledger.applied_debit_keys() == set()
    assert server.ledger.net_debits() == 0


async def test_rollback_of_refused_debit_moves_nothing(
    client: Client, server: WalletServer
) -> None:
    await client.post(debit("r1:1", 20_000))
    _, answer = await client.post(rollback("rb-1", "r1:1", 20_000))
    assert answer["accepted"] is True and answer["balanceAfterMinor"] == 10_000
    assert server.ledger.rollback_count("r1:1") == 0


async def test_operators_are_separate_tenants(client: Client, server: WalletServer) -> None:
    server.ledger.fund(OP2, PLAYER, "EUR", 500)
    _, answer = await client.post(debit("r1:1", 400, op=OP2), secret=SECRET2)
    assert answer["accepted"] is True and answer["balanceAfterMinor"] == 100
    # Same key under op-1 is another transaction.
    _, answer = await client.post(debit("r1:1", 400))
    assert answer["accepted"] is True and answer["balanceAfterMinor"] == 9_600
    assert server.ledger.net_debits(OP) == 400
    assert server.ledger.net_debits(OP2) == 400
    assert server.ledger.net_debits() == 800


async def test_net_debits_accounting(client: Client, server: WalletServer) -> None:
    await client.post(debit("a:1", 1_000))
    await client.post(debit("b:1", 2_000))
    await client.post(debit("c:1", 3_000))
    await client.post(debit("d:1", 99_000))  # refused
    await client.post(rollback("rb-b", "b:1", 2_000))
    await client.post(rollback("rb-x", "x:1", 5_000))  # unseen
    await client.post(credit("cr-1", 700))
    ledger = server.ledger
    assert ledger.net_debits() == 4_000
    assert ledger.net_debits(OP) == 4_000
    assert ledger.net_debits(OP2) == 0
    assert ledger.net_credits() == 700
    assert ledger.applied_debit_keys() == {"a:1", "b:1", "c:1"}
    assert ledger.open_debit_keys() == {"a:1", "c:1"}
    assert ledger.rolled_back_keys() == {"b:1", "x:1"}
    assert ledger.balance(OP, PLAYER, "EUR") == 10_000 - 4_000 + 700


# --------------------------------------------------------------------------- requests


async def test_invalid_body_is_400_and_moves_nothing(client: Client, server: WalletServer) -> None:
    status, answer = await client.post(debit("r1:1", -5))
    assert status == 400 and answer["error"]["code"] == "INVALID_REQUEST"
    status, answer = await client.post({**debit("r1:1", 5), "type": "wallet.steal"})
    assert status == 400 and answer["error"]["code"] == "INVALID_REQUEST"
    assert server.ledger.balance(OP, PLAYER, "EUR") == 10_000


async def test_idempotency_key_header_must_match(client: Client, server: WalletServer) -> None:
    status, answer = await client.post(debit("r1:1", 100), idempotency_key="r1:2")
    assert status == 400 and answer["error"]["code"] == "IDEMPOTENCY_KEY_MISMATCH"
    status, answer = await client.post(debit("r1:1", 100), idempotency_key=None)
    assert status == 400 and answer["error"]["code"] == "IDEMPOTENCY_KEY_MISMATCH"
    assert server.ledger.balance(OP, PLAYER, "EUR") == 10_000
    assert server.ledger.applied_debit_keys() == set()


# --------------------------------------------------------------------------- signing


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"secret": "wrong-secret"}, "INVALID_SIGNATURE"),
        ({"secret": SECRET2}, "INVALID_SIGNATURE"),  # op-2's secret for an op-1 body
        ({"timestamp": NOW + 301}, "TIMESTAMP_SKEW"),
        ({"timestamp": NOW - 301}, "TIMESTAMP_SKEW"),
    ],
)
async def test_bad_signature_refused_and_nothing_moves(
    client: Client, server: WalletServer, change: dict, code: str
) -> None:
    status, answer = await client.post(debit("r1:1", 100), **change)
    assert status == 401
    assert answer["error"]["code"] == code
    assert server.ledger.balance(OP, PLAYER, "EUR") == 10_000
    assert server.ledger.requests == []
    assert server.ledger.auth_failures == [("/wallet", code)]


@pytest.mark.parametrize("skew", [300, -300])
async def test_skew_of_300_seconds_is_accepted(client: Client, skew: int) -> None:
    status, answer = await client.post(debit("r1:1", 100), timestamp=NOW + skew)
    assert status == 200 and answer["accepted"] is True


async def test_tampered_body_is_refused(client: Client, server: WalletServer) -> None:
    raw = json.dumps(debit("r1:1", 100)).encode()
    headers = signed_headers(raw, path="/wallet")
    headers["Idempotency-Key"] = "r1:1"
    tampered = raw.replace(b'"amountMinor": 100', b'"amountMinor": 900')
    async with client.session.post(server.url, data=tampered, headers=headers) as response:
        assert response.status == 401
        assert (await response.json())["error"]["code"] == "INVALID_SIGNATURE"
    assert server.ledger.balance(OP, PLAYER, "EUR") == 10_000


async def test_path_is_part_of_the_signature(client: Client, server: WalletServer) -> None:
    raw = json.dumps(debit("r1:1", 100)).encode()
    headers = {**signed_headers(raw, path="/other"), "Idempotency-Key": "r1:1"}
    async with client.session.post(server.url, data=raw, headers=headers) as response:
        assert response.status == 401
    # The query string is not part of the canonical path.
    headers = {**signed_headers(raw, path="/wallet"), "Idempotency-Key": "r1:1"}
    async with client.session.post(server.url + "?x=1", data=raw, headers=headers) as response:
        assert response.status == 200


async def test_unknown_operator_is_invalid_signature(client: Client, server: WalletServer) -> None:
    server.ledger.fund("op-x", PLAYER, "EUR", 1_000)
    status, answer = await client.post(debit("r1:1", 100, op="op-x"))
    assert status == 401 and answer["error"]["code"] == "INVALID_SIGNATURE"
    assert server.ledger.balance("op-x", PLAYER, "EUR") == 1_000


@pytest.mark.parametrize("missing", ["X-Timestamp", "X-Signature"])
async def test_missing_headers(client: Client, server: WalletServer, missing: str) -> None:
    raw = json.dumps(debit("r1:1", 100)).encode()
    headers = {**signed_headers(raw, path="/wallet"), "Idempotency-Key": "r1:1"}
    del headers[missing]
    async with client.session.post(server.url, data=raw, headers=headers) as response:
        assert response.status == 401
        assert (await response.json())["error"]["code"] == "MISSING_HEADERS"
    assert server.ledger.balance(OP, PLAYER, "EUR") == 10_000


async def test_clock_is_injected(client: Client, clock: FakeClock) -> None:
    clock.now = NOW + 1_000
    status, answer = await client.post(debit("r1:1", 100))
    assert (status, answer["error"]["code"]) == (401, "TIMESTAMP_SKEW")
    status, _ = await client.post(debit("r1:1", 100), timestamp=NOW + 1_000)
    assert status == 200


# --------------------------------------------------------------------------- faults


async def test_stall_times_out_the_client_and_the_late_debit_applies(
    client: Client, server: WalletServer
) -> None:
    server.faults.configure(stall_seconds=0.3)
    with pytest.raises(TimeoutError):
        await client.post(debit("r1:1", 100), timeout=0.1)
    # Not applied yet: the wallet is still sleeping before it applies.
    assert server.ledger.balance(OP, PLAYER, "EUR") == 10_000
    await eventually(lambda: all_answered(server))
    assert server.ledger.balance(OP, PLAYER, "EUR") == 9_900
    assert server.ledger.requests[0].fault == "stall"


async def test_rollback_overtaking_a_stalled_debit_wins(
    client: Client, server: WalletServer
) -> None:
    server.faults.configure(stall_seconds=0.3, only_types={"wallet.debit"})
    with pytest.raises(TimeoutError):
        await client.post(debit("r1:1", 100), timeout=0.1)
    status, answer = await client.post(rollback("rb-1", "r1:1", 100), timeout=1.0)
    assert status == 200 and answer["accepted"] is True
    await eventually(lambda: all_answered(server))
    late = server.ledger.requests_of("wallet.debit")[0]
    assert late.answer == {"accepted": False, "errorCode": "ROLLED_BACK"}
    assert server.ledger.balance(OP, PLAYER, "EUR") == 10_000
    assert server.ledger.net_debits() == 0


async def test_stall_after_apply_moves_money_but_the_answer_is_lost(
    client: Client, server: WalletServer
) -> None:
    server.faults.configure(stall_seconds=0.3, stall_after_apply=True)
    with pytest.raises(TimeoutError):
        await client.post(debit("r1:1", 100), timeout=0.1)
    assert server.ledger.balance(OP, PLAYER, "EUR") == 9_900
    assert server.ledger.applied_debit_keys() == {"r1:1"}
    await eventually(lambda: all_answered(server))
    server.faults.reset()
    # The platform's rollback gives it back.
    _, answer = await client.post(rollback("rb-1", "r1:1", 100))
    assert answer["balanceAfterMinor"] == 10_000
    assert server.ledger.rollback_count("r1:1") == 1


@pytest.mark.parametrize("status_code", [500, 503])
async def test_5xx_applies_nothing(client: Client, server: WalletServer, status_code: int) -> None:
    server.faults.configure(status_5xx=status_code, times=1)
    status, _ = await client.post(debit("r1:1", 100))
    assert status == status_code
    assert server.ledger.balance(OP, PLAYER, "EUR") == 10_000
    assert server.ledger.applied_debit_keys() == set()
    # times=1: the next call goes through, and the key was never seen.
    status, answer = await client.post(debit("r1:1", 100))
    assert status == 200 and answer["balanceAfterMinor"] == 9_900
    assert server.faults.hits == 1


async def test_5xx_after_apply(client: Client, server: WalletServer) -> None:
    server.faults.configure(status_5xx=500, error_after_apply=True)
    status, _ = await client.post(debit("r1:1", 100))
    assert status == 500
    assert server.ledger.balance(OP, PLAYER, "EUR") == 9_900


async def test_non_json_answer(client: Client, server: WalletServer) -> None:
    server.faults.configure(non_json=True)
    status, answer = await client.post(debit("r1:1", 100))
    assert status == 200
    assert isinstance(answer, str)
    with pytest.raises(ValueError):
        json.loads(answer)
    assert server.ledger.balance(OP, PLAYER, "EUR") == 10_000
    server.faults.configure(non_json=True, error_after_apply=True)
    status, answer = await client.post(debit("r2:1", 100))
    assert status == 200 and isinstance(answer, str)
    assert server.ledger.balance(OP, PLAYER, "EUR") == 9_900


async def test_refuse_with_refuses_debits_only(client: Client, server: WalletServer) -> None:
    server.faults.configure(refuse_with="RESPONSIBLE_GAMING_LIMIT")
    _, answer = await client.post(debit("r1:1", 100))
    assert answer == {"accepted": False, "errorCode": "RESPONSIBLE_GAMING_LIMIT"}
    _, answer = await client.post(credit("c1", 100))
    assert answer["accepted"] is True
    _, answer = await client.post(balance_request())
    assert answer == {"balanceMinor": 10_100, "currency": "EUR"}
    assert server.faults.hits == 1


async def test_refuse_credits_when_selected(client: Client, server: WalletServer) -> None:
    server.faults.configure(refuse_with="ACCOUNT_CLOSED", only_types={"wallet.credit"})
    _, answer = await client.post(credit("c1", 100))
    assert answer["errorCode"] == "ACCOUNT_CLOSED"
    server.faults.reset()
    # A refused credit is not remembered: the retry with the same key is fresh.
    _, answer = await client.post(credit("c1", 100))
    assert answer["accepted"] is True and answer["balanceAfterMinor"] == 10_100


async def test_fault_limited_to_debits_lets_rollbacks_through(
    client: Client, server: WalletServer
) -> None:
    server.faults.configure(status_5xx=503, only_types={"wallet.debit"})
    assert (await client.post(debit("r1:1", 100)))[0] == 503
    status, answer = await client.post(rollback("rb-1", "r1:1", 100))
    assert status == 200 and answer["accepted"] is True
    assert (await client.post(balance_request()))[0] == 200


async def test_fault_for_the_next_n_requests(client: Client, server: WalletServer) -> None:
    server.faults.configure(status_5xx=503, only_types={"wallet.rollback"}, times=2)
    await client.post(debit("r1:1", 100))
    statuses = [(await client.post(rollback("rb-1", "r1:1", 100)))[0] for _ in range(3)]
    assert statuses == [503, 503, 200]
    assert server.faults.times == 0
    assert server.ledger.rollback_count("r1:1") == 1
    assert [r.fault for r in server.ledger.requests_of("wallet.rollback")] == ["5xx", "5xx", None]


def test_configure_rejects_unknown_knobs() -> None:
    with pytest.raises(TypeError):
        Faults().configure(stall=1)
    with pytest.raises(ValueError):
        Faults().configure(status_5xx=404)


# --------------------------------------------------------------------------- webhooks


def webhook_body(event_id: str, *, op: str = OP) -> dict:
    return {
        "id": event_id,
        "type": "round_settled",
        "createdAt": "2023-11-14T22:13:20Z",
        "operatorId": op,
        "playerExternalId": PLAYER,
        "data": {"round": {"publicId": "r1"}, "wonItem": None, "stake": None, "facts": {}},
    }


async def test_webhook_receiver_stores_verified_bodies(
    client: Client, server: WalletServer
) -> None:
    body = webhook_body("evt-1")
    status, answer = await client.post(body, url=server.webhook_url)
    assert (status, answer) == (200, {})
    assert server.ledger.received_webhooks == [body]


async def test_webhook_receiver_refuses_bad_signatures(
    client: Client, server: WalletServer
) -> None:
    status, answer = await client.post(webhook_body("evt-1"), url=server.webhook_url, secret="x")
    assert status == 401 and answer["error"]["code"] == "INVALID_SIGNATURE"
    raw = json.dumps(webhook_body("evt-2")).encode()
    headers = signed_headers(raw, path="/wallet")  # signed for another path
    async with client.session.post(server.webhook_url, data=raw, headers=headers) as response:
        assert response.status == 401
    assert server.ledger.received_webhooks == []


async def test_webhook_status_fault(client: Client, server: WalletServer) -> None:
    server.faults.configure(webhook_status=503, webhook_times=2)
    statuses = [
        (await client.post(webhook_body("evt-1"), url=server.webhook_url))[0] for _ in range(3)
    ]
    assert statuses == [503, 503, 200]
    assert [w["id"] for w in server.ledger.received_webhooks] == ["evt-1"]
    assert server.ledger.webhook_attempts == 3


# --------------------------------------------------------------------------- threaded


def _sync_post(url: str, body: dict, secret: str) -> tuple[int, dict]:
    raw = json.dumps(body).encode()
    headers = signed_headers(raw, path="/wallet", secret=secret, timestamp=int(time.time()))
    headers["Idempotency-Key"] = body["idempotencyKey"]
    request = urllib.request.Request(url, data=raw, headers=headers, method="POST")  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_threaded_server_for_sync_code() -> None:
    with ThreadedWalletServer({OP: SECRET}) as wallet:
        assert wallet.url.startswith("http://127.0.0.1:")
        wallet.ledger.fund(OP, PLAYER, "EUR", 1_000)
        status, answer = _sync_post(wallet.url, debit("r1:1", 300), SECRET)
        assert status == 200 and answer["balanceAfterMinor"] == 700
        wallet.faults.configure(status_5xx=503)
        status, _ = _sync_post(wallet.url, debit("r2:1", 300), SECRET)
        assert status == 503
        status, answer = _sync_post(wallet.url, debit("r3:1", 300), "bad")
        assert (status, answer["error"]["code"]) == (401, "INVALID_SIGNATURE")
        assert wallet.ledger.net_debits() == 300

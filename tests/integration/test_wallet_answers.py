"""Wallet answers as interface 2.9 shows them, and read as untrusted input (decisions 4).

The reference wallet refuses exactly as the interface shows, ``{accepted: false,
errorCode}``, with no balance: the platform reads the balance with one signed
``wallet.balance`` call and records it with the voided round. Codes are the wallet's own.
Out-of-contract numbers (a negative balance, one beyond int64, a float) are unreadable.
Real SQLite and PostgreSQL, the real reference wallet on loopback, real HTTP.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import httpx
import pytest

from application.clock import ManualClock, iso_utc
from application.platform import Platform
from application.wallet.balances import SESSION_INIT_BALANCE_SECONDS
from domain.ids import round_id
from ops.reference_operator.wallet import ReceivedRequest, ThreadedWalletServer, check_signature
from tests.support.config import OUTBOUND
from tests.support.ledger import open_uncertain_attempts, settled_balance_bets
from tests.support.live import Api
from tests.support.waiting import wait_until

WALLET_TIMEOUT = 1.0  # the `platform` fixture's wallet_timeout_seconds
MARGIN = 0.75  # time the platform may take beyond a wallet wait (store commits, HTTP)
OP = "op-a"
KEY_B = {"key_id": "key-b", "secret": "secret-b-1"}
STALL = 2.0  # longer than every wait of the platform on the wallet (1 s) plus MARGIN


@pytest.fixture(autouse=True)
def money_invariant(platform: Platform, wallet: ThreadedWalletServer, api: Api) -> Iterator[None]:
    """After the test (the server still up): no rollback owed, debits match bets, and the
    wallet has answered every call (a stalled one is not left to die with its loop)."""
    yield
    wait_until(
        lambda: all(r.http_status is not None for r in wallet.ledger.requests),
        timeout=STALL + 5,
        what="every wallet call answered",
    )
    wait_until(lambda: open_uncertain_attempts(platform) == 0, timeout=15, what="no open rollbacks")
    assert wallet.ledger.net_debits(OP) == settled_balance_bets(platform, OP)


def _init(api: Api, player: str, **key: str) -> httpx.Response:
    body = json.dumps({"playerExternalId": player, "gameKey": "upgrader", "target": {}})
    launch = api.s2s("POST", "/api/s2s/launches", body.encode(), **key)
    assert launch.status_code == 200, launch.text
    return api.http.post(
        "/api/play/session/init", json={"launchToken": launch.json()["launchToken"]}
    )


def _token(api: Api, player: str, **key: str) -> str:
    init = _init(api, player, **key)
    assert init.status_code == 200, init.text
    return init.json()["sessionToken"]


def _play(api: Api, how: str, player: str, action: str, wager: int = 1000) -> httpx.Response:
    """A balance play at 5000 bps aiming at item 7 (band [1710, 1900] for W=1000)."""
    body = {"clientActionId": action, "wagerMinor": wager, "chanceBps": 5000, "targetItemId": 7}
    if how == "s2s":
        raw = json.dumps({"playerExternalId": player, **body}).encode()
        return api.s2s("POST", "/api/s2s/upgrader/play", raw)
    return api.play("POST", "/api/play/upgrader/play", how, json=body)


def _balance_reads(wallet: ThreadedWalletServer) -> list[ReceivedRequest]:
    return wallet.ledger.requests_of("wallet.balance")


def _assert_signed_balance_read(
    read: ReceivedRequest, clock: ManualClock, player: str, operator_id: str = OP
) -> None:
    """Checked again with the reference wallet's own verifier: the outbound envelope over
    the exact bytes, keyed with the operator's outbound secret; no Idempotency-Key."""
    body, failure = check_signature(
        "POST",
        read.path,
        read.headers.get("X-Timestamp"),
        read.headers.get("X-Signature"),
        read.raw,
        OUTBOUND,
    )
    assert failure is None
    assert body == {
        "type": "wallet.balance",
        "operatorId": operator_id,
        "requestedAt": iso_utc(clock.now()),
        "playerExternalId": player,
        "currency": "EUR",
    }
    assert sorted(read.headers) == ["X-Signature", "X-Timestamp"]
    forged = check_signature(
        "POST", read.path, read.headers["X-Timestamp"], "0" * 64, read.raw, OUTBOUND
    )
    assert forged == (None, "INVALID_SIGNATURE")


def _refuse(wallet: ThreadedWalletServer, player: str, code: str) -> int:
    """Make the wallet refuse ``player``'s next debit of 1000 with ``code``; the balance."""
    if code == "INSUFFICIENT_FUNDS":
        wallet.ledger.fund(OP, player, "EUR", 700)
        return 700
    wallet.ledger.fund(OP, player, "EUR", 5000)
    if code == "PLAYER_BLOCKED":
        wallet.ledger.block(OP, player)
    else:
        wallet.faults.configure(refuse_with=code, only_types={"wallet.debit"})
    return 5000


# -- a refused debit's balance ---------------------------------------------------------------


@pytest.mark.parametrize("api_kind", ["s2s", "player"])
@pytest.mark.parametrize(
    ("code", "status"),
    [("INSUFFICIENT_FUNDS", 422), ("PLAYER_BLOCKED", 403), ("LIMIT_REACHED", 422)],
)
def test_a_refusal_without_a_balance_answers_the_balance_read_with_one_signed_call(
    api: Api,
    wallet: ThreadedWalletServer,
    platform: Platform,
    clock: ManualClock,
    api_kind: str,
    code: str,
    status: int,
) -> None:
    player = f"ref-{code.lower()}"
    how = "s2s" if api_kind == "s2s" else _token(api, player)
    reads_before = len(_balance_reads(wallet))
    balance = _refuse(wallet, player, code)
    refused = _play(api, how, player, "a-1")
    answer = refused.json()
    public_id = answer["round"]["publicId"]
    assert (refused.status_code, answer) == (
        status,
        {
            "error": {"code": code, "message": answer["error"]["message"]},
            "round": {"publicId": public_id, "status": "voided"},
            "balanceAfterMinor": balance,
        },
    )
    (debit,) = wallet.ledger.requests_of("wallet.debit")
    assert debit.answer == {"accepted": False, "errorCode": code}  # interface 2.9, exactly
    reads = _balance_reads(wallet)[reads_before:]
    assert len(reads) == 1
    _assert_signed_balance_read(reads[0], clock, player)
    # recorded with the voided round: a retry answers the same bytes and asks nothing
    voided = platform.events.repository.get(round_id(OP, player, "a-1"))
    assert voided.voiding["balance_after_minor"] == balance
    calls = len(wallet.ledger.requests)
    wallet.ledger.fund(OP, player, "EUR", 1)
    again = _play(api, how, player, "a-1")
    assert (again.status_code, again.content) == (status, refused.content)
    assert len(wallet.ledger.requests) == calls


@pytest.mark.parametrize("api_kind", ["s2s", "player"])
def test_a_balance_read_that_times_out_answers_null_within_the_wallet_timeout(
    api: Api, wallet: ThreadedWalletServer, platform: Platform, api_kind: str
) -> None:
    player = f"slow-{api_kind}"
    how = "s2s" if api_kind == "s2s" else _token(api, player)
    wallet.faults.configure(stall_seconds=STALL, only_types={"wallet.balance"})
    started = time.monotonic()
    refused = _play(api, how, player, "a-1")
    elapsed = time.monotonic() - started
    assert elapsed < WALLET_TIMEOUT + MARGIN
    (read,) = _balance_reads(wallet)[-1:]
    assert read.http_status is None  # still stalled: the platform stopped waiting
    assert refused.status_code == 422
    assert refused.json()["error"]["code"] == "INSUFFICIENT_FUNDS"
    assert refused.json()["balanceAfterMinor"] is None
    voided = platform.events.repository.get(round_id(OP, player, "a-1"))
    assert voided.voiding["balance_after_minor"] is None
    again = _play(api, how, player, "a-1")
    assert (again.status_code, again.content) == (422, refused.content)
    assert len(wallet.ledger.requests_of("wallet.debit")) == 1


def test_a_refusal_that_carries_a_balance_is_taken_at_its_word(
    api: Api, wallet: ThreadedWalletServer
) -> None:
    wallet.ledger.balance_in_refusals = True  # the reference wallet's switch
    wallet.ledger.fund(OP, "kind-1", "EUR", 640)
    refused = _play(api, "s2s", "kind-1", "a-1")
    assert (refused.status_code, refused.json()["balanceAfterMinor"]) == (422, 640)
    assert wallet.ledger.requests_of("wallet.debit")[0].answer == {
        "accepted": False,
        "errorCode": "INSUFFICIENT_FUNDS",
        "balanceAfterMinor": 640,
    }
    # a strict refusal with the other spelling, balanceMinor, is taken too
    wallet.ledger.balance_in_refusals = False
    wallet.faults.configure(answer_fields={"balanceMinor": 321}, only_types={"wallet.debit"})
    other = _play(api, "s2s", "kind-2", "a-1")
    assert (other.status_code, other.json()["balanceAfterMinor"]) == (422, 321)
    assert _balance_reads(wallet) == []


# Values a wallet might send where a balance belongs: none is one (tests/unit covers more).
NOT_BALANCES = [-5, 2**63, 2**70, 12.5, "640", True]


def test_a_refusal_whose_balance_is_not_a_balance_falls_back_to_the_read(
    api: Api, wallet: ThreadedWalletServer
) -> None:
    for n, bad in enumerate(NOT_BALANCES):
        player = f"odd-{n}"
        wallet.ledger.fund(OP, player, "EUR", 640 + n)
        wallet.faults.configure(
            answer_fields={"balanceAfterMinor": bad}, only_types={"wallet.debit"}
        )
        refused = _play(api, "s2s", player, "a-1")
        assert refused.json()["error"]["code"] == "INSUFFICIENT_FUNDS", bad
        assert wallet.ledger.requests_of("wallet.debit")[-1].answer["balanceAfterMinor"] == bad
        assert refused.json()["balanceAfterMinor"] == 640 + n, bad
        assert len(_balance_reads(wallet)) == n + 1


# -- the wallet's own codes --------------------------------------------------------------------


def test_the_wallets_own_code_is_the_answers_code_unless_malformed(
    api: Api, wallet: ThreadedWalletServer, platform: Platform
) -> None:
    cases = [
        ("LIMIT_REACHED", "LIMIT_REACHED"),
        ("X" * 64, "X" * 64),
        ("limit reached!", "WALLET_REFUSED"),
        ("limit_reached", "WALLET_REFUSED"),
        ("X" * 65, "WALLET_REFUSED"),
        ("1LIMIT", "WALLET_REFUSED"),
        ("LIMIT-REACHED", "WALLET_REFUSED"),
        ("X" * 5000, "WALLET_REFUSED"),
    ]
    wallet.ledger.fund(OP, "codes-1", "EUR", 5000)
    for n, (wallet_code, code) in enumerate(cases):
        wallet.faults.configure(refuse_with=wallet_code, only_types={"wallet.debit"})
        refused = _play(api, "s2s", "codes-1", f"a-{n}")
        assert refused.status_code == 422, wallet_code
        assert refused.json()["error"]["code"] == code, wallet_code
        assert refused.json()["round"]["status"] == "voided"
        assert refused.json()["balanceAfterMinor"] == 5000
        if code == "WALLET_REFUSED":  # a malformed code is not echoed anywhere
            assert wallet_code not in refused.text
        again = _play(api, "s2s", "codes-1", f"a-{n}")
        assert again.content == refused.content
        voided = platform.events.repository.get(round_id(OP, "codes-1", f"a-{n}"))
        assert voided.voiding["error_code"] == wallet_code[:128]  # what is kept of it


# -- wallet answers as untrusted input ---------------------------------------------------------


def test_an_accepted_debit_with_an_unreadable_balance_is_uncertain_and_rolled_back(
    api: Api, wallet: ThreadedWalletServer
) -> None:
    wallet.ledger.fund(OP, "bad-1", "EUR", 5000)
    for n, bad in enumerate(NOT_BALANCES):
        wallet.faults.configure(
            answer_fields={"balanceAfterMinor": bad}, only_types={"wallet.debit"}, times=1
        )
        response = _play(api, "s2s", "bad-1", f"a-{n}")
        assert response.status_code == 503, bad
        assert response.json()["error"]["code"] == "WALLET_UNAVAILABLE"
        debit = wallet.ledger.requests_of("wallet.debit")[-1]
        assert debit.answer["accepted"] is True  # the wallet took it, but said nonsense
        wait_until(
            lambda key=debit.idempotency_key: wallet.ledger.rollback_count(key, OP) == 1,
            timeout=15,
            what="the debit rolled back",
        )
        assert wallet.ledger.balance(OP, "bad-1", "EUR") == 5000
    # a retry makes the next attempt, which the wallet now answers in contract
    retried = _play(api, "s2s", "bad-1", "a-0")
    assert retried.status_code == 200, retried.text
    assert retried.json()["balanceAfterMinor"] == 4000


def test_the_largest_int64_balance_is_a_balance(api: Api, wallet: ThreadedWalletServer) -> None:
    wallet.ledger.fund(OP, "rich-1", "EUR", 2**63 - 1 + 1000)
    played = _play(api, "s2s", "rich-1", "a-1")
    assert played.status_code == 200, played.text
    assert played.json()["balanceAfterMinor"] == 2**63 - 1
    token = _token(api, "rich-1")
    read = api.play("GET", "/api/play/balance", token)
    assert read.json() == {"balanceMinor": 2**63 - 1, "currency": "EUR"}


def test_a_balance_answer_out_of_contract_is_a_failed_read(
    api: Api, wallet: ThreadedWalletServer
) -> None:
    cases = [{"balanceMinor": bad} for bad in [*NOT_BALANCES, None]] + [{"currency": "USD"}]
    for n, answer_fields in enumerate(cases):
        player = f"liar-{n}"
        wallet.ledger.fund(OP, player, "EUR", 640)
        wallet.faults.configure(answer_fields=answer_fields, only_types={"wallet.balance"})
        init = _init(api, player)
        assert init.status_code == 200
        assert init.json()["balance"] is None, answer_fields
        token = init.json()["sessionToken"]
        read = api.play("GET", "/api/play/balance", token)
        assert (read.status_code, read.json()["error"]["code"]) == (503, "WALLET_UNAVAILABLE")
        refused = _play(api, token, player, "a-1")
        assert refused.json()["error"]["code"] == "INSUFFICIENT_FUNDS"
        assert refused.json()["balanceAfterMinor"] is None, answer_fields
        assert len(_balance_reads(wallet)) == 3 * (n + 1)


# -- players see their balance -------------------------------------------------------------------


def test_a_player_reads_their_own_balance_and_nobody_elses(
    api: Api, wallet: ThreadedWalletServer, clock: ManualClock
) -> None:
    wallet.ledger.fund(OP, "bal-1", "EUR", 12_345)
    wallet.ledger.fund(OP, "bal-1", "USD", 678)
    wallet.ledger.fund(OP, "bal-2", "EUR", 1)
    wallet.ledger.fund("op-b", "bal-1", "EUR", 99)
    init = _init(api, "bal-1")
    assert init.json()["balance"] == {"balanceMinor": 12_345, "currency": "EUR"}
    _assert_signed_balance_read(_balance_reads(wallet)[-1], clock, "bal-1")
    token = init.json()["sessionToken"]
    assert api.play("GET", "/api/play/balance", token).json() == {
        "balanceMinor": 12_345,
        "currency": "EUR",
    }
    usd = api.play("GET", "/api/play/balance", token, params={"currency": "USD"})
    assert usd.json() == {"balanceMinor": 678, "currency": "USD"}
    assert _balance_reads(wallet)[-1].body["currency"] == "USD"
    calls = len(wallet.ledger.requests)
    gbp = api.play("GET", "/api/play/balance", token, params={"currency": "GBP"})
    assert (gbp.status_code, gbp.json()["error"]["code"]) == (422, "UNSUPPORTED_CURRENCY")
    assert len(wallet.ledger.requests) == calls  # refused before the wallet is asked
    # another player, and the same name under another operator, see their own
    other = _init(api, "bal-2")
    assert other.json()["balance"] == {"balanceMinor": 1, "currency": "EUR"}
    other_read = api.play("GET", "/api/play/balance", other.json()["sessionToken"])
    assert other_read.json() == {"balanceMinor": 1, "currency": "EUR"}
    namesake = _init(api, "bal-1", **KEY_B)
    assert namesake.json()["balance"] == {"balanceMinor": 99, "currency": "EUR"}
    namesake_read = api.play("GET", "/api/play/balance", namesake.json()["sessionToken"])
    assert namesake_read.json() == {"balanceMinor": 99, "currency": "EUR"}
    _assert_signed_balance_read(_balance_reads(wallet)[-1], clock, "bal-1", "op-b")
    # after a play the read shows the debit; without a session there is nothing to read
    assert _play(api, token, "bal-1", "a-1").json()["balanceAfterMinor"] == 11_345
    after = api.play("GET", "/api/play/balance", token)
    assert after.json() == {"balanceMinor": 11_345, "currency": "EUR"}
    anonymous = api.http.get("/api/play/balance")
    assert (anonymous.status_code, anonymous.json()["error"]["code"]) == (401, "SESSION_INVALID")


def test_a_slow_wallet_delays_session_init_by_at_most_its_bound(
    api: Api, wallet: ThreadedWalletServer
) -> None:
    wallet.ledger.fund(OP, "late-1", "EUR", 5000)
    wallet.faults.configure(stall_seconds=STALL, only_types={"wallet.balance"})
    started = time.monotonic()
    init = _init(api, "late-1")
    elapsed = time.monotonic() - started
    assert init.status_code == 200
    assert init.json()["balance"] is None
    assert elapsed < SESSION_INIT_BALANCE_SECONDS + MARGIN
    token = init.json()["sessionToken"]
    started = time.monotonic()
    read = api.play("GET", "/api/play/balance", token)
    assert (read.status_code, read.json()["error"]["code"]) == (503, "WALLET_UNAVAILABLE")
    assert time.monotonic() - started < WALLET_TIMEOUT + MARGIN
    wallet.faults.reset()
    assert api.play("GET", "/api/play/balance", token).json()["balanceMinor"] == 5000


@pytest.mark.parametrize("move", ["accepted", "refused"])
def test_an_answer_larger_than_64_kib_is_unreadable(
    api: Api, wallet: ThreadedWalletServer, move: str
) -> None:
    wallet.ledger.fund(OP, "big-1", "EUR", 5000 if move == "accepted" else 0)
    wallet.faults.configure(
        answer_fields={"padding": "x" * 65_536}, only_types={"wallet.debit"}, times=1
    )
    response = _play(api, "s2s", "big-1", "a-1")
    assert (response.status_code, response.json()["error"]["code"]) == (503, "WALLET_UNAVAILABLE")
    (debit,) = wallet.ledger.requests_of("wallet.debit")
    assert debit.answer["accepted"] is (move == "accepted")
    wait_until(
        lambda: wallet.ledger.rolled_back_keys(OP) == {debit.idempotency_key},
        timeout=15,
        what="the debit rolled back",
    )
    assert wallet.ledger.balance(OP, "big-1", "EUR") == (5000 if move == "accepted" else 0)

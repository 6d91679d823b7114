"""Balance-mode money paths against the real reference wallet on loopback.

After every test the wallet's net debits equal the bets of settled rounds.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import pytest

from application.clock import ManualClock
from application.platform import Platform
from domain.round import Round
from ops.reference_operator.wallet import ThreadedWalletServer
from tests.support.ledger import open_uncertain_attempts, settled_balance_bets
from tests.support.live import Api
from tests.support.waiting import wait_until

WALLET_TIMEOUT = 1.0  # the `platform` fixture's wallet_timeout_seconds


@pytest.fixture(autouse=True)
def money_invariant(platform: Platform, wallet: ThreadedWalletServer, api: Api) -> Iterator[None]:
    """After the test (the server still up): no rollback owed, and debits match bets."""
    yield
    wait_until(lambda: open_uncertain_attempts(platform) == 0, timeout=15, what="no open rollbacks")
    assert wallet.ledger.net_debits("op-a") == settled_balance_bets(platform, "op-a")


def _body(
    action: str,
    player: str = "p-1",
    wager: int = 1000,
    chance: int = 5000,
    target: int = 7,
    **extra: object,
) -> bytes:
    return json.dumps(
        {
            "playerExternalId": player,
            "clientActionId": action,
            "wagerMinor": wager,
            "chanceBps": chance,
            "targetItemId": target,
            **extra,
        }
    ).encode()


def _play(api: Api, body: bytes):
    return api.s2s("POST", "/api/s2s/upgrader/play", body)


def _debits(wallet: ThreadedWalletServer) -> list:
    return wallet.ledger.requests_of("wallet.debit")


def test_accepted_debit_settles_with_the_wallets_balance(api: Api, wallet) -> None:
    wallet.ledger.fund("op-a", "p-1", "EUR", 100_000)
    response = _play(api, _body("a-1"))
    assert response.status_code == 200
    answer = response.json()
    assert answer["balanceAfterMinor"] == 99_000
    assert answer["round"]["betMinor"] == 1000
    assert answer["facts"]["deal"]["stakeCountedMinor"] == 1000
    debit = _debits(wallet)[0]
    assert debit.body["amountMinor"] == 1000
    assert debit.body["currency"] == "EUR"
    assert debit.body["reason"] == "upgrader.wager"
    assert debit.idempotency_key == f"{answer['round']['publicId']}:1"
    assert debit.body["roundId"] == answer["round"]["publicId"]


def test_a_foreign_currency_round_debits_in_that_currency(api: Api, wallet) -> None:
    wallet.ledger.fund("op-a", "p-1", "USD", 5000)
    answer = _play(api, _body("usd", wager=1100, currency="USD")).json()
    assert answer["round"]["currency"] == "USD"
    assert answer["round"]["target"]["valueMinor"] == 2090
    assert answer["balanceAfterMinor"] == 3900
    assert _debits(wallet)[0].body["currency"] == "USD"


@pytest.mark.parametrize(
    ("setup", "status", "code"),
    [
        ("unfunded", 422, "INSUFFICIENT_FUNDS"),
        ("blocked", 403, "PLAYER_BLOCKED"),
        ("limit", 422, "DAILY_LIMIT"),
    ],
)
def test_every_refusal_voids_the_round_and_moves_nothing(
    api: Api, wallet, setup: str, status: int, code: str
) -> None:
    if setup == "blocked":
        wallet.ledger.fund("op-a", "p-1", "EUR", 100_000)
        wallet.ledger.block("op-a", "p-1")
    if setup == "limit":
        wallet.ledger.fund("op-a", "p-1", "EUR", 100_000)
        wallet.faults.configure(refuse_with="DAILY_LIMIT")
    response = _play(api, _body("refused"))
    body = response.json()
    assert response.status_code == status
    assert body["error"]["code"] == code
    assert body["round"]["status"] == "voided"
    assert body["round"]["publicId"].startswith("r_")
    assert body["balanceAfterMinor"] == (0 if setup == "unfunded" else 100_000)
    if setup == "limit":
        assert "DAILY_LIMIT" in body["error"]["message"]
    again = _play(api, _body("refused"))
    assert again.content == response.content
    assert len(_debits(wallet)) == 1
    assert wallet.ledger.rolled_back_keys("op-a") == set()


@pytest.mark.parametrize(
    ("fault", "applied"),
    [
        ({"stall_seconds": 2.5, "stall_after_apply": True}, True),
        ({"stall_seconds": 2.5}, False),
        ({"status_5xx": 503}, False),
        ({"status_5xx": 500, "error_after_apply": True}, True),
        ({"non_json": True}, False),
        ({"non_json": True, "error_after_apply": True}, True),
    ],
    ids=["stall-applied", "stall", "503", "500-applied", "non-json", "non-json-applied"],
)
def test_an_uncertain_debit_answers_503_and_is_rolled_back_once(
    api: Api, wallet, fault: dict, applied: bool
) -> None:
    wallet.ledger.fund("op-a", "p-1", "EUR", 100_000)
    wallet.faults.configure(only_types={"wallet.debit"}, times=1, **fault)
    started = time.monotonic()
    response = _play(api, _body("uncertain"))
    elapsed = time.monotonic() - started
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "WALLET_UNAVAILABLE"
    assert elapsed < WALLET_TIMEOUT + 1.0
    key = _debits(wallet)[0].idempotency_key
    wait_until(lambda: key in wallet.ledger.rolled_back_keys("op-a"), what="rollback")
    rollbacks = wallet.ledger.requests_of("wallet.rollback")
    assert [r.body["originalIdempotencyKey"] for r in rollbacks] == [key]
    assert rollbacks[0].body["amountMinor"] == 1000
    assert wallet.ledger.rollback_count(key) == (1 if applied else 0)
    if fault.get("stall_seconds") and not applied:
        # the stalled debit reaches the ledger late and meets the rollback's tombstone
        wait_until(lambda: _debits(wallet)[0].http_status is not None, what="late debit")
    assert wallet.ledger.net_debits("op-a") == 0
    assert wallet.ledger.balance("op-a", "p-1", "EUR") == 100_000


def test_a_retry_after_an_uncertain_debit_uses_the_next_attempt_key(api: Api, wallet) -> None:
    wallet.ledger.fund("op-a", "p-1", "EUR", 100_000)
    wallet.faults.configure(only_types={"wallet.debit"}, times=1, status_5xx=503)
    assert _play(api, _body("retry")).status_code == 503
    first_key = _debits(wallet)[0].idempotency_key
    wait_until(lambda: first_key in wallet.ledger.rolled_back_keys("op-a"), what="rollback")
    # the wallet applied the rollback; until the platform has recorded its answer, a retry
    # answers 409 ACTION_IN_PROGRESS and moves nothing, then it plays with attempt 2
    answers = []

    def retried() -> bool:
        answers.append(_play(api, _body("retry")))
        return answers[-1].status_code != 409

    wait_until(retried, what="a retry past the recorded rollback")
    *waiting, settled = answers
    assert [(a.status_code, a.json()["error"]["code"]) for a in waiting] == [
        (409, "ACTION_IN_PROGRESS")
    ] * len(waiting)
    assert settled.status_code == 200
    public_id = settled.json()["round"]["publicId"]
    assert first_key == f"{public_id}:1"
    assert [d.idempotency_key for d in _debits(wallet)] == [first_key, f"{public_id}:2"]
    assert _play(api, _body("retry")).content == settled.content
    assert wallet.ledger.net_debits("op-a") == 1000


def test_a_failing_rollback_is_retried_with_backoff_until_acknowledged(
    api: Api, wallet, clock: ManualClock
) -> None:
    wallet.ledger.fund("op-a", "p-1", "EUR", 100_000)
    wallet.faults.configure(
        status_5xx=503, error_after_apply=True, only_types={"wallet.debit"}, times=1
    )
    assert _play(api, _body("rb")).status_code == 503
    wallet.faults.configure(status_5xx=503, only_types={"wallet.rollback"}, times=3)
    key = _debits(wallet)[0].idempotency_key
    wait_until(
        lambda: len(wallet.ledger.requests_of("wallet.rollback")) == 3,
        what="3 failures",
        tick=lambda: clock.advance(61),
    )
    wait_until(
        lambda: key in wallet.ledger.rolled_back_keys("op-a"),
        what="acknowledged",
        tick=lambda: clock.advance(61),
    )
    rollbacks = wallet.ledger.requests_of("wallet.rollback")
    assert [r.http_status for r in rollbacks] == [503, 503, 503, 200]
    assert {r.idempotency_key for r in rollbacks} == {f"{key}:rollback"}
    assert wallet.ledger.rollback_count(key) == 1
    assert wallet.ledger.net_debits("op-a") == 0


def test_sequential_retries_of_one_action_debit_once(api: Api, wallet) -> None:
    wallet.ledger.fund("op-a", "p-1", "EUR", 100_000)
    answers = {_play(api, _body("seq")).content for _ in range(5)}
    assert len(answers) == 1
    assert len(_debits(wallet)) == 1


def test_concurrent_duplicates_of_one_action_debit_once(api: Api, wallet) -> None:
    wallet.ledger.fund("op-a", "p-1", "EUR", 100_000)
    wallet.faults.configure(stall_seconds=0.3, only_types={"wallet.debit"}, times=1)
    results: list = [None] * 8
    barrier = threading.Barrier(8)

    def worker(index: int) -> None:
        client = Api(api.http.base_url.__str__().rstrip("/"), api.clock)
        barrier.wait()
        results[index] = _play(client, _body("dup"))
        client.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert {r.status_code for r in results} == {200}
    assert len({r.content for r in results}) == 1
    assert len(_debits(wallet)) == 1


def test_concurrent_actions_of_one_player_take_consecutive_nonces(api: Api, wallet) -> None:
    wallet.ledger.fund("op-a", "p-1", "EUR", 100_000)
    results: list = [None] * 8
    barrier = threading.Barrier(8)

    def worker(index: int) -> None:
        client = Api(str(api.http.base_url).rstrip("/"), api.clock)
        barrier.wait()
        results[index] = _play(client, _body(f"par-{index}"))
        client.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert [r.status_code for r in results] == [200] * 8
    nonces = sorted(r.json()["round"]["fairness"]["nonce"] for r in results)
    assert nonces == list(range(8))
    assert len(_debits(wallet)) == 8


def test_no_wallet_url_answers_503_and_records_nothing(database_url: str, clock) -> None:
    from entrypoints.app import create_app
    from tests.support.config import make_config
    from tests.support.live import LiveServer

    platform = Platform(make_config(database_url), clock=clock)
    platform.record_configuration()
    before = platform.events.recorder.max_notification_id()
    with LiveServer(create_app(platform)) as live:
        client = Api(live.url, clock)
        response = _play(client, _body("no-wallet"))
        client.close()
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "WALLET_UNAVAILABLE"
    assert platform.events.recorder.max_notification_id() == before
    platform.close()


def test_a_rollback_failing_for_24_hours_is_escalated(
    api: Api, wallet, platform, clock: ManualClock
) -> None:
    wallet.ledger.fund("op-a", "p-1", "EUR", 100_000)
    wallet.faults.configure(status_5xx=503, only_types={"wallet.debit", "wallet.rollback"})
    response = _play(api, _body("esc"))
    assert response.status_code == 503
    public_id = _debits(wallet)[0].body["roundId"]
    clock.advance(24 * 3600 + 1)

    def escalated() -> bool:
        with platform.db.transaction() as cur:
            cur.execute(
                "SELECT escalated FROM wallet_debit_attempts WHERE debit_key = ?",
                (f"{public_id}:1",),
            )
            row = cur.fetchone()
        return bool(row and row[0])

    wait_until(escalated, what="escalation", tick=lambda: clock.advance(61))
    round_ = platform.events.repository.get(
        Round.create_id(
            {"operator_id": "op-a", "player_external_id": "p-1", "client_action_id": "esc"}
        )
    )
    assert round_.attempts[1]["escalated"] is True
    assert round_.attempts[1]["state"] == "uncertain"
    tries = len(wallet.ledger.requests_of("wallet.rollback"))
    clock.advance(3600)
    time.sleep(1.2)  # two reconciler passes: an escalated attempt is not retried any more
    assert len(wallet.ledger.requests_of("wallet.rollback")) == tries

"""Scenario: ``kill -9`` of the server between a cancel's hold and its credit's answer
(decisions §11).

A round is played and cancelled; the wallet applies the cancel credit and holds its
answer, and the server is killed while it waits. The hold was committed before the
wallet was called: the round is held, its item cancelled, its credit attempt in flight.
After the restart the service itself finds the attempt (no answer within the grace
period) and re-sends the SAME key; the wallet answers what it did, and the round is
cancelled. The wallet holds exactly one credit of the round's bet, every credit it got
for the round carries that one key, and the client's retry of the cancel answers the
cancelled round without another credit.
"""

from __future__ import annotations

import json
import threading
from uuid import UUID

import httpx

from tests.faults.conftest import CURRENCY, FUNDS, OPERATOR, WAGER, FaultStack
from tests.support.ledger import cancel_credits
from tests.support.waiting import wait_until

PLAYER = "crash-cancel"
CREDIT = "wallet.credit"
STALL_SECONDS = 4.0  # the wallet holds the applied credit's answer until the server is dead


def cancel_path(public_id: str) -> str:
    return f"/api/s2s/rounds/{public_id}/cancel"


class Cancel(threading.Thread):
    def __init__(self, stack: FaultStack, url: str, public_id: str) -> None:
        super().__init__(daemon=True)
        self.stack, self.url, self.public_id = stack, url, public_id
        self.response: httpx.Response | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.response = self.stack.signed(
                self.url, "POST", cancel_path(self.public_id), BODY, timeout=60
            )
        except BaseException as exc:  # the connection dies with the server
            self.error = exc


BODY = json.dumps({"playerExternalId": PLAYER, "clientActionId": "cancel-1"}).encode()


def test_crash_mid_cancel(stack: FaultStack) -> None:
    ledger = stack.ledger
    stack.fund([PLAYER])
    server = stack.server().start()
    played = stack.play(server.url, PLAYER, "to-cancel")
    assert played.status_code == 200, played.text
    settled = played.json()["round"]
    public_id = settled["publicId"]
    plays = 1
    for i in range(2):  # rounds that stay
        assert stack.play(server.url, PLAYER, f"kept-{i}").status_code == 200
        plays += 1

    stack.wallet.faults.configure(
        stall_seconds=STALL_SECONDS, stall_after_apply=True, only_types={CREDIT}, times=1
    )
    hanging = Cancel(stack, server.url, public_id)
    hanging.start()
    key = f"{public_id}:cancel:1"
    wait_until(
        lambda: cancel_credits(ledger, OPERATOR) == {} and ledger.net_credits(OPERATOR) == WAGER,
        10,
        what="the wallet to apply the stalled cancel credit",
    )
    (stalled,) = ledger.requests_of(CREDIT)
    assert (stalled.idempotency_key, stalled.fault, stalled.body["amountMinor"]) == (
        key,
        "stall",
        WAGER,
    )
    server.kill()  # SIGKILL with the credit applied and unanswered
    hanging.join(timeout=15)
    assert hanging.response is None and isinstance(hanging.error, httpx.TransportError)
    # what the dead server committed before it called the wallet: the hold
    round_ = stack.checker.platform.events.repository.get(UUID(hex=public_id[2:]))
    assert (round_.status, round_.cancel_attempts.state(1)) == ("held", "in_flight")
    stack.wallet.faults.reset()

    server.start()
    wait_until(
        lambda: (
            stack.signed(server.url, "GET", f"/api/s2s/rounds/{public_id}").json()["status"]
            == "cancelled"
        ),
        30,
        interval=0.2,
        what="the service to complete the cancel",
    )
    credits = ledger.requests_of(CREDIT)
    assert len(credits) >= 2  # the stalled one, and the service's own re-send
    assert {r.idempotency_key for r in credits} == {key}
    assert cancel_credits(ledger, OPERATOR) == {key: WAGER}
    assert ledger.net_credits(OPERATOR) == WAGER  # one credit, never two
    assert ledger.balance(OPERATOR, PLAYER, CURRENCY) == FUNDS - 2 * WAGER

    # the client's retry of the same action: the cancelled round, no other credit
    retry = stack.signed(server.url, "POST", cancel_path(public_id), BODY)
    assert retry.status_code == 200, retry.text
    answer = retry.json()
    assert answer["round"] == {**settled, "status": "cancelled"}
    assert (answer["creditedMinor"], answer["currency"]) == (WAGER, CURRENCY)
    assert answer["balanceAfterMinor"] == FUNDS - 2 * WAGER
    assert len(ledger.requests_of(CREDIT)) == len(credits)
    stack.check(plays, extra=f"[cancel credits sent {len(credits)}, one key]")

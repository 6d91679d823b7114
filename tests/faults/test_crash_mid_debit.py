"""Scenario 1: ``kill -9`` of the server while debits are in flight that the wallet has
already applied (their answers are lost with the process).

Two actions are caught in flight by one crash. After the restart:
- action A is left alone: its debit is rolled back, the round never settles, net 0;
- action B is retried by its client from the moment the server is back (racing the
  reconciler): its first debit is rolled back and the round settles on the retry with the
  next key, or it settles on the first debit and that one is never rolled back.
For every debit key: rolled back xor taken by the settled round, never both, never
neither; and the wallet's net debits equal the settled bets.
"""

from __future__ import annotations

import threading
import time

import httpx

from tests.faults.conftest import DEBIT, FUNDS, OPERATOR, ROLLBACK, WAGER, FaultStack
from tests.support.waiting import wait_until

PLAYERS = ["crash-a", "crash-b", "crash-c"]
STALL_SECONDS = 4.0  # the wallet holds the applied debits' answers until the server is dead


class Play(threading.Thread):
    def __init__(self, stack: FaultStack, url: str, player: str, action: str) -> None:
        super().__init__(daemon=True)
        self.stack, self.url, self.player, self.action = stack, url, player, action
        self.response: httpx.Response | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.response = self.stack.play(self.url, self.player, self.action, timeout=60)
        except BaseException as exc:  # the connection dies with the server
            self.error = exc


def test_crash_mid_debit(stack: FaultStack) -> None:
    ledger = stack.ledger
    stack.fund(PLAYERS)
    server = stack.server().start()
    plays = 0
    for i in range(3):  # some history before the crash
        assert stack.play(server.url, PLAYERS[2], f"warm-{i}").status_code == 200
        plays += 1

    stack.wallet.faults.configure(
        stall_seconds=STALL_SECONDS, stall_after_apply=True, only_types={DEBIT}, times=2
    )
    hanging = [
        Play(stack, server.url, PLAYERS[0], "act-a"),
        Play(stack, server.url, PLAYERS[1], "act-b"),
    ]
    for play in hanging:
        play.start()
    plays += 2
    wait_until(
        lambda: (
            len([r for r in ledger.requests_of(DEBIT) if r.fault]) == 2
            and {r.idempotency_key for r in ledger.requests_of(DEBIT) if r.fault}
            <= ledger.applied_debit_keys(OPERATOR)
        ),
        10,
        what="the wallet to apply both stalled debits",
    )
    stalled = [r for r in ledger.requests_of(DEBIT) if r.fault]
    key_of = {r.body["playerExternalId"]: r.idempotency_key for r in stalled}
    assert server.running
    server.kill()  # SIGKILL with both debits applied and unanswered
    for play in hanging:
        play.join(timeout=15)
        assert play.response is None and isinstance(play.error, httpx.TransportError)
    assert ledger.net_debits(OPERATOR) >= 2 * WAGER
    stack.wallet.faults.reset()

    server.start()
    # B's client retries at once and keeps retrying until the action has an answer.
    retry_statuses: list[int] = []
    deadline = time.monotonic() + 30
    answer = None
    while time.monotonic() < deadline:
        response = stack.play(server.url, PLAYERS[1], "act-b", timeout=30)
        plays += 1
        retry_statuses.append(response.status_code)
        assert response.status_code in (200, 409, 503), response.text
        if response.status_code == 200:
            answer = response.json()
            break
        time.sleep(0.3)
    assert answer is not None, f"the retried action never settled: {retry_statuses}"
    assert answer["round"]["status"] == "settled"

    # A few more plays after the recovery.
    for i in range(3):
        assert stack.play(server.url, PLAYERS[2], f"after-{i}").status_code == 200
        plays += 1

    rounds = stack.check_money()  # waits until nothing is pending
    by_player_action = {(r.player, r.public_id): r for r in rounds.values()}
    first_a, first_b = key_of[PLAYERS[0]], key_of[PLAYERS[1]]
    round_a = next(r for (p, _), r in by_player_action.items() if p == PLAYERS[0])
    round_b = next(r for (p, _), r in by_player_action.items() if p == PLAYERS[1])
    assert round_a.attempt_keys[1] == first_a and round_b.attempt_keys[1] == first_b

    rolled_back = ledger.rolled_back_keys(OPERATOR)
    # A: nobody retried -> rolled back, net 0, no settled round.
    assert first_a in rolled_back and ledger.rollback_count(first_a, OPERATOR) == 1
    assert round_a.status == "open" and round_a.debited_key is None
    assert ledger.balance(OPERATOR, PLAYERS[0], "EUR") == FUNDS
    # B: exactly one of (rolled back, settled on a later key) / (settled on it, kept).
    rolled = first_b in rolled_back
    settled_on_it = round_b.status == "settled" and round_b.debited_key == first_b
    assert rolled != settled_on_it, (rolled, settled_on_it, round_b)
    assert round_b.status == "settled" and answer["round"]["publicId"] == round_b.public_id
    assert ledger.balance(OPERATOR, PLAYERS[1], "EUR") == FUNDS - WAGER
    for key in ledger.applied_debit_keys(OPERATOR):
        assert ledger.rollback_count(key, OPERATOR) <= 1
    assert len(ledger.requests_of(ROLLBACK)) >= 2

    outcome = f"rolled back, settled on {round_b.debited_key}" if rolled else "kept"
    stack.check(plays, extra=f"[B: {outcome}; retry answers {retry_statuses}]")

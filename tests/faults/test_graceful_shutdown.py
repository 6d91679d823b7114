"""Graceful shutdown: SIGTERM to ``upgrader serve`` while plays are in flight (the wallet
takes 1 s per debit).

The plays in flight complete with 200 (not cut off), the listening socket closes at once
(new connections are refused), the process exits 0 within ~12 s, and the background
loops stop cleanly: no debit is left in flight, and a restarted server has nothing to roll
back.
"""

from __future__ import annotations

import threading
import time

import httpx

from tests.faults.conftest import DEBIT, GRACE_SECONDS, OPERATOR, ROLLBACK, FaultStack
from tests.support.waiting import wait_until

PLAYERS = [f"term-{i}" for i in range(6)]
STALL_SECONDS = 1.0
EXIT_WITHIN = 12.0


def test_sigterm_lets_in_flight_plays_finish(stack: FaultStack) -> None:
    ledger = stack.ledger
    stack.fund(PLAYERS)
    server = stack.server().start()
    for player in PLAYERS:  # some settled history (and webhooks) before
        assert stack.play(server.url, player, "before").status_code == 200

    stack.wallet.faults.configure(stall_seconds=STALL_SECONDS, only_types={DEBIT})
    results: dict[str, httpx.Response | BaseException] = {}

    def play(player: str) -> None:
        try:
            results[player] = stack.play(server.url, player, "in-flight", timeout=30)
        except BaseException as exc:
            results[player] = exc

    threads = [threading.Thread(target=play, args=(p,), daemon=True) for p in PLAYERS]
    debits_before = len(ledger.requests_of(DEBIT))
    for thread in threads:
        thread.start()
    wait_until(
        lambda: len(ledger.requests_of(DEBIT)) - debits_before == len(PLAYERS),
        10,
        what="every play's debit to reach the (stalling) wallet",
    )
    assert all(r.http_status is None for r in ledger.requests_of(DEBIT)[debits_before:])

    server.terminate()
    signalled = time.monotonic()
    refused_after = None
    while time.monotonic() - signalled < 3:
        try:
            httpx.get(server.url + "/api/s2s/health", timeout=1)
        except httpx.ConnectError:
            refused_after = time.monotonic() - signalled
            break
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    assert refused_after is not None, "new connections still accepted 3 s after SIGTERM"
    still_in_flight = sum(1 for r in ledger.requests_of(DEBIT)[debits_before:] if not r.http_status)

    for thread in threads:
        thread.join(timeout=EXIT_WITHIN)
    code = server.wait_exit(EXIT_WITHIN - (time.monotonic() - signalled))
    exited_after = time.monotonic() - signalled
    assert code == 0, f"exit status {code} after {exited_after:.1f} s:\n{server.log_tail()}"
    for player in PLAYERS:
        answer = results.get(player)
        assert isinstance(answer, httpx.Response), f"{player}: {answer!r}"
        assert answer.status_code == 200, answer.text
        assert answer.json()["round"]["status"] == "settled"
    log = server.current_log()
    assert "Traceback" not in log, log[-3000:]
    stack.wallet.faults.reset()

    # Nothing was left in flight: the store says so before any process runs again ...
    assert stack.pending_wallet_operations() == []
    rollbacks_before = len(ledger.requests_of(ROLLBACK))
    # ... and a restarted server, past the grace period, has nothing to roll back.
    server.start()
    time.sleep(GRACE_SECONDS + 1.5)
    assert len(ledger.requests_of(ROLLBACK)) == rollbacks_before == 0
    assert stack.pending_wallet_operations() == []
    assert ledger.rolled_back_keys(OPERATOR) == set()
    stack.check(
        2 * len(PLAYERS),
        extra=f"[{still_in_flight} plays in flight at SIGTERM, refused new connections after "
        f"{refused_after:.2f} s, exit 0 after {exited_after:.1f} s]",
    )

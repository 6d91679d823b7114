"""Scenario 3: the webhook receiver is down (503) for a few seconds while rounds settle,
then comes back: every webhook arrives (the dispatcher backs off 1 s doubling and tries
again by itself; nothing is redelivered by hand), ids stable, per player in settle order.
"""

from __future__ import annotations

import time

from tests.faults.conftest import FaultStack
from tests.support.waiting import wait_until

PLAYERS = [f"hook-{i}" for i in range(4)]
ROUNDS_PER_PLAYER = 5
DOWN_SECONDS = 4.0
RECOVERY_SECONDS = 30.0


def test_webhook_receiver_down_then_up(stack: FaultStack) -> None:
    ledger = stack.ledger
    stack.fund(PLAYERS)
    server = stack.server().start()
    stack.wallet.faults.configure(webhook_status=503)
    went_down = time.monotonic()

    plays = 0
    for i in range(ROUNDS_PER_PLAYER):
        for player in PLAYERS:
            response = stack.play(server.url, player, f"down-{i}")
            assert response.status_code == 200, response.text
            plays += 1
    # Every player's oldest webhook is refused at least once; nothing is stored.
    wait_until(lambda: ledger.webhook_attempts >= len(PLAYERS), 10, what="refused deliveries")
    time.sleep(max(0.0, DOWN_SECONDS - (time.monotonic() - went_down)))
    refused = ledger.webhook_attempts
    assert ledger.received_webhooks == []

    stack.wallet.faults.reset()  # the receiver is back
    back = time.monotonic()
    rounds = stack.check_money()
    hooks = stack.check_webhooks(rounds, timeout=RECOVERY_SECONDS)
    assert hooks["webhooks"] == plays
    stack.check(
        plays,
        extra=f"[down {DOWN_SECONDS:.0f} s, {refused} refused, all in "
        f"{time.monotonic() - back:.1f} s after it came back]",
    )

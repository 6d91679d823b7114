"""Scenario 4: PostgreSQL restarted under load.

A PRIVATE PostgreSQL 15 cluster (never the shared server on 5432) backs one
``upgrader serve`` process; a thread plays at a steady rate while the cluster is stopped
(``pg_ctl stop -m fast``) for a few seconds and started again.

Every play is answered 200 or 503 (SERVICE_UNAVAILABLE or WALLET_UNAVAILABLE: nothing
happened; OUTCOME_UNKNOWN: the wallet accepted the debit and the round could not be
recorded yet), never a 500 or no answer; the same server process recovers by itself;
every play answered 200 is listed by GET /api/s2s/rounds, no play answered
SERVICE_UNAVAILABLE or WALLET_UNAVAILABLE settled, and the invariants hold (a debit whose
settlement could not be recorded is rolled back). During the outage plays are answered
503 within a few seconds, not held (application/store/calls.py: a deadline on each
request's store call and a one-second breaker once a direct connection probe fails).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from domain.ids import round_id, round_public_id
from tests.conftest import POSTGRES_URL, SKIP_POSTGRES
from tests.faults import private_postgres
from tests.faults.conftest import OPERATOR, FaultStack
from tests.support.waiting import wait_until

PLAYERS = [f"pg-{i}" for i in range(4)]
INTERVAL = 0.1  # one play every 100 ms
DOWN_SECONDS = 3.0
MAX_ANSWER_SECONDS = 5.0  # no play should wait longer than this, outage or not
CLIENT_TIMEOUT = 90.0  # beyond what the store's retries can hold a request
RECOVERED_AFTER = 8  # consecutive 200 answers after the restart
PROMPTNESS_BUG = (
    "A play that reaches the store while PostgreSQL is down must be answered 503 within "
    "a few seconds, not held until the database is back (application/store/calls.py)."
)


@dataclass
class Outcome:
    started: float
    seconds: float
    status: int | None  # None: no HTTP answer
    code: str  # the error code, the transport error, or "" for 200
    public_id: str | None
    player: str
    action: str


class Driver(threading.Thread):
    """Plays one new action every INTERVAL seconds until stopped."""

    def __init__(self, stack: FaultStack, url: str) -> None:
        super().__init__(name="pg-driver", daemon=True)
        self.stack, self.url = stack, url
        self.outcomes: list[Outcome] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        i = 0
        with httpx.Client() as client:
            while not self.stopping.is_set():
                player = PLAYERS[i % len(PLAYERS)]
                began = time.monotonic()
                try:
                    response = self.stack.play(
                        self.url, player, f"steady-{i}", timeout=CLIENT_TIMEOUT, client=client
                    )
                    status = response.status_code
                    body: Any = response.json() if response.content else {}
                    code = "" if status == 200 else body.get("error", {}).get("code", "?")
                    public_id = body["round"]["publicId"] if status == 200 else None
                except httpx.TransportError as exc:
                    status, code, public_id = None, type(exc).__name__, None
                took = time.monotonic() - began
                outcome = Outcome(began, took, status, code, public_id, player, f"steady-{i}")
                self.outcomes.append(outcome)
                i += 1
                self.stopping.wait(max(0.0, INTERVAL - took))

    def recovered(self, since: float) -> bool:
        after = [o.status for o in self.outcomes if o.started >= since]
        return len(after) >= RECOVERED_AFTER and set(after[-RECOVERED_AFTER:]) == {200}


def test_postgres_restarted_under_load(make_stack: Any) -> None:
    if not POSTGRES_URL:
        pytest.skip(SKIP_POSTGRES)
    reason = private_postgres.unavailable_reason()
    if reason is not None:
        pytest.skip(f"no private PostgreSQL 15 cluster can be started here: {reason}")
    cluster = private_postgres.PrivatePostgres({"max_connections": "100"})
    stack: FaultStack | None = None
    try:
        cluster.init().start()
        stack = make_stack(cluster.url() + "?schema=restart", "postgres_restarted_under_load")
        run_scenario(stack, cluster)
    finally:
        if stack is not None:  # nothing may hold the cluster when it goes
            for child in stack.children:
                child.kill()
            stack.close_checker()
        cluster.destroy()


def run_scenario(stack: FaultStack, cluster: private_postgres.PrivatePostgres) -> None:
    stack.fund(PLAYERS)
    server = stack.server().start()
    driver = Driver(stack, server.url)
    driver.start()
    try:
        wait_until(
            lambda: sum(o.status == 200 for o in driver.outcomes) >= 10, 30, what="steady plays"
        )
        stopping = time.monotonic()
        cluster.stop("fast")
        down = time.monotonic()
        time.sleep(DOWN_SECONDS)
        restarting = time.monotonic()
        cluster.start()
        up = time.monotonic()
        wait_until(lambda: driver.recovered(up), 40, what="plays to succeed again")
    finally:
        driver.stopping.set()
        driver.join(timeout=40)
    outcomes = driver.outcomes
    assert server.running, "the server died with its database"

    # Every play got an HTTP answer: 200, or 503 with a documented code; never a 500.
    answers = Counter((o.status, o.code) for o in outcomes)
    allowed = {(200, ""), (503, "SERVICE_UNAVAILABLE"), (503, "WALLET_UNAVAILABLE")}
    allowed.add((503, "OUTCOME_UNKNOWN"))  # a debit accepted as the database went
    assert set(answers) <= allowed, answers
    # It recovered by itself (the same server process), and nothing answered 200 is lost.
    assert driver.recovered(up)
    ok = {o.public_id for o in outcomes if o.status == 200}
    listed: set[str] = set()
    for player in PLAYERS:
        rounds = stack.listed_rounds(server.url, player)
        listed |= {p for p, entry in rounds.items() if entry["status"] == "settled"}
    assert ok <= listed, f"answered 200 but not listed: {ok - listed}"
    rounds = stack.check_money()
    settled = {r.public_id for r in rounds.values() if r.status == "settled"}
    assert ok <= settled and listed == settled
    # a 503 that says nothing happened hid no settled play
    failed = [o for o in outcomes if o.code in ("SERVICE_UNAVAILABLE", "WALLET_UNAVAILABLE")]
    hidden = [
        o.action
        for o in failed
        if round_public_id(round_id(OPERATOR, o.player, o.action)) in settled
    ]
    assert not hidden, f"answered 503 'nothing happened' but settled: {hidden}"

    slowest = max(outcomes, key=lambda o: o.seconds)
    during = [o for o in outcomes if o.started >= down and o.started + o.seconds <= restarting]
    first_ok = min(o.started + o.seconds for o in outcomes if o.started >= up and o.status == 200)
    stack.check(
        len(outcomes),
        extra=f"[answers {dict(sorted((f'{s} {c}'.strip(), n) for (s, c), n in answers.items()))}"
        f"; stop took {down - stopping:.1f} s, down {restarting - down:.1f} s, first 200 "
        f"{first_ok - up:.1f} s after the restart; slowest answer {slowest.seconds:.1f} s "
        f"({slowest.status}), {len(during)} answered during the outage]",
    )

    # Prompt answers during the outage: 503 within a few seconds, not a request held until
    # the database is back. Known to fail (see PROMPTNESS_BUG); everything above holds.
    late = [o for o in outcomes if o.seconds > MAX_ANSWER_SECONDS]
    if late or not during or {o.status for o in during} != {503}:
        pytest.fail(
            f"{PROMPTNESS_BUG} Here: down {restarting - down:.1f} s; a play started "
            f"{slowest.started - down:+.1f} s from the stop was held {slowest.seconds:.1f} s "
            f"and answered {slowest.status}; {len(during)} plays answered during the outage."
        )

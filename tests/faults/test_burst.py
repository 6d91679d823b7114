"""Scenario 5: a burst of 200 plays at concurrency 16 across two API processes
(``serve --workers 2``, background loops in their ``worker all`` child), many players,
with some clientActionIds sent twice at the same moment (same body, and a few with a
different wager).

A same-body duplicate gets the same round (byte for byte) or 409 ACTION_IN_PROGRESS, and
debits once; a different-body duplicate gets 409 IDEMPOTENCY_CONFLICT and debits nothing.
Every 200 answer's round is listed by GET /api/s2s/rounds; the invariants hold.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import httpx

from tests.faults.conftest import DEBIT, PLAY_PATH, FaultStack

PLAYERS = [f"burst-{i:02d}" for i in range(25)]
TOTAL = 200
SAME_BODY_PAIRS = 15
OTHER_BODY_PAIRS = 5
CONCURRENCY = 16


def test_burst_across_two_api_processes(stack: FaultStack) -> None:
    ledger = stack.ledger
    stack.fund(PLAYERS)
    server = stack.server("--workers", "2").start(timeout=60)
    rng = random.Random(7)

    unique = TOTAL - SAME_BODY_PAIRS - OTHER_BODY_PAIRS
    actions = [(PLAYERS[i % len(PLAYERS)], f"a-{i}") for i in range(unique)]
    # (player, action, wager): duplicates go right after their original, so the pool runs
    # them at the same moment.
    requests: list[tuple[str, str, int]] = []
    same = set(rng.sample(range(unique), SAME_BODY_PAIRS))
    other = set(rng.sample(sorted(set(range(unique)) - same), OTHER_BODY_PAIRS))
    for i, (player, action) in enumerate(actions):
        requests.append((player, action, 1000))
        if i in same:
            requests.append((player, action, 1000))
        elif i in other:
            requests.append((player, action, 990))
    assert len(requests) == TOTAL

    limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
    with httpx.Client(limits=limits) as client:

        def send(request: tuple[str, str, int]) -> tuple[str, str, int, httpx.Response]:
            player, action, wager = request
            body = stack.play_body(player, action, wager)
            response = stack.signed(server.url, "POST", PLAY_PATH, body, client=client)
            return player, action, wager, response

        began = time.monotonic()
        with ThreadPoolExecutor(CONCURRENCY) as pool:
            results = list(pool.map(send, requests))
        burst_seconds = time.monotonic() - began

    statuses = Counter(
        (r.status_code, r.json()["error"]["code"] if r.status_code != 200 else "")
        for *_, r in results
    )
    allowed = {(200, ""), (409, "ACTION_IN_PROGRESS"), (409, "IDEMPOTENCY_CONFLICT")}
    allowed.add((503, "WALLET_UNAVAILABLE"))  # a debit slower than the wallet timeout
    assert set(statuses) <= allowed, statuses

    by_action: dict[tuple[str, str], list[tuple[int, httpx.Response]]] = {}
    for player, action, wager, response in results:
        by_action.setdefault((player, action), []).append((wager, response))
    answered: dict[tuple[str, str], str] = {}  # action -> the round's publicId
    for key, answers in by_action.items():
        ok = [r for _, r in answers if r.status_code == 200]
        for response in ok:
            answered.setdefault(key, response.json()["round"]["publicId"])
            assert response.json()["round"]["publicId"] == answered[key]
        if len(answers) == 2 and answers[0][0] == answers[1][0] and len(ok) == 2:
            assert ok[0].content == ok[1].content, "the duplicate got another answer"
        if len(answers) == 2 and answers[0][0] != answers[1][0]:
            codes = sorted(r.json()["error"]["code"] for _, r in answers if r.status_code != 200)
            assert len(ok) == 1 and codes == ["IDEMPOTENCY_CONFLICT"], [
                (r.status_code, r.text) for _, r in answers
            ]
            assert ok[0].json()["round"]["betMinor"] in (1000, 990)

    # Duplicates debit once: one debit request per key, one per round unless an attempt
    # went uncertain (then the next attempt has the next key).
    debits = ledger.requests_of(DEBIT)
    per_key = Counter(r.idempotency_key for r in debits)
    assert max(per_key.values()) == 1, [k for k, n in per_key.items() if n > 1]
    per_round = Counter(r.body["roundId"] for r in debits)
    unavailable = statuses[(503, "WALLET_UNAVAILABLE")]
    if not unavailable:
        assert set(per_round.values()) == {1}, [k for k, n in per_round.items() if n > 1]
    assert len(per_round) == len(by_action)

    rounds = stack.check_money()
    settled = {r.public_id for r in rounds.values() if r.status == "settled"}
    assert set(answered.values()) <= settled
    listed_settled: set[str] = set()
    for player in PLAYERS:
        listed = stack.listed_rounds(server.url, player)
        listed_settled |= {p for p, entry in listed.items() if entry["status"] == "settled"}
    assert set(answered.values()) <= listed_settled, "a 200 answer's round is not listed"
    assert listed_settled == settled
    stack.check(
        TOTAL,
        extra=f"[{burst_seconds:.1f} s burst; answers "
        + json.dumps({f"{s}{' ' + c if c else ''}": n for (s, c), n in sorted(statuses.items())})
        + "]",
    )

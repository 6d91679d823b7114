"""``upgrader verify --vectors`` for box draws: cases over ``totalTickets`` (decisions §10).

A case with ``totalTickets`` is a draw: ``{serverSeed, serverSeedHash, clientSeed, nonce,
totalTickets, ticket}`` and optionally ``cursor`` and ``wordIndex`` (which word gave the
ticket), as in tests/vectors/box_draw_v1.json. Each claim is recomputed with
:func:`domain.fairness.draw_trace`; the other cases of a file are rolls (cli_verify.py).
"""

from __future__ import annotations

from typing import Any

from domain.fairness import MAX_DRAW_SPACE, draw_trace, seed_hash
from entrypoints.cli_verify_claims import (
    Check,
    MalformedInput,
    _client_seed,
    _hash,
    _json_int,
    _server_seed,
)

REQUIRED = ("serverSeed", "serverSeedHash", "clientSeed", "nonce", "totalTickets", "ticket")


def draw_case_problems(case: dict[str, Any]) -> list[str]:
    """One line per claim of the case that does not hold (MalformedInput if unreadable)."""
    for key in REQUIRED:
        if key not in case:
            raise MalformedInput(f"case has no {key}")
    server = _server_seed(case["serverSeed"])
    client = _client_seed(case["clientSeed"])
    nonce = _json_int(case["nonce"], "nonce")
    total = _json_int(case["totalTickets"], "totalTickets")
    if not 1 <= total <= MAX_DRAW_SPACE:
        raise MalformedInput(f"totalTickets must be in 1..{MAX_DRAW_SPACE}: {total}")
    ticket = _json_int(case["ticket"], "ticket")
    if ticket >= total:
        raise MalformedInput(f"ticket must be in 0..{total - 1}: {ticket}")
    trace = draw_trace(server, client, nonce, total)
    claims = [
        ("serverSeedHash", _hash(case["serverSeedHash"]), seed_hash(server)),
        ("ticket", ticket, trace.ticket),
    ]
    for key, recomputed in (("cursor", trace.cursor), ("wordIndex", trace.word_index)):
        if key in case:
            claims.append((key, _json_int(case[key], key), recomputed))
    checks = [Check(claim, claimed == got, claimed, got) for claim, claimed, got in claims]
    return [check.line() for check in checks if not check.ok]

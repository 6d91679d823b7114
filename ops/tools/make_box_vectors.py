"""Generate the published test vectors of the box draw (``hmac_sha256_v1`` over any space).

    python -m ops.tools.make_box_vectors            # (re)write tests/vectors/box_draw_v1.json
    python -m ops.tools.make_box_vectors --check    # exit 1 if the file differs
    python -m ops.tools.make_box_vectors --search   # find the rejection cases (seconds)

Each case is a draw over ``totalTickets`` = T (decisions §10): for cursor i, the words of
``HMAC_SHA256(serverSeed, f"{clientSeed}:{nonce}:{i}")``; the first word
``u < floor(2^32 / T) * T`` gives ``ticket = u % T``. ``cursor`` and ``wordIndex`` say which
word that was, so a verifier can tell a rejection it skipped from one it missed.

The cases, all deterministic (seeds, client seeds and nonces as in make_vectors.py):

- 1,000 cases over spaces from 1 to 2^31: fixed edge spaces, uniform and log-uniform ones,
  and many in (2^32/3, 2^31], where ``2^32 mod T`` is large. The rejection probability of a
  word is ``(2^32 mod T) / 2^32``: at most about 1/3 (T = 1431655766, just above 2^32/3),
  0 for powers of two (2^31 included), and below T / 2^32 (about 1.7e-6 for T = 10000).
  Only the large spaces reject often enough to show up in 1,000 cases; at T = 1431655766
  about 1 draw in 6,561 rejects all eight words of block 0.
- 106 cases over T = 10000 whose tickets equal the rolls of hmac_sha256_v1.json (every
  tenth case of that file and its six cases where the first word was rejected).
- Cases found by searching nonces from 0 (``--search``, pinned in ``SEARCHED``): the whole
  first block rejected (cursor 1) for T = 1431655766 and T = 1073741825, and the first word
  rejected for T = 1000003 and T = 100003, where that happens once in about 4,500 and
  112,000 draws.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from itertools import count
from pathlib import Path

from domain.fairness import ALGORITHM_KEY, MAX_DRAW_SPACE, ROLL_SPACE, draw_trace, seed_hash
from ops.tools.make_vectors import (
    REJECTION_CASES,
    client_seed,
    nonce,
    server_seed,
    write_or_check,
)

DEFAULT_OUTPUT = Path(__file__).resolve().parents[2] / "tests" / "vectors" / "box_draw_v1.json"
CASE_COUNT = 1000
WORD_SPACE = 1 << 32
THIRD = WORD_SPACE // 3 + 1  # 1431655766: the space whose words are rejected most often
EDGE_SPACES = (
    1,
    2,
    3,
    7,
    10,
    100,
    6000,
    ROLL_SPACE,
    65536,
    100003,
    1000003,
    2**20 + 1,
    858993460,
    2**30 + 1,
    1288490189,
    THIRD - 1,
    THIRD,
    THIRD + 1,
    1500000000,
    1717986919,
    2000000000,
    MAX_DRAW_SPACE - 1,
    MAX_DRAW_SPACE,
)
# (space, what to look for, how many): "block" = all eight words of block 0 rejected
SEARCHES = ((THIRD, "block", 2), (2**30 + 1, "block", 2), (1000003, "word", 2), (100003, "word", 1))
# What ``--search`` found (a few seconds): (space, what, nonce), with the server seed
# ``server_seed(f"box-search:{space}")`` and the client seed ``f"search {what}"``.
SEARCHED: tuple[tuple[int, str, int], ...] = (
    (THIRD, "block", 8274),
    (THIRD, "block", 19020),
    (2**30 + 1, "block", 28321),
    (2**30 + 1, "block", 35561),
    (1000003, "word", 5099),
    (1000003, "word", 15839),
    (100003, "word", 21171),
)


def _random(k: int) -> int:
    digest = hashlib.sha256(f"upgrader-box-vectors:space:{k}".encode("ascii")).digest()
    return int.from_bytes(digest, "big")


def space(k: int) -> int:
    """A draw space in 1..2^31, varied by ``k``."""
    r = _random(k)
    kind = k % 10
    if kind == 0:
        return EDGE_SPACES[(k // 10) % len(EDGE_SPACES)]
    if kind in (1, 2, 3):  # (2^32/3, 2^31]: rejection probability 0..1/3
        return THIRD + r % (MAX_DRAW_SPACE - THIRD + 1)
    if kind in (4, 5, 6):  # log-uniform over 1..2^31-1
        bits = 1 + r % 31
        return (1 << (bits - 1)) + (r >> 8) % (1 << (bits - 1))
    if kind == 7:
        return 1 + r % 100
    if kind == 8:
        return 1 + r % MAX_DRAW_SPACE
    return THIRD


def case(seed: str, client: str, n: int, total_tickets: int) -> dict[str, object]:
    trace = draw_trace(seed, client, n, total_tickets)
    return {
        "serverSeed": seed,
        "serverSeedHash": seed_hash(seed),
        "clientSeed": client,
        "nonce": n,
        "totalTickets": total_tickets,
        "ticket": trace.ticket,
        "cursor": trace.cursor,
        "wordIndex": trace.word_index,
    }


def searched_case(total_tickets: int, what: str, n: int) -> dict[str, object]:
    return case(server_seed(f"box-search:{total_tickets}"), f"search {what}", n, total_tickets)


def search(total_tickets: int, what: str, wanted: int) -> list[tuple[int, str, int]]:
    """The first ``wanted`` nonces (from 0) whose draw rejected a whole block or a word."""
    seed, client = server_seed(f"box-search:{total_tickets}"), f"search {what}"
    found = []
    for n in count():
        trace = draw_trace(seed, client, n, total_tickets)
        if (trace.cursor if what == "block" else trace.rejected_words) > 0:
            found.append((total_tickets, what, n))
            if len(found) == wanted:
                return found
    raise AssertionError("unreachable")


def build_document() -> dict[str, object]:
    cases = [
        case(server_seed(f"box:{k}"), client_seed(k), nonce(k), space(k)) for k in range(CASE_COUNT)
    ]
    upgrader = [(server_seed(str(k)), client_seed(k), nonce(k)) for k in range(0, CASE_COUNT, 10)]
    upgrader += [(server_seed(label), client, n) for label, client, n in REJECTION_CASES]
    cases += [case(seed, client, n, ROLL_SPACE) for seed, client, n in upgrader]
    cases += [searched_case(*found) for found in SEARCHED]
    return {"algorithmKey": ALGORITHM_KEY, "cases": cases}


def render() -> str:
    return json.dumps(build_document(), indent=2, ensure_ascii=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    parser.add_argument("--search", action="store_true", help="print what SEARCHED pins")
    args = parser.parse_args(argv)
    if args.search:
        for found in (f for wanted in SEARCHES for f in search(*wanted)):
            print(f"    {found!r},")
        return 0
    return write_or_check(render(), args.output, args.check)


if __name__ == "__main__":
    raise SystemExit(main())

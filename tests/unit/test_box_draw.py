"""The box draw (decisions §10): ``hmac_sha256_v1`` over any space 1..2^31, checked against
an implementation written here from the decisions text, and its published vectors
(tests/vectors/box_draw_v1.json, made by ops/tools/make_box_vectors.py)."""

from __future__ import annotations

import hashlib
import hmac
import json
import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.fairness import (
    MAX_DRAW_SPACE,
    REJECTION_BOUND,
    DrawTrace,
    block_words,
    draw,
    draw_from_blocks,
    draw_trace,
    rejection_bound,
    roll,
    seed_hash,
)
from ops.tools import make_box_vectors

VECTORS = Path(__file__).resolve().parents[1] / "vectors"
BOX_VECTORS = VECTORS / "box_draw_v1.json"
FIELDS = [
    "serverSeed",
    "serverSeedHash",
    "clientSeed",
    "nonce",
    "totalTickets",
    "ticket",
    "cursor",
    "wordIndex",
]
SEED = hashlib.sha256(b"box-draw-test").hexdigest()
THIRD = 1431655766  # the smallest T above 2^32 / 3


def reference_draw(server_seed: str, client_seed: str, n: int, t: int) -> tuple[int, int, int]:
    """Decisions §10, written again: (ticket, cursor, word index)."""
    limit = (2**32 // t) * t
    i = 0
    while True:
        h = hmac.new(
            server_seed.encode("ascii"), f"{client_seed}:{n}:{i}".encode("ascii"), hashlib.sha256
        ).digest()
        for index, u in enumerate(struct.unpack(">8I", h)):
            if u < limit:
                return u % t, i, index
        i += 1


def test_bounds() -> None:
    assert rejection_bound(10000) == REJECTION_BOUND == 4294960000
    assert rejection_bound(1) == rejection_bound(2) == rejection_bound(2**31) == 2**32
    assert rejection_bound(3) == 4294967295  # 2^32 - 1: only the largest word is rejected
    assert rejection_bound(THIRD) == 2 * THIRD == 2863311532  # a third of all words rejected
    assert rejection_bound(2**31 - 1) == 2**32 - 2
    assert MAX_DRAW_SPACE == 2**31


@pytest.mark.parametrize("space", [0, -1, 2**31 + 1, 2**32, True, 10000.0, "10000", None])
def test_a_space_outside_1_to_2_31_is_refused(space: object) -> None:
    with pytest.raises(ValueError, match=r"space must be an int in 1\.\.2\^31"):
        draw(SEED, "c", 0, space)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        draw_trace(SEED, "c", 0, space)  # type: ignore[arg-type]


def test_bad_seeds_and_nonces_are_refused_as_for_the_roll() -> None:
    for args in (("F" * 64, "a", 0), (SEED, "", 0), (SEED, "a", -1), (SEED, "a", True)):
        with pytest.raises(ValueError):
            draw(*args, 10)  # type: ignore[arg-type]


def test_a_space_of_one_always_draws_ticket_zero() -> None:
    assert {draw(SEED, "one", n, 1) for n in range(50)} == {0}


@given(
    server=st.binary(min_size=32, max_size=32).map(bytes.hex),
    client=st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=1, max_size=64),
    nonce=st.integers(min_value=0, max_value=2**64),
)
def test_draw_over_10000_is_the_roll(server: str, client: str, nonce: int) -> None:
    assert draw(server, client, nonce, 10000) == roll(server, client, nonce)


@given(
    server=st.binary(min_size=32, max_size=32).map(bytes.hex),
    client=st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=1, max_size=64),
    nonce=st.integers(min_value=0, max_value=2**53 - 1),
    space=st.one_of(
        st.integers(min_value=1, max_value=2**31),
        st.integers(min_value=THIRD, max_value=THIRD + 1000),  # a third rejected
    ),
)
def test_draw_equals_independent_computation(
    server: str, client: str, nonce: int, space: int
) -> None:
    ticket, cursor, index = reference_draw(server, client, nonce, space)
    assert draw(server, client, nonce, space) == ticket
    assert draw_trace(server, client, nonce, space) == DrawTrace(ticket, cursor, index)
    assert 0 <= ticket < space


def test_words_at_the_bound_are_rejected_and_below_it_accepted() -> None:
    bound = rejection_bound(THIRD)
    blocks = {
        0: [bound, 2**32 - 1, bound + 1, bound, bound, bound, 2**32 - 1, bound],
        1: [bound, bound - 1, 0, 0, 0, 0, 0, 0],
    }
    trace = draw_from_blocks(lambda cursor: blocks[cursor], THIRD)
    assert trace == DrawTrace((bound - 1) % THIRD, 1, 1)
    assert trace.ticket == THIRD - 1  # bound - 1 = 2 * THIRD - 1
    assert trace.rejected_words == 9
    # over 2^31 nothing is rejected: the largest word is the last ticket
    assert draw_from_blocks(lambda _: [2**32 - 1] * 8, 2**31) == DrawTrace(2**31 - 1, 0, 0)


def test_a_rejected_first_word_moves_to_the_second() -> None:
    """Found by ops/tools/make_box_vectors.py: word 0 of this draw is above the bound."""
    server = make_box_vectors.server_seed("box-search:1000003")
    words = block_words(server, "search word", 5099, 0)
    assert words[0] >= rejection_bound(1000003) > words[1]
    assert draw(server, "search word", 5099, 1000003) == words[1] % 1000003
    assert words[0] % 1000003 != words[1] % 1000003


# -- the vector file -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def document() -> dict:
    return json.loads(BOX_VECTORS.read_text(encoding="ascii"))


def test_file_is_what_the_tool_generates(tmp_path: Path) -> None:
    assert make_box_vectors.main(["--check", "--output", str(BOX_VECTORS)]) == 0
    stale = tmp_path / "stale.json"
    stale.write_text("{}\n", encoding="ascii")
    assert make_box_vectors.main(["--check", "--output", str(stale)]) == 1


def test_the_pinned_search_results_are_what_they_claim() -> None:
    for space, what, nonce in make_box_vectors.SEARCHED:
        server = make_box_vectors.server_seed(f"box-search:{space}")
        trace = draw_trace(server, f"search {what}", nonce, space)
        assert (trace.cursor >= 1) if what == "block" else (trace.rejected_words >= 1)
    # the search starts at nonce 0: the first hit for T = 1000003 is the pinned one
    assert make_box_vectors.search(1000003, "word", 1) == [make_box_vectors.SEARCHED[4]]


def test_every_case_matches_the_project_and_the_independent_draw(document: dict) -> None:
    assert document["algorithmKey"] == "hmac_sha256_v1"
    for case in document["cases"]:
        assert list(case) == FIELDS
        server, client, nonce, space = (
            case["serverSeed"],
            case["clientSeed"],
            case["nonce"],
            case["totalTickets"],
        )
        assert type(nonce) is int and 0 <= nonce <= 2**53 - 1
        assert type(space) is int and 1 <= space <= 2**31
        assert case["serverSeedHash"] == seed_hash(server)
        assert case["serverSeedHash"] == hashlib.sha256(server.encode("ascii")).hexdigest()
        expected = (case["ticket"], case["cursor"], case["wordIndex"])
        assert reference_draw(server, client, nonce, space) == expected
        assert draw_trace(server, client, nonce, space) == DrawTrace(*expected)
        assert draw(server, client, nonce, space) == case["ticket"]


def test_cases_cover_spaces_rejections_and_the_upgrader(document: dict) -> None:
    cases = document["cases"]
    assert len(cases) >= 1000
    spaces = {case["totalTickets"] for case in cases}
    assert {1, 2, 3, 10000, 2**31 - 1, 2**31, THIRD} <= spaces and len(spaces) > 700
    assert sum(1 for s in spaces if s > 2**32 // 3) > 250  # where words are rejected often
    rejected = [c for c in cases if (c["cursor"], c["wordIndex"]) != (0, 0)]
    assert len(rejected) >= 100
    assert {c["totalTickets"] for c in rejected if c["cursor"] >= 1} == {THIRD, 2**30 + 1}
    # first words rejected where that is rare (found by search): p < 1e-3
    rare = {c["totalTickets"] for c in rejected if (2**32 % c["totalTickets"]) / 2**32 < 1e-3}
    assert {10000, 1000003, 100003} <= rare
    # T = 10000 is the Upgrader's roll: the same (seed, client, nonce) give the same number
    upgrader = json.loads((VECTORS / "hmac_sha256_v1.json").read_text(encoding="ascii"))
    rolls = {
        (c["serverSeed"], c["clientSeed"], c["nonce"]): c["rolledBps"] for c in upgrader["cases"]
    }
    same = [c for c in cases if (c["serverSeed"], c["clientSeed"], c["nonce"]) in rolls]
    assert len(same) >= 106
    for c in same:
        assert c["totalTickets"] == 10000
        assert c["ticket"] == rolls[(c["serverSeed"], c["clientSeed"], c["nonce"])]
    assert sum(1 for c in same if c["wordIndex"] > 0) == 6

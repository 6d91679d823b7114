"""Provable fairness ``hmac_sha256_v1`` (decisions §3), checked against an independent
implementation written here from the decisions text."""

from __future__ import annotations

import hashlib
import hmac
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.fairness import (
    ALGORITHM_KEY,
    REJECTION_BOUND,
    RollTrace,
    block_words,
    first_accepted,
    is_valid_client_seed,
    is_valid_server_seed,
    is_win,
    roll,
    roll_from_blocks,
    roll_trace,
    seed_hash,
)


def reference_roll(server_seed: str, client_seed: str, nonce: int) -> tuple[int, int, int]:
    """Decisions §3, written again: (rolledBps, cursor, word index)."""
    i = 0
    while True:
        h = hmac.new(
            server_seed.encode("ascii"),
            f"{client_seed}:{nonce}:{i}".encode("ascii"),
            hashlib.sha256,
        ).digest()
        for index, u in enumerate(struct.unpack(">IIIIIIII", h)):
            if u < 4294960000:
                return u % 10000, i, index
        i += 1


SEED = hashlib.sha256(b"fairness-test").hexdigest()
# Found by searching nonces with this seed pair (ops/tools/make_vectors.py): word 0 rejected.
REJECTION_SEED = hashlib.sha256(b"upgrader-vectors:rejection:0").hexdigest()
REJECTION_CLIENT, REJECTION_NONCES = "rejection", (378031, 682873)


def test_constants() -> None:
    assert ALGORITHM_KEY == "hmac_sha256_v1"
    assert REJECTION_BOUND == 4294960000 == 429496 * 10000
    assert REJECTION_BOUND <= 2**32 < REJECTION_BOUND + 10000


def test_seed_hash() -> None:
    assert seed_hash("0" * 64) == hashlib.sha256(b"0" * 64).hexdigest()
    assert seed_hash(SEED) == hashlib.sha256(SEED.encode()).hexdigest()
    assert seed_hash("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert seed_hash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


@pytest.mark.parametrize(
    ("seed", "ok"),
    [
        (SEED, True),
        ("0" * 64, True),
        ("f" * 64, True),
        ("F" * 64, False),
        ("0" * 63, False),
        ("0" * 65, False),
        ("g" * 64, False),
        ("0" * 63 + "\n", False),
        ("", False),
    ],
)
def test_server_seed_validation(seed: str, ok: bool) -> None:
    assert is_valid_server_seed(seed) is ok


@pytest.mark.parametrize(
    ("seed", "ok"),
    [
        ("a", True),
        (" ", True),
        ("~", True),
        ("x" * 64, True),
        ("a b:c!\"#$%&'()*+,-./", True),
        ("", False),
        ("x" * 65, False),
        ("a\tb", False),
        ("a\nb", False),
        ("\x7f", False),
        ("é", False),
        ("\x1f", False),
    ],
)
def test_client_seed_validation(seed: str, ok: bool) -> None:
    assert is_valid_client_seed(seed) is ok


def test_roll_rejects_bad_input() -> None:
    for args in (
        ("F" * 64, "a", 0),
        (SEED, "", 0),
        (SEED, "é", 0),
        (SEED, "a", -1),
        (SEED, "a", True),
    ):
        with pytest.raises(ValueError):
            roll(*args)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("nonce", "expected"),
    [
        (0, 1744),
        (1, 1352),
        (2, 9931),
        (3, 7695),
        (4, 3527),
        (10, 9331),
        (99, 1358),
        (2**32, 2631),
        (2**53 - 1, 5827),
    ],
)
def test_nonce_to_roll_vectors(nonce: int, expected: int) -> None:
    # expected values cross-checked with `openssl dgst -sha256 -hmac` outside Python
    assert reference_roll(SEED, "client seed", nonce)[0] == expected
    assert roll(SEED, "client seed", nonce) == expected


@given(
    server=st.binary(min_size=32, max_size=32).map(bytes.hex),
    client=st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=1, max_size=64),
    nonce=st.integers(min_value=0, max_value=2**64),
)
def test_roll_equals_independent_computation(server: str, client: str, nonce: int) -> None:
    rolled, cursor, index = reference_roll(server, client, nonce)
    assert roll(server, client, nonce) == rolled
    assert roll_trace(server, client, nonce) == RollTrace(rolled, cursor, index)
    assert 0 <= rolled <= 9999


def test_block_words_are_big_endian_u32() -> None:
    digest = hmac.new(SEED.encode(), b"client seed:7:0", hashlib.sha256).digest()
    words = block_words(SEED, "client seed", 7, 0)
    assert len(words) == 8
    assert words[0] == int.from_bytes(digest[:4], "big")
    assert words[7] == int.from_bytes(digest[28:], "big")


@pytest.mark.parametrize("nonce", REJECTION_NONCES)
def test_first_word_rejected(nonce: int) -> None:
    words = block_words(REJECTION_SEED, REJECTION_CLIENT, nonce, 0)
    assert words[0] >= REJECTION_BOUND
    assert words[1] < REJECTION_BOUND
    trace = roll_trace(REJECTION_SEED, REJECTION_CLIENT, nonce)
    assert trace == RollTrace(words[1] % 10000, 0, 1)
    assert trace.rejected_words == 1
    assert reference_roll(REJECTION_SEED, REJECTION_CLIENT, nonce) == (words[1] % 10000, 0, 1)
    assert trace.rolled_bps != words[0] % 10000


def test_word_selection_helper() -> None:
    bound = REJECTION_BOUND
    assert first_accepted([5, bound]) == 0
    assert first_accepted([bound, bound - 1]) == 1
    assert first_accepted([2**32 - 1, bound, bound + 1, 7]) == 3
    assert first_accepted([bound] * 8) is None
    assert first_accepted([]) is None


def test_rejection_moves_to_the_next_cursor() -> None:
    blocks = {0: [REJECTION_BOUND] * 8, 1: [2**32 - 1, REJECTION_BOUND - 1, 0, 0, 0, 0, 0, 0]}
    trace = roll_from_blocks(lambda cursor: blocks[cursor])
    assert trace == RollTrace((REJECTION_BOUND - 1) % 10000, 1, 1)
    assert trace.rolled_bps == 9999
    assert trace.rejected_words == 9
    calls: list[int] = []

    def every_block_rejected_until_three(cursor: int) -> list[int]:
        calls.append(cursor)
        return [REJECTION_BOUND] * 8 if cursor < 3 else [1234567, 0, 0, 0, 0, 0, 0, 0]

    assert roll_from_blocks(every_block_rejected_until_three) == RollTrace(4567, 3, 0)
    assert calls == [0, 1, 2, 3]


def test_is_win() -> None:
    assert is_win(4999, 5000)
    assert not is_win(5000, 5000)
    assert not is_win(0, 0)
    assert is_win(0, 1)
    assert is_win(9999, 10000)


PRESETS = (1000, 2500, 5000, 7500, 9000)
SIMULATED = 200_000


def test_win_rates_within_four_sigma() -> None:
    seed = hashlib.sha256(b"simulation").hexdigest()
    rolls = [roll(seed, "simulation", nonce) for nonce in range(SIMULATED)]
    for chance in PRESETS:
        wins = sum(1 for rolled in rolls if is_win(rolled, chance))
        # |wins - n p| <= 4 sqrt(n p (1 - p)), squared and scaled by 10000**2: integers only
        deviation = wins * 10000 - SIMULATED * chance
        assert deviation**2 <= 16 * SIMULATED * chance * (10000 - chance), (chance, wins)
    counts = [0] * 10
    for rolled in rolls:
        counts[rolled // 1000] += 1
    expected = SIMULATED // 10
    # each tenth of the range: p = 1/10, 4 sigma = 4 * sqrt(n * 0.09) ~ 537
    assert all((count - expected) ** 2 * 100 <= 16 * SIMULATED * 9 for count in counts)

"""Provable fairness, algorithm ``hmac_sha256_v1`` (decisions §3).

For cursor ``i = 0, 1, 2, ...``: ``h = HMAC_SHA256(key=serverSeed as ASCII,
msg=f"{clientSeed}:{nonce}:{i}")``, read as eight big-endian unsigned 32-bit words in
order. The first word ``u < 4294960000`` gives ``rolledBps = u % 10000``. Since
4294960000 is a multiple of 10000, every roll in 0..9999 is exactly equally likely.

Seed generation is random and lives in the application layer; this module is pure.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

ALGORITHM_KEY = "hmac_sha256_v1"
REJECTION_BOUND = 4294960000
WORDS_PER_BLOCK = 8
ROLL_SPACE = 10000

_SERVER_SEED = re.compile(r"[0-9a-f]{64}")
_WORDS = struct.Struct(">8I")


def is_valid_server_seed(s: str) -> bool:
    """64 lowercase hex characters."""
    return isinstance(s, str) and _SERVER_SEED.fullmatch(s) is not None


def is_valid_client_seed(s: str) -> bool:
    """1 to 64 printable ASCII characters (0x20 space to 0x7E tilde)."""
    # For ASCII text, isprintable() is exactly 0x20..0x7E.
    return isinstance(s, str) and 1 <= len(s) <= 64 and s.isascii() and s.isprintable()


def seed_hash(server_seed: str) -> str:
    """``serverSeedHash``: lowercase hex SHA-256 of the server seed as ASCII."""
    return hashlib.sha256(server_seed.encode("ascii")).hexdigest()


def block_words(server_seed: str, client_seed: str, nonce: int, cursor: int) -> tuple[int, ...]:
    """The eight big-endian u32 words of the HMAC block at ``cursor``."""
    message = f"{client_seed}:{nonce}:{cursor}".encode("ascii")
    digest = hmac.digest(server_seed.encode("ascii"), message, hashlib.sha256)
    return _WORDS.unpack(digest)


def first_accepted(words: Iterable[int]) -> int | None:
    """Index of the first word below the rejection bound, or None if all are rejected."""
    for index, word in enumerate(words):
        if word < REJECTION_BOUND:
            return index
    return None


@dataclass(frozen=True, slots=True)
class RollTrace:
    """A roll and where it came from: block ``cursor``, word ``word_index`` (0..7)."""

    rolled_bps: int
    cursor: int
    word_index: int

    @property
    def rejected_words(self) -> int:
        """How many words rejection sampling skipped before this roll."""
        return self.cursor * WORDS_PER_BLOCK + self.word_index


def roll_from_blocks(blocks: Callable[[int], Sequence[int]]) -> RollTrace:
    """Rejection sampling over ``blocks(0), blocks(1), ...`` (each a sequence of words)."""
    cursor = 0
    while True:
        words = blocks(cursor)
        index = first_accepted(words)
        if index is not None:
            return RollTrace(words[index] % ROLL_SPACE, cursor, index)
        cursor += 1


def _check(server_seed: str, client_seed: str, nonce: int) -> None:
    if not is_valid_server_seed(server_seed):
        raise ValueError("server seed must be 64 lowercase hex characters")
    if not is_valid_client_seed(client_seed):
        raise ValueError("client seed must be 1 to 64 printable ASCII characters")
    if isinstance(nonce, bool) or not isinstance(nonce, int) or nonce < 0:
        raise ValueError(f"nonce must be a non-negative int: {nonce!r}")


def roll_trace(server_seed: str, client_seed: str, nonce: int) -> RollTrace:
    """The roll for (serverSeed, clientSeed, nonce) with its cursor and word index."""
    _check(server_seed, client_seed, nonce)
    return roll_from_blocks(lambda cursor: block_words(server_seed, client_seed, nonce, cursor))


def roll(server_seed: str, client_seed: str, nonce: int) -> int:
    """``rolledBps`` in 0..9999 for (serverSeed, clientSeed, nonce).

    ValueError for a malformed server seed, client seed or a negative nonce.
    """
    _check(server_seed, client_seed, nonce)
    first = block_words(server_seed, client_seed, nonce, 0)[0]
    if first < REJECTION_BOUND:  # the common case, about 1 - 1.7e-6
        return first % ROLL_SPACE
    return roll_trace(server_seed, client_seed, nonce).rolled_bps


def is_win(rolled_bps: int, chance_bps: int) -> bool:
    """A round wins when the roll lands below the chance."""
    return rolled_bps < chance_bps

"""Provable fairness, algorithm ``hmac_sha256_v1`` (decisions §3).

For cursor ``i = 0, 1, 2, ...``: ``h = HMAC_SHA256(key=serverSeed as ASCII,
msg=f"{clientSeed}:{nonce}:{i}")``, read as eight big-endian unsigned 32-bit words in
order. The first word ``u < 4294960000`` gives ``rolledBps = u % 10000``. Since
4294960000 is a multiple of 10000, every roll in 0..9999 is exactly equally likely.

The same rejection sampling over any space ``T`` in 1..2^31 is the box draw (decisions
§10): the first word ``u < floor(2^32 / T) * T`` gives ``ticket = u % T``. ``draw`` does it
for any ``T``; ``roll`` is ``draw(..., 10000)``, whose bound is exactly 4294960000.

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
WORD_SPACE = 1 << 32
MAX_DRAW_SPACE = 1 << 31  # the largest totalTickets of a box (decisions §10)

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


def rejection_bound(space: int) -> int:
    """``floor(2^32 / space) * space``: the words at or above it are rejected."""
    _check_space(space)
    return WORD_SPACE - WORD_SPACE % space


def first_accepted(words: Iterable[int], bound: int = REJECTION_BOUND) -> int | None:
    """Index of the first word below ``bound`` (default: the roll's), or None if none is."""
    for index, word in enumerate(words):
        if word < bound:
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


@dataclass(frozen=True, slots=True)
class DrawTrace:
    """A draw of ``ticket`` in 0..space-1 from block ``cursor``, word ``word_index`` (0..7)."""

    ticket: int
    cursor: int
    word_index: int

    @property
    def rejected_words(self) -> int:
        """How many words rejection sampling skipped before this draw."""
        return self.cursor * WORDS_PER_BLOCK + self.word_index


def draw_from_blocks(blocks: Callable[[int], Sequence[int]], space: int) -> DrawTrace:
    """Rejection sampling over ``blocks(0), blocks(1), ...`` into 0..space-1."""
    bound = rejection_bound(space)
    cursor = 0
    while True:
        words = blocks(cursor)
        index = first_accepted(words, bound)
        if index is not None:
            return DrawTrace(words[index] % space, cursor, index)
        cursor += 1


def roll_from_blocks(blocks: Callable[[int], Sequence[int]]) -> RollTrace:
    """Rejection sampling over ``blocks(0), blocks(1), ...`` (each a sequence of words)."""
    trace = draw_from_blocks(blocks, ROLL_SPACE)
    return RollTrace(trace.ticket, trace.cursor, trace.word_index)


def _check(server_seed: str, client_seed: str, nonce: int) -> None:
    if not is_valid_server_seed(server_seed):
        raise ValueError("server seed must be 64 lowercase hex characters")
    if not is_valid_client_seed(client_seed):
        raise ValueError("client seed must be 1 to 64 printable ASCII characters")
    if isinstance(nonce, bool) or not isinstance(nonce, int) or nonce < 0:
        raise ValueError(f"nonce must be a non-negative int: {nonce!r}")


def _check_space(space: int) -> None:
    if type(space) is not int or not 1 <= space <= MAX_DRAW_SPACE:
        raise ValueError(f"space must be an int in 1..2^31: {space!r}")


def draw_trace(server_seed: str, client_seed: str, nonce: int, space: int) -> DrawTrace:
    """The draw over 0..space-1 for (serverSeed, clientSeed, nonce), with where it came from."""
    _check(server_seed, client_seed, nonce)
    return draw_from_blocks(
        lambda cursor: block_words(server_seed, client_seed, nonce, cursor), space
    )


def draw(server_seed: str, client_seed: str, nonce: int, space: int) -> int:
    """The ticket in 0..space-1 for (serverSeed, clientSeed, nonce) (decisions §10).

    ValueError for a malformed server seed, client seed, a negative nonce or a space
    outside 1..2^31.
    """
    _check(server_seed, client_seed, nonce)
    _check_space(space)
    first = block_words(server_seed, client_seed, nonce, 0)[0]
    # the common case (for the roll's 10000 about 1 - 1.7e-6 of all draws)
    if first < WORD_SPACE - WORD_SPACE % space:
        return first % space
    return draw_trace(server_seed, client_seed, nonce, space).ticket


def roll_trace(server_seed: str, client_seed: str, nonce: int) -> RollTrace:
    """The roll for (serverSeed, clientSeed, nonce) with its cursor and word index."""
    trace = draw_trace(server_seed, client_seed, nonce, ROLL_SPACE)
    return RollTrace(trace.ticket, trace.cursor, trace.word_index)


def roll(server_seed: str, client_seed: str, nonce: int) -> int:
    """``rolledBps`` in 0..9999 for (serverSeed, clientSeed, nonce): ``draw`` over 10000.

    ValueError for a malformed server seed, client seed or a negative nonce.
    """
    return draw(server_seed, client_seed, nonce, ROLL_SPACE)


def is_win(rolled_bps: int, chance_bps: int) -> bool:
    """A round wins when the roll lands below the chance."""
    return rolled_bps < chance_bps

"""Generate the published test vectors for ``hmac_sha256_v1``.

    python -m ops.tools.make_vectors            # (re)write tests/vectors/hmac_sha256_v1.json
    python -m ops.tools.make_vectors --check    # exit 1 if the file differs from what we make
    python -m ops.tools.make_vectors --search-rejections 2   # find rejection cases (slow)

Everything is deterministic: server seeds are SHA-256 hex digests of a counter label,
client seeds and nonces are derived from the counter. Nonces stay at or below 2**53 - 1
so that every consumer (including JavaScript) reads them exactly. The file also holds
cases where rejection sampling skipped the first word; those are rare (about 1 in
590,000 rolls), so they were found once with ``--search-rejections`` and are pinned in
``REJECTION_CASES`` below.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from itertools import count
from pathlib import Path

from domain.fairness import ALGORITHM_KEY, roll, roll_trace, seed_hash

DEFAULT_OUTPUT = Path(__file__).resolve().parents[2] / "tests" / "vectors" / "hmac_sha256_v1.json"
CASE_COUNT = 1000
PRINTABLE = "".join(chr(c) for c in range(0x20, 0x7F))
PUNCTUATION = "".join(ch for ch in PRINTABLE if not ch.isalnum())
MAX_SAFE_NONCE = 2**53 - 1
EDGE_NONCES = (1, 9, 10, 99, 100, 999, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 10**12, 2**53 - 1)

# (label of the server seed, client seed, nonce): the first HMAC word is rejected.
REJECTION_CASES: tuple[tuple[str, str, int], ...] = (
    ("rejection:0", "rejection", 378031),
    ("rejection:0", "rejection", 682873),
    ("rejection:1", "a b!~", 334037),
    ("rejection:1", "a b!~", 336837),
    ("rejection:2", "0123456789abcdef", 261378),
    ("rejection:2", "0123456789abcdef", 328344),
)


def server_seed(label: str) -> str:
    return hashlib.sha256(f"upgrader-vectors:{label}".encode("ascii")).hexdigest()


def _derived(k: int, purpose: str) -> int:
    digest = hashlib.sha256(f"upgrader-vectors:{purpose}:{k}".encode("ascii")).digest()
    return int.from_bytes(digest, "big")


def client_seed(k: int) -> str:
    """A printable-ASCII client seed of 1..64 characters, varied by ``k``."""
    r = _derived(k, "client")
    kind = k % 8
    if kind == 0:
        return f"{r:064x}"[:16]
    if kind == 1:
        return PRINTABLE[r % len(PRINTABLE)]
    if kind == 2:
        start = r % len(PRINTABLE)
        return (PRINTABLE[start:] + PRINTABLE)[:64]
    if kind == 3:
        return f"player seed {k}"
    if kind == 4:
        start = r % len(PUNCTUATION)
        return (PUNCTUATION[start:] + PUNCTUATION)[: 1 + (r >> 8) % len(PUNCTUATION)]
    if kind == 5:
        return f" {k} "
    if kind == 6:
        return f"a:{k}:b"
    length = 1 + (r >> 16) % 64
    return "".join(PRINTABLE[(r >> (3 * i)) % len(PRINTABLE)] for i in range(length))


def nonce(k: int) -> int:
    r = _derived(k, "nonce")
    kind = k % 5
    if kind == 0:
        return k
    if kind == 1:
        return 0
    if kind == 2:
        return r % 2**32
    if kind == 3:
        return r % (MAX_SAFE_NONCE + 1)
    return EDGE_NONCES[(k // 5) % len(EDGE_NONCES)]


def case(seed: str, client: str, n: int) -> dict[str, object]:
    return {
        "serverSeed": seed,
        "serverSeedHash": seed_hash(seed),
        "clientSeed": client,
        "nonce": n,
        "rolledBps": roll(seed, client, n),
    }


def build_document() -> dict[str, object]:
    cases = [case(server_seed(str(k)), client_seed(k), nonce(k)) for k in range(CASE_COUNT)]
    cases += [case(server_seed(label), client, n) for label, client, n in REJECTION_CASES]
    return {"algorithmKey": ALGORITHM_KEY, "cases": cases}


def render() -> str:
    return json.dumps(build_document(), indent=2, ensure_ascii=True) + "\n"


def search_rejections(label: str, client: str, wanted: int) -> list[int]:
    """Nonces (from 0 up) whose roll rejected at least one word. Slow by nature."""
    seed, found = server_seed(label), []
    for n in count():
        if roll_trace(seed, client, n).rejected_words:
            found.append(n)
            print(f"{label!r} {client!r} nonce={n}", flush=True)
            if len(found) >= wanted:
                return found
    raise AssertionError("unreachable")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    parser.add_argument("--search-rejections", type=int, metavar="N", default=0)
    args = parser.parse_args(argv)
    if args.search_rejections:
        for label, client in dict.fromkeys((lbl, cl) for lbl, cl, _ in REJECTION_CASES):
            search_rejections(label, client, args.search_rejections)
        return 0
    return write_or_check(render(), args.output, args.check)


def write_or_check(text: str, output: Path, check: bool) -> int:
    """Write ``text`` to ``output``, or (``check``) exit 1 when the file holds other text."""
    if check:
        current = output.read_text(encoding="ascii") if output.exists() else None
        if current != text:
            print(f"{output} is not what {Path(sys.argv[0]).name} generates", file=sys.stderr)
            return 1
        return 0
    output.write_text(text, encoding="ascii")
    print(f"wrote {output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

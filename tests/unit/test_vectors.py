"""The published vectors for ``hmac_sha256_v1`` (tests/vectors/hmac_sha256_v1.json)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from domain.fairness import (
    ALGORITHM_KEY,
    is_valid_client_seed,
    is_valid_server_seed,
    roll,
    seed_hash,
)
from ops.tools import make_vectors
from tests.unit.test_fairness import reference_roll

VECTORS = Path(__file__).resolve().parents[1] / "vectors" / "hmac_sha256_v1.json"
FIELDS = {"serverSeed", "serverSeedHash", "clientSeed", "nonce", "rolledBps"}


@pytest.fixture(scope="module")
def document() -> dict[str, object]:
    return json.loads(VECTORS.read_text(encoding="ascii"))


def test_file_is_what_the_script_generates() -> None:
    assert VECTORS.read_text(encoding="ascii") == make_vectors.render()
    assert make_vectors.main(["--check", "--output", str(VECTORS)]) == 0


def test_check_mode_detects_a_difference(tmp_path: Path) -> None:
    stale = tmp_path / "vectors.json"
    stale.write_text("{}\n", encoding="ascii")
    assert make_vectors.main(["--check", "--output", str(stale)]) == 1
    assert make_vectors.main(["--output", str(stale)]) == 0
    assert make_vectors.main(["--check", "--output", str(stale)]) == 0


def test_every_case_matches_project_and_independent_roll(document: dict) -> None:
    assert document["algorithmKey"] == ALGORITHM_KEY
    cases = document["cases"]
    assert len(cases) >= 1000
    for case in cases:
        assert set(case) == FIELDS
        server, client, nonce = case["serverSeed"], case["clientSeed"], case["nonce"]
        assert is_valid_server_seed(server) and is_valid_client_seed(client)
        assert type(nonce) is int and 0 <= nonce <= 2**53 - 1
        assert case["serverSeedHash"] == seed_hash(server)
        assert case["serverSeedHash"] == hashlib.sha256(server.encode("ascii")).hexdigest()
        assert case["rolledBps"] == roll(server, client, nonce)
        assert case["rolledBps"] == reference_roll(server, client, nonce)[0]


def test_cases_cover_the_interesting_inputs(document: dict) -> None:
    cases = document["cases"]
    clients = [case["clientSeed"] for case in cases]
    nonces = {case["nonce"] for case in cases}
    assert len({case["serverSeed"] for case in cases}) >= 1000
    assert set("".join(clients)) == {chr(c) for c in range(0x20, 0x7F)}  # every printable
    assert any(len(c) == 1 for c in clients) and any(len(c) == 64 for c in clients)
    assert any(c.startswith(" ") and c.endswith(" ") for c in clients)
    assert any(":" in c for c in clients)
    assert {0, 1, 2**32, 2**53 - 1} <= nonces and max(nonces) > 2**40
    rejected = [
        case
        for case in cases
        if reference_roll(case["serverSeed"], case["clientSeed"], case["nonce"])[2] > 0
    ]
    assert len(rejected) >= 3

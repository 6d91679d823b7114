"""``upgrader verify --vectors`` over the box draw vectors (src/entrypoints/cli_verify_draw.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit.test_box_draw import BOX_VECTORS
from tests.unit.test_verify_cli import VECTORS, verify

CASES: list[dict] = json.loads(BOX_VECTORS.read_text(encoding="ascii"))["cases"]


def _write(tmp_path: Path, cases: list) -> str:
    path = tmp_path / "vectors.json"
    path.write_text(json.dumps({"algorithmKey": "hmac_sha256_v1", "cases": cases}))
    return str(path)


def test_the_box_vectors_all_verify(capsys: pytest.CaptureFixture[str]) -> None:
    total = len(CASES)
    code, out, _ = verify(capsys, "--vectors", str(BOX_VECTORS))
    assert (code, out.strip()) == (0, f"{total} cases, {total} verified, 0 failed")
    code, out, _ = verify(capsys, "--vectors", str(BOX_VECTORS), "--json")
    report = json.loads(out)
    assert (code, report["cases"], report["verified"], report["failures"]) == (0, total, total, [])


def test_wrong_claims_and_malformed_cases_are_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rejected = next(c for c in CASES if c["cursor"] == 1)
    big = [c for c in CASES if c["totalTickets"] > 10][:5]
    cases = [dict(c) for c in (big[0], big[1], rejected, big[2], big[3], big[4])]
    cases[0]["ticket"] = (big[0]["ticket"] + 1) % big[0]["totalTickets"]
    cases[2]["cursor"] = 0  # a verifier that missed the rejected block
    cases[3]["totalTickets"] = 2**31 + 1
    cases[4]["ticket"] = cases[4]["totalTickets"]
    del cases[5]["ticket"]
    code, out, _ = verify(capsys, "--vectors", _write(tmp_path, cases))
    lines = out.strip().splitlines()
    assert code == 1
    assert lines == [
        f"case 0: MISMATCH: ticket: claimed {cases[0]['ticket']}, recomputed {big[0]['ticket']}",
        "case 2: MISMATCH: cursor: claimed 0, recomputed 1",
        "case 3: malformed: totalTickets must be in 1..2147483648: 2147483649",
        f"case 4: malformed: ticket must be in 0..{cases[4]['totalTickets'] - 1}: "
        f"{cases[4]['totalTickets']}",
        "case 5: malformed: case has no ticket",
        "6 cases, 1 verified, 5 failed",
    ]


def test_a_file_may_hold_rolls_and_draws(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rolls = json.loads(VECTORS.read_text(encoding="ascii"))["cases"][:3]
    code, out, _ = verify(capsys, "--vectors", _write(tmp_path, [*rolls, *CASES[:3]]))
    assert (code, out.strip()) == (0, "6 cases, 6 verified, 0 failed")

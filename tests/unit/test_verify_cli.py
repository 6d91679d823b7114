"""``upgrader verify``: the offline fairness verifier (src/entrypoints/cli_verify.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from domain.fairness import REJECTION_BOUND, block_words
from entrypoints.cli import main

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "tests" / "vectors" / "hmac_sha256_v1.json"
CASES: list[dict] = json.loads(VECTORS.read_text(encoding="ascii"))["cases"]
CASE = CASES[0]
OTHER_SEED = CASES[1]["serverSeed"] if CASES[1]["serverSeed"] != CASE["serverSeed"] else "0" * 64


def verify(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["verify", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def flags(case: dict, **claims: object) -> list[str]:
    argv = [
        "--server-seed",
        case["serverSeed"],
        "--client-seed",
        case["clientSeed"],
        "--nonce",
        str(case["nonce"]),
    ]
    for name, value in claims.items():
        argv += ["--" + name.replace("_", "-"), str(value)]
    return argv


def rejected_case() -> dict:
    """A vector case whose first word is rejected (rejection sampling used)."""
    for case in CASES:
        words = block_words(case["serverSeed"], case["clientSeed"], case["nonce"], 0)
        if words[0] >= REJECTION_BOUND:
            return case
    raise AssertionError("the vector file has no case with a rejected first word")


def round_document(case: dict, chance_bps: int, **changes: object) -> dict:
    rolled = case["rolledBps"]
    document = {
        "publicId": "r_42",
        "status": "settled",
        "mode": "balance",
        "betMinor": 1000,
        "payoutMinor": 0,
        "currency": "EUR",
        "chanceBps": chance_bps,
        "feeBps": 500,
        "rolledBps": rolled,
        "isWin": rolled < chance_bps,
        "target": None,
        "fairness": {
            "serverSeedHash": case["serverSeedHash"],
            "clientSeed": case["clientSeed"],
            "nonce": case["nonce"],
            "algorithmKey": "hmac_sha256_v1",
        },
        "settledAt": "2025-01-01T00:00:00Z",
    }
    document.update(changes)
    return document


# -- flags -----------------------------------------------------------------------------


@pytest.mark.parametrize("case", [CASE, rejected_case(), CASES[-1]], ids=["first", "rej", "last"])
def test_good_case_exits_0(capsys: pytest.CaptureFixture[str], case: dict) -> None:
    code, out, _ = verify(
        capsys,
        *flags(case, server_seed_hash=case["serverSeedHash"], rolled_bps=case["rolledBps"]),
    )
    assert code == 0, out
    assert f"server seed hash: {case['serverSeedHash']}" in out
    assert f"rolled bps:       {case['rolledBps']} (" in out
    assert "verified: all 2 claims hold" in out
    assert "MISMATCH" not in out


def test_seeds_alone_print_the_roll(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = verify(capsys, *flags(CASE))
    assert code == 0
    assert CASE["serverSeedHash"] in out and f"rolled bps:       {CASE['rolledBps']}" in out
    assert "no claims given to check" in out


def test_wrong_roll_exits_1_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    wrong = (CASE["rolledBps"] + 1) % 10000
    code, out, _ = verify(
        capsys, *flags(CASE, server_seed_hash=CASE["serverSeedHash"], rolled_bps=wrong)
    )
    assert code == 1
    assert f"MISMATCH: rolledBps: claimed {wrong}, recomputed {CASE['rolledBps']}" in out
    assert "ok: serverSeedHash matches" in out
    assert [line for line in out.splitlines() if line.startswith("MISMATCH")] == [
        f"MISMATCH: rolledBps: claimed {wrong}, recomputed {CASE['rolledBps']}"
    ]


def test_wrong_hash_exits_1_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    wrong = CASES[1]["serverSeedHash"]
    assert wrong != CASE["serverSeedHash"]
    code, out, _ = verify(
        capsys, *flags(CASE, server_seed_hash=wrong, rolled_bps=CASE["rolledBps"])
    )
    assert code == 1
    assert f"MISMATCH: serverSeedHash: claimed {wrong}, recomputed {CASE['serverSeedHash']}" in (
        out
    )
    assert "ok: rolledBps matches" in out
    assert "NOT VERIFIED: 1 of 2 claims do not hold" in out


def test_both_wrong_one_line_each(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = verify(
        capsys,
        *flags(
            CASE,
            server_seed_hash="f" * 64,
            rolled_bps=(CASE["rolledBps"] + 5000) % 10000,
        ),
    )
    assert code == 1
    mismatches = [line for line in out.splitlines() if line.startswith("MISMATCH")]
    assert [line.split(":")[1].strip() for line in mismatches] == ["serverSeedHash", "rolledBps"]


def test_uppercase_claimed_hash_is_the_same_hash(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = verify(capsys, *flags(CASE, server_seed_hash=CASE["serverSeedHash"].upper()))
    assert code == 0


def test_chance_prints_outcome_and_checks_is_win(capsys: pytest.CaptureFixture[str]) -> None:
    rolled = CASE["rolledBps"]
    win_chance, loss_chance = rolled + 1, rolled
    code, out, _ = verify(capsys, *flags(CASE, chance_bps=win_chance))
    assert code == 0
    assert f"outcome:          win (rolled {rolled} < chance {win_chance})" in out
    code, out, _ = verify(capsys, *flags(CASE, chance_bps=loss_chance))
    assert code == 0
    assert f"outcome:          loss (rolled {rolled} >= chance {loss_chance})" in out
    code, out, _ = verify(capsys, *flags(CASE, chance_bps=loss_chance, is_win="loss"))
    assert code == 0 and "ok: isWin matches (loss)" in out
    code, out, _ = verify(capsys, *flags(CASE, chance_bps=loss_chance, is_win="true"))
    assert code == 1
    assert "MISMATCH: isWin: claimed win, recomputed loss" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (flags({**CASE, "serverSeed": CASE["serverSeed"].upper()}), "server seed must be 64"),
        (flags({**CASE, "serverSeed": "abc"}), "server seed must be 64"),
        (flags({**CASE, "clientSeed": ""}), "client seed must be 1 to 64"),
        (flags({**CASE, "clientSeed": "x" * 65}), "client seed must be 1 to 64"),
        (flags({**CASE, "clientSeed": "caf\u00e9"}), "client seed must be 1 to 64"),
        (flags({**CASE, "nonce": -1}), "--nonce must be a non-negative decimal integer"),
        (flags({**CASE, "nonce": "1.5"}), "--nonce must be a non-negative decimal integer"),
        (flags({**CASE, "nonce": "9" * 5000}), "--nonce is too long: 5000 digits"),
        (flags(CASE, server_seed_hash="abc"), "--server-seed-hash must be 64 hex"),
        (flags(CASE, rolled_bps=10000), "--rolled-bps must be in 0..9999"),
        (flags(CASE, rolled_bps="x"), "--rolled-bps must be a non-negative"),
        (flags(CASE, chance_bps=10001), "--chance-bps must be in 0..10000"),
        (flags(CASE, is_win="true"), "--is-win needs --chance-bps"),
        (flags(CASE, chance_bps=10, is_win="maybe"), "--is-win must be"),
        (["--client-seed", "a", "--nonce", "0"], "--server-seed is required"),
        (["--server-seed", CASE["serverSeed"], "--nonce", "0"], "--client-seed and --nonce"),
    ],
)
def test_malformed_input_exits_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = verify(capsys, *argv)
    assert code == 2
    assert message in err
    assert out == ""


def test_json_output(capsys: pytest.CaptureFixture[str]) -> None:
    wrong = (CASE["rolledBps"] + 1) % 10000
    code, out, _ = verify(
        capsys,
        *flags(CASE, server_seed_hash=CASE["serverSeedHash"], rolled_bps=wrong, chance_bps=5000),
        "--json",
    )
    assert code == 1
    result = json.loads(out)
    assert result["ok"] is False
    assert result["algorithmKey"] == "hmac_sha256_v1"
    assert result["serverSeedHash"] == CASE["serverSeedHash"]
    assert result["rolledBps"] == CASE["rolledBps"]
    assert result["nonce"] == CASE["nonce"] and result["clientSeed"] == CASE["clientSeed"]
    assert result["isWin"] is (CASE["rolledBps"] < 5000)
    assert result["checks"] == [
        {
            "claim": "serverSeedHash",
            "ok": True,
            "claimed": CASE["serverSeedHash"],
            "recomputed": CASE["serverSeedHash"],
        },
        {"claim": "rolledBps", "ok": False, "claimed": wrong, "recomputed": CASE["rolledBps"]},
    ]
    code, out, _ = verify(capsys, *flags({**CASE, "serverSeed": "zz"}), "--json")
    assert code == 2
    assert json.loads(out) == {
        "ok": False,
        "error": "server seed must be 64 lowercase hex characters",
    }


def test_needs_no_config(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.toml"
    code, _, _ = verify(capsys, *flags(CASE), "--config", str(missing))
    assert code == 0


# -- vectors ---------------------------------------------------------------------------


def test_vectors_file_all_verified(capsys: pytest.CaptureFixture[str]) -> None:
    total = len(CASES)
    assert total == 1006
    code, out, _ = verify(capsys, "--vectors", str(VECTORS))
    assert code == 0
    assert out.strip() == f"{total} cases, {total} verified, 0 failed"
    code, out, _ = verify(capsys, "--vectors", str(VECTORS), "--json")
    assert code == 0
    report = json.loads(out)
    assert (report["cases"], report["verified"], report["failed"]) == (total, total, 0)


def test_vectors_file_with_a_bad_case(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cases = [dict(case) for case in CASES[:5]]
    cases[2]["rolledBps"] = (cases[2]["rolledBps"] + 1) % 10000
    cases[4]["serverSeed"] = "nothex"
    path = tmp_path / "vectors.json"
    path.write_text(json.dumps({"algorithmKey": "hmac_sha256_v1", "cases": cases}))
    code, out, _ = verify(capsys, "--vectors", str(path))
    assert code == 1
    lines = out.strip().splitlines()
    assert lines[-1] == "5 cases, 3 verified, 2 failed"
    assert lines[0].startswith("case 2: MISMATCH: rolledBps")
    assert lines[1].startswith("case 4: malformed: server seed")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ({"algorithmKey": "sha512_v9", "cases": CASES[:1]}, "unsupported algorithmKey"),
        ({"algorithmKey": "hmac_sha256_v1"}, "vector file must be"),
        ({"algorithmKey": "hmac_sha256_v1", "cases": []}, "no cases"),
        ("not json", "is not valid JSON"),
    ],
)
def test_vectors_file_malformed_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: object, message: str
) -> None:
    path = tmp_path / "vectors.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    code, _, err = verify(capsys, "--vectors", str(path))
    assert code == 2
    assert message in err


def test_vectors_takes_no_other_inputs(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = verify(capsys, "--vectors", str(VECTORS), "--nonce", "3")
    assert code == 2 and "--vectors takes no other inputs (got --nonce)" in err


def test_missing_file_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = verify(capsys, "--vectors", str(tmp_path / "nope.json"))
    assert code == 2 and "cannot read" in err


# -- round files -----------------------------------------------------------------------


@pytest.mark.parametrize("wrapped", [False, True], ids=["round", "play-answer"])
def test_round_file_verified(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, wrapped: bool
) -> None:
    document = round_document(CASE, chance_bps=5000)
    if wrapped:
        document = {"round": document, "wonItem": None, "balanceAfterMinor": 0, "facts": {}}
    path = tmp_path / "round.json"
    path.write_text(json.dumps(document))
    code, out, _ = verify(capsys, "--round", str(path), "--server-seed", CASE["serverSeed"])
    assert code == 0, out
    assert "round:            r_42" in out
    assert "verified: all 3 claims hold" in out
    code, out, _ = verify(
        capsys, "--round", str(path), "--server-seed", CASE["serverSeed"], "--json"
    )
    result = json.loads(out)
    assert code == 0 and result["ok"] is True and result["publicId"] == "r_42"
    assert [check["claim"] for check in result["checks"]] == [
        "serverSeedHash",
        "rolledBps",
        "isWin",
    ]


def test_round_file_with_another_seed_fails_the_hash(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "round.json"
    path.write_text(json.dumps(round_document(CASE, chance_bps=5000)))
    code, out, _ = verify(capsys, "--round", str(path), "--server-seed", OTHER_SEED)
    assert code == 1
    assert "MISMATCH: serverSeedHash" in out


def test_round_file_with_wrong_outcome(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    chance = CASE["rolledBps"] + 1  # a win
    path = tmp_path / "round.json"
    path.write_text(json.dumps(round_document(CASE, chance_bps=chance, isWin=False)))
    code, out, _ = verify(capsys, "--round", str(path), "--server-seed", CASE["serverSeed"])
    assert code == 1
    mismatches = [line for line in out.splitlines() if line.startswith("MISMATCH")]
    assert mismatches == ["MISMATCH: isWin: claimed loss, recomputed win"]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"fairness": {**round_document(CASE, 1)["fairness"], "algorithmKey": "v2"}},
            "unsupported algorithmKey 'v2'",
        ),
        ({"fairness": None, "status": "voided"}, "has no fairness data"),
        ({"rolledBps": "12"}, "rolledBps must be a non-negative integer"),
        ({"isWin": "yes"}, "isWin must be true or false"),
    ],
)
def test_round_file_malformed_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, changes: dict, message: str
) -> None:
    path = tmp_path / "round.json"
    path.write_text(json.dumps(round_document(CASE, chance_bps=5000, **changes)))
    code, _, err = verify(capsys, "--round", str(path), "--server-seed", CASE["serverSeed"])
    assert code == 2
    assert message in err


def test_round_file_needs_the_seed_and_no_other_flags(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "round.json"
    path.write_text(json.dumps(round_document(CASE, chance_bps=5000)))
    code, _, err = verify(capsys, "--round", str(path))
    assert code == 2 and "--server-seed is required" in err
    code, _, err = verify(
        capsys, "--round", str(path), "--server-seed", CASE["serverSeed"], "--nonce", "1"
    )
    assert code == 2 and "--round takes only --server-seed (got --nonce)" in err


# -- a real process --------------------------------------------------------------------


def test_subprocess(tmp_path: Path) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "src"), str(ROOT), *filter(None, [env.get("PYTHONPATH")])]
    )

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "entrypoints.cli", "verify", *argv],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=60,
            check=False,
        )

    good = run(*flags(CASE, server_seed_hash=CASE["serverSeedHash"], rolled_bps=CASE["rolledBps"]))
    assert good.returncode == 0, good.stderr
    assert "verified: all 2 claims hold" in good.stdout
    bad = run(*flags(CASE, rolled_bps=(CASE["rolledBps"] + 1) % 10000))
    assert bad.returncode == 1 and "MISMATCH: rolledBps" in bad.stdout
    malformed = run(*flags({**CASE, "serverSeed": "g" * 64}))
    assert malformed.returncode == 2 and "server seed must be 64" in malformed.stderr
    vectors = run("--vectors", str(VECTORS))
    assert vectors.returncode == 0, vectors.stderr
    total = len(CASES)
    assert vectors.stdout.strip() == f"{total} cases, {total} verified, 0 failed"

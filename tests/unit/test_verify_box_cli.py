"""``upgrader verify --space``: a box round's tickets over a bare space, offline
(src/entrypoints/cli_verify_box.py). Expected values come from the published vectors
(tests/vectors/box_draw_v1.json) and from ``reference_draw`` (hashlib, decisions §10).
The store-backed ``--box`` is tested in tests/integration/test_verify_box_store.py."""

from __future__ import annotations

import hashlib
import json

import pytest

from tests.unit.test_box_draw import BOX_VECTORS, THIRD, reference_draw
from tests.unit.test_verify_cli import verify

CASES: list[dict] = json.loads(BOX_VECTORS.read_text(encoding="ascii"))["cases"]
SERVER = hashlib.sha256(b"verify-box-cli").hexdigest()
CLIENT = "player chosen: 42"


def seeds(server: str, client: str, nonce: int) -> list[str]:
    return ["--server-seed", server, "--client-seed", client, "--nonce", str(nonce)]


def _pick(**wanted: int) -> dict:
    return next(c for c in CASES if all(c[k] == v for k, v in wanted.items()))


@pytest.mark.parametrize(
    "case",
    [
        _pick(totalTickets=1),
        _pick(totalTickets=2**31),
        _pick(totalTickets=THIRD, cursor=1, wordIndex=1),  # a whole first block rejected
        _pick(totalTickets=10000),
        next(c for c in CASES if c["cursor"] == 0 and c["wordIndex"] == 2),
    ],
    ids=["space-1", "space-2^31", "block-rejected", "space-10000", "word-2"],
)
def test_a_vector_case_verifies_as_a_one_box_round(
    capsys: pytest.CaptureFixture[str], case: dict
) -> None:
    argv = seeds(case["serverSeed"], case["clientSeed"], case["nonce"])
    argv += ["--space", str(case["totalTickets"]), "--tickets", str(case["ticket"])]
    argv += ["--server-seed-hash", case["serverSeedHash"].upper()]
    code, out, err = verify(capsys, *argv)
    where = f"block {case['cursor']}, word {case['wordIndex']}"
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "algorithm:        hmac_sha256_v1",
        f"client seed:      {case['clientSeed']}",
        f"nonce:            {case['nonce']} (1 box)",
        f"server seed hash: {case['serverSeedHash']}",
        f"total tickets:    {case['totalTickets']}",
        f"reel 1: nonce {case['nonce']}, ticket {case['ticket']} ({where})",
        f"ok: serverSeedHash matches ({case['serverSeedHash']})",
        f"ok: reel 1 (nonce {case['nonce']}) ticket matches ({case['ticket']})",
        "verified: all 2 claims hold",
    ]


def test_every_box_uses_the_next_nonce(capsys: pytest.CaptureFixture[str]) -> None:
    space = 1000
    drawn = [reference_draw(SERVER, CLIENT, nonce, space) for nonce in (7, 8, 9, 10)]
    tickets = ",".join(str(ticket) for ticket, _, _ in drawn)
    code, out, _ = verify(
        capsys, *seeds(SERVER, CLIENT, 7), "--space", "1000", "--tickets", tickets
    )
    lines = out.splitlines()
    assert code == 0
    assert lines[2] == "first nonce:      7 (4 boxes: nonces 7..10)"
    assert lines[5:9] == [
        f"reel {k + 1}: nonce {7 + k}, ticket {t} (block {c}, word {w})"
        for k, (t, c, w) in enumerate(drawn)
    ]
    assert lines[-1] == "verified: all 4 claims hold"
    # no claims: the reels are printed, nothing is checked
    code, out, _ = verify(capsys, *seeds(SERVER, CLIENT, 7), "--space", "1000", "--count", "4")
    assert code == 0
    assert out.splitlines()[5:] == [*lines[5:9], "no claims given to check"]


def test_a_wrong_ticket_is_a_mismatch_named_by_its_reel(
    capsys: pytest.CaptureFixture[str],
) -> None:
    drawn = [reference_draw(SERVER, CLIENT, nonce, THIRD)[0] for nonce in (0, 1, 2)]
    claimed = [drawn[0], (drawn[1] + 1) % THIRD, drawn[2]]
    argv = [*seeds(SERVER, CLIENT, 0), "--space", str(THIRD)]
    code, out, _ = verify(capsys, *argv, "--tickets", ",".join(map(str, claimed)))
    assert code == 1
    assert out.splitlines()[-4:] == [
        f"ok: reel 1 (nonce 0) ticket matches ({drawn[0]})",
        f"MISMATCH: reel 2 (nonce 1) ticket: claimed {claimed[1]}, recomputed {drawn[1]}",
        f"ok: reel 3 (nonce 2) ticket matches ({drawn[2]})",
        "NOT VERIFIED: 1 of 3 claims do not hold",
    ]
    code, out, _ = verify(capsys, *argv, "--count", "3", "--server-seed-hash", "0" * 64)
    assert code == 1
    assert out.splitlines()[-2:] == [
        f"MISMATCH: serverSeedHash: claimed {'0' * 64}, "
        f"recomputed {hashlib.sha256(SERVER.encode()).hexdigest()}",
        "NOT VERIFIED: 1 of 1 claims do not hold",
    ]


def test_json_gives_the_reels_as_facts_do(capsys: pytest.CaptureFixture[str]) -> None:
    case = _pick(totalTickets=1073741825, cursor=1, wordIndex=0)
    nonce = case["nonce"]
    second = reference_draw(case["serverSeed"], case["clientSeed"], nonce + 1, 1073741825)
    argv = seeds(case["serverSeed"], case["clientSeed"], nonce)
    argv += ["--space", "1073741825", "--tickets", f"{case['ticket']},{second[0]}", "--json"]
    code, out, _ = verify(capsys, *argv)
    assert code == 0
    assert json.loads(out) == {
        "ok": True,
        "publicId": None,
        "algorithmKey": "hmac_sha256_v1",
        "clientSeed": case["clientSeed"],
        "nonce": nonce,
        "count": 2,
        "serverSeedHash": case["serverSeedHash"],
        "totalTickets": 1073741825,
        "box": None,
        "reels": [
            {
                "boxId": None,
                "boxVersionId": None,
                "nonce": nonce + k,
                "ticket": ticket,
                "totalTickets": 1073741825,
                "itemId": None,
                "cursor": cursor,
                "wordIndex": word,
            }
            for k, (ticket, cursor, word) in enumerate([(case["ticket"], 1, 0), second])
        ],
        "checks": [
            {
                "claim": f"reel {k + 1} (nonce {nonce + k}) ticket",
                "ok": True,
                "claimed": ticket,
                "recomputed": ticket,
            }
            for k, ticket in enumerate([case["ticket"], second[0]])
        ],
    }


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--space", "10", "--box", "1", "--box-version", "1"], "give either --box ID"),
        (["--box", "1"], "--box and --box-version go together"),
        (["--box-version", "1"], "--box and --box-version go together"),
        (["--count", "2"], "give either --box ID --box-version V or --space T"),
        (["--space", "0"], "--space must be a whole number in 1..2147483648: '0'"),
        (["--space", "2147483649"], "--space must be a whole number in 1..2147483648"),
        (["--space", "-5"], "--space must be a whole number in 1..2147483648: '-5'"),
        (["--space", "10", "--count", "0"], "--count must be a whole number in 1..100: '0'"),
        (["--space", "10", "--count", "101"], "--count must be a whole number in 1..100"),
        (["--space", "10", "--count", "2", "--tickets", "1"], "--tickets has 1 values for 2"),
        (["--space", "10", "--tickets", "1,x"], "--tickets must be non-negative whole numbers"),
        (["--space", "10", "--items", "1"], "--items needs --box and --box-version"),
        (["--space", "10", "--odds-hash", "a" * 64], "--odds-hash needs --box and --box-"),
        (["--space", "10", "--database-url", "sqlite:///x"], "--database-url needs --box"),
        (["--space", "10", "--rolled-bps", "5"], "a box draw check takes no --rolled-bps"),
        (["--space", "10", "--server-seed-hash", "zz"], "--server-seed-hash must be 64 hex"),
        (["--space", "10", "--tickets", ",".join(["1"] * 101)], "a round has at most 100"),
    ],
)
def test_malformed_box_input_is_exit_2(
    capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    code, out, err = verify(capsys, *seeds(SERVER, CLIENT, 3), *extra)
    assert (code, out) == (2, "")
    assert err.startswith(f"upgrader verify: {message}"), err
    code, out, _ = verify(capsys, *seeds(SERVER, CLIENT, 3), *extra, "--json")
    assert code == 2
    assert json.loads(out)["ok"] is False


def test_seeds_and_the_first_nonce_are_required(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = verify(capsys, "--server-seed", SERVER, "--nonce", "1", "--space", "9")
    assert code == 2
    assert "--server-seed, --client-seed and --nonce (the first) are required" in err
    code, _, err = verify(capsys, *seeds(SERVER.upper(), CLIENT, 1), "--space", "9")
    assert (code, err) == (2, "upgrader verify: server seed must be 64 lowercase hex characters\n")


def test_a_ticket_outside_the_space_is_a_mismatch_not_a_crash(
    capsys: pytest.CaptureFixture[str],
) -> None:
    ticket = reference_draw(SERVER, CLIENT, 5, 6)[0]
    code, out, _ = verify(capsys, *seeds(SERVER, CLIENT, 5), "--space", "6", "--tickets", "6")
    assert code == 1
    assert out.splitlines()[-2] == (
        f"MISMATCH: reel 1 (nonce 5) ticket: claimed 6, recomputed {ticket}"
    )

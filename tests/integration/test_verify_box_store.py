"""``upgrader verify --box ID --box-version V``: each reel's ticket and item from the box
version's table in the store's recorded catalogue, on SQLite and PostgreSQL
(src/entrypoints/cli_verify_box.py, src/application/games/boxes/draw_check.py).

Expected values are computed here: tickets with ``reference_draw`` (hashlib, decisions
§10) or taken from the published vectors, items from ticket ranges written out by hand,
``oddsHash`` with hashlib from the decisions text."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from application.clock import ManualClock
from application.platform import Platform
from tests.support.config import make_config, raw_config
from tests.unit.test_box_draw import BOX_VECTORS, reference_draw
from tests.unit.test_verify_cli import verify

CASES: list[dict] = json.loads(BOX_VECTORS.read_text(encoding="ascii"))["cases"]
# a case whose whole first block is rejected: its ticket comes from block 1
REJECTED = next(c for c in CASES if c["totalTickets"] == 1073741825 and c["cursor"] == 1)
BIG = REJECTED["totalTickets"]
# box 20 version 1 (retired) and 2 (offered): the tables as the config lists them
SMALL = [(1, 10), (2, 60), (3, 30)]  # tickets 0..9, 10..69, 70..99
SMALL_RANGES = [(1, 0, 9), (2, 10, 69), (3, 70, 99)]
LARGE = [(4, 2**29), (5, 2**29), (6, BIG - 2**30)]  # 0..2^29-1, 2^29..2^30-1, 2^30..BIG-1
LARGE_RANGES = [(4, 0, 2**29 - 1), (5, 2**29, 2**30 - 1), (6, 2**30, BIG - 1)]
SERVER = hashlib.sha256(b"verify-box-store").hexdigest()
CLIENT = "my seed"


def odds_hash(box_id: int, version: int, price: int, table: list[tuple[int, int]]) -> str:
    items = ",".join(f"[{item},{weight}]" for item, weight in table)
    text = f'{{"boxId":{box_id},"boxVersionId":{version},"priceMinor":{price},"items":[{items}]}}'
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def item_of(ticket: int, ranges: list[tuple[int, int, int]]) -> tuple[int, int, int]:
    return next(r for r in ranges if r[1] <= ticket <= r[2])


@pytest.fixture
def store(database_url: str) -> str:
    raw = raw_config(database_url)
    for version, price, table, active in ((1, 500, SMALL, False), (2, 750, LARGE, True)):
        raw["catalog"]["boxes"].append(
            {
                "box_id": 20,
                "box_version_id": version,
                "name": {"en": "Twenty"},
                "price_minor": price,
                "items": [{"item_id": item, "weight": weight} for item, weight in table],
                "active": active,
            }
        )
    platform = Platform(make_config(database_url, raw), clock=ManualClock())
    platform.record_configuration()
    platform.close()
    return database_url


def box_argv(store: str, version: int, server: str, client: str, nonce: int) -> list[str]:
    return [
        "--server-seed",
        server,
        "--client-seed",
        client,
        "--nonce",
        str(nonce),
        "--box",
        "20",
        "--box-version",
        str(version),
        "--database-url",
        store,
    ]


def test_a_retired_version_verifies_tickets_and_items(
    capsys: pytest.CaptureFixture[str], store: str
) -> None:
    drawn = [reference_draw(SERVER, CLIENT, nonce, 100) for nonce in (11, 12, 13)]
    held = [item_of(ticket, SMALL_RANGES) for ticket, _, _ in drawn]
    expected_hash = odds_hash(20, 1, 500, SMALL)
    argv = box_argv(store, 1, SERVER, CLIENT, 11)
    argv += ["--items", ",".join(str(item) for item, _, _ in held), "--odds-hash", expected_hash]
    argv += ["--tickets", ",".join(str(ticket) for ticket, _, _ in drawn)]
    code, out, err = verify(capsys, *argv)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[:8] == [
        "algorithm:        hmac_sha256_v1",
        "box:              20 version 1 (inactive, price 500, 3 items)",
        f"odds hash:        {expected_hash}",
        f"client seed:      {CLIENT}",
        "first nonce:      11 (3 boxes: nonces 11..13)",
        f"server seed hash: {hashlib.sha256(SERVER.encode()).hexdigest()}",
        "total tickets:    100",
        *[
            f"reel 1: nonce 11, ticket {drawn[0][0]} (block {drawn[0][1]}, word {drawn[0][2]})"
            f" -> item {held[0][0]} (tickets {held[0][1]}..{held[0][2]})"
        ],
    ]
    assert lines[10:] == [
        f"ok: recorded oddsHash matches ({expected_hash})",
        f"ok: oddsHash matches ({expected_hash})",
        *[
            line
            for k in range(3)
            for line in (
                f"ok: reel {k + 1} (nonce {11 + k}) ticket matches ({drawn[k][0]})",
                f"ok: reel {k + 1} (nonce {11 + k}) itemId matches ({held[k][0]})",
            )
        ],
        "verified: all 8 claims hold",
    ]


def test_a_vector_case_through_a_recorded_table(
    capsys: pytest.CaptureFixture[str], store: str
) -> None:
    case = REJECTED
    item, start, end = item_of(case["ticket"], LARGE_RANGES)
    argv = box_argv(store, 2, case["serverSeed"], case["clientSeed"], case["nonce"])
    code, out, _ = verify(capsys, *argv, "--items", str(item), "--json")
    assert code == 0
    answer = json.loads(out)
    assert answer["box"] == {
        "boxId": 20,
        "boxVersionId": 2,
        "priceMinor": 750,
        "active": True,
        "oddsHash": odds_hash(20, 2, 750, LARGE),
        "recordedOddsHash": odds_hash(20, 2, 750, LARGE),
        "totalTickets": BIG,
        "items": [
            {
                "itemId": i,
                "weight": b - a + 1,
                "ticketFrom": a,
                "ticketTo": b,
                "probabilityBps": 10000 * (b - a + 1) // BIG,
            }
            for i, a, b in LARGE_RANGES
        ],
    }
    assert answer["reels"] == [
        {
            "boxId": 20,
            "boxVersionId": 2,
            "nonce": case["nonce"],
            "ticket": case["ticket"],
            "totalTickets": BIG,
            "itemId": item,
            "cursor": 1,
            "wordIndex": case["wordIndex"],
            "ticketFrom": start,
            "ticketTo": end,
        }
    ]
    assert [c["claim"] for c in answer["checks"]] == [
        "recorded oddsHash",
        f"reel 1 (nonce {case['nonce']}) itemId",
    ]
    assert (answer["ok"], answer["count"], answer["serverSeedHash"]) == (
        True,
        1,
        case["serverSeedHash"],
    )


def test_wrong_items_and_odds_hash_are_mismatches(
    capsys: pytest.CaptureFixture[str], store: str
) -> None:
    drawn = [reference_draw(SERVER, CLIENT, nonce, 100)[0] for nonce in (0, 1)]
    held = [item_of(ticket, SMALL_RANGES)[0] for ticket in drawn]
    wrong = [held[0], 3 if held[1] != 3 else 2]
    other_hash = odds_hash(20, 2, 750, LARGE)
    argv = box_argv(store, 1, SERVER, CLIENT, 0)
    argv += ["--items", f"{wrong[0]},{wrong[1]}", "--odds-hash", other_hash]
    code, out, _ = verify(capsys, *argv)
    assert code == 1
    assert out.splitlines()[-5:] == [
        f"ok: recorded oddsHash matches ({odds_hash(20, 1, 500, SMALL)})",
        f"MISMATCH: oddsHash: claimed {other_hash}, recomputed {odds_hash(20, 1, 500, SMALL)}",
        f"ok: reel 1 (nonce 0) itemId matches ({held[0]})",
        f"MISMATCH: reel 2 (nonce 1) itemId: claimed {wrong[1]}, recomputed {held[1]}",
        "NOT VERIFIED: 2 of 4 claims do not hold",
    ]


def test_a_version_the_store_never_recorded_is_exit_2(
    capsys: pytest.CaptureFixture[str], store: str
) -> None:
    for box, version in (("20", "3"), ("21", "1")):
        argv = box_argv(store, 1, SERVER, CLIENT, 0)
        argv[argv.index("--box") + 1] = box
        argv[argv.index("--box-version") + 1] = version
        code, out, err = verify(capsys, *argv)
        assert (code, out) == (2, "")
        assert err == (
            f"upgrader verify: box {box} version {version} is not in the store's "
            "recorded catalogue\n"
        )


def test_a_store_that_is_not_there_is_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = f"sqlite:///{tmp_path}/missing.db"
    code, out, err = verify(capsys, *box_argv(missing, 1, SERVER, CLIENT, 0), "--json")
    assert code == 2
    assert json.loads(out)["ok"] is False
    assert err.startswith(f"upgrader verify: no database at {tmp_path}/missing.db")
    assert not (tmp_path / "missing.db").exists()  # nothing created


def test_the_store_may_come_from_the_configuration(
    capsys: pytest.CaptureFixture[str], store: str, tmp_path: Path
) -> None:
    """Without --database-url the store is the configuration's ``database_url``."""
    demo = Path(__file__).resolve().parents[2] / "ops" / "demo" / "config.toml"
    text = demo.read_text(encoding="utf-8")
    line = 'database_url = "sqlite:///var/upgrader.db"'
    assert line in text
    config = tmp_path / "config.toml"
    config.write_text(text.replace(line, f"database_url = {json.dumps(store)}"), "utf-8")
    ticket = reference_draw(SERVER, CLIENT, 4, 100)[0]
    argv = box_argv(store, 1, SERVER, CLIENT, 4)[:-2]  # no --database-url
    code, out, _ = verify(capsys, *argv, "--config", str(config), "--tickets", str(ticket))
    assert code == 0
    assert out.splitlines()[-1] == "verified: all 2 claims hold"
    item, start, end = item_of(ticket, SMALL_RANGES)
    assert f"-> item {item} (tickets {start}..{end})" in out


# -- a box round as the API answers it (decisions §10) -------------------------------------


def box_round(first: int, count: int, **change: object) -> dict:
    """The open answer of a round of ``count`` boxes of box 20 version 1, from nonce
    ``first``, its reels recomputed here."""
    reels = []
    for k in range(count):
        ticket = reference_draw(SERVER, CLIENT, first + k, 100)[0]
        item = item_of(ticket, SMALL_RANGES)[0]
        reels.append(
            {
                "boxId": 20,
                "boxVersionId": 1,
                "nonce": first + k,
                "ticket": ticket,
                "totalTickets": 100,
                "itemId": item,
            }
        )
    round_ = {
        "publicId": "r_box1",
        "status": "settled",
        "game": "boxes",
        "betMinor": 500 * count,
        "payoutMinor": 0,
        "currency": "EUR",
        "box": {
            "boxId": 20,
            "boxVersionId": 1,
            "count": count,
            "oddsHash": odds_hash(20, 1, 500, SMALL),
            "totalTickets": 100,
        },
        "fairness": {
            "serverSeedHash": hashlib.sha256(SERVER.encode()).hexdigest(),
            "clientSeed": CLIENT,
            "nonce": first,
            "algorithmKey": "hmac_sha256_v1",
        },
        "settledAt": "2026-11-25T08:00:00Z",
    }
    answer = {"round": round_, "wonItems": [], "balanceAfterMinor": 0, "facts": {"reels": reels}}
    answer.update(change)
    return answer


def _file(tmp_path: Path, document: object) -> str:
    path = tmp_path / "round.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return str(path)


def test_a_box_round_file_is_verified_reel_by_reel(
    capsys: pytest.CaptureFixture[str], store: str, tmp_path: Path
) -> None:
    answer = box_round(40, 2)
    reels = answer["facts"]["reels"]
    argv = ["--round", _file(tmp_path, answer), "--server-seed", SERVER, "--database-url", store]
    code, out, err = verify(capsys, *argv)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    seed_hash = hashlib.sha256(SERVER.encode()).hexdigest()
    expected_hash = odds_hash(20, 1, 500, SMALL)
    assert lines[:2] == ["round:            r_box1", "algorithm:        hmac_sha256_v1"]
    assert lines[-11:] == [
        f"ok: serverSeedHash matches ({seed_hash})",
        f"ok: recorded oddsHash matches ({expected_hash})",
        f"ok: oddsHash matches ({expected_hash})",
        "ok: totalTickets matches (100)",
        *[
            line
            for k, reel in enumerate(reels)
            for line in (
                f"ok: reel {k + 1} nonce matches ({40 + k})",
                f"ok: reel {k + 1} (nonce {40 + k}) ticket matches ({reel['ticket']})",
                f"ok: reel {k + 1} (nonce {40 + k}) itemId matches ({reel['itemId']})",
            )
        ],
        "verified: all 10 claims hold",
    ]


def test_a_webhook_with_a_wrong_item_and_a_round_without_facts(
    capsys: pytest.CaptureFixture[str], store: str, tmp_path: Path
) -> None:
    answer = box_round(0, 3)
    reel = answer["facts"]["reels"][1]
    truth = reel["itemId"]
    reel["itemId"] = 3 if truth != 3 else 1
    webhook = {"id": "wh_1", "type": "round_settled", "data": answer}
    argv = ["--round", _file(tmp_path, webhook), "--server-seed", SERVER, "--database-url", store]
    code, out, _ = verify(capsys, *argv)
    assert code == 1
    assert (
        f"MISMATCH: reel 2 (nonce 1) itemId: claimed {reel['itemId']}, recomputed {truth}"
        in out.splitlines()
    )
    assert out.splitlines()[-1] == "NOT VERIFIED: 1 of 13 claims do not hold"
    # the round alone (as round history lists it): no reels to compare, the rest checked
    alone = box_round(0, 3)["round"]
    argv[1] = _file(tmp_path, alone)
    code, out, _ = verify(capsys, *argv, "--json")
    report = json.loads(out)
    assert (code, report["ok"], report["publicId"], report["count"]) == (0, True, "r_box1", 3)
    assert [c["claim"] for c in report["checks"]] == [
        "serverSeedHash",
        "recorded oddsHash",
        "oddsHash",
        "totalTickets",
    ]
    assert [r["itemId"] for r in report["reels"]] == [
        r["itemId"] for r in box_round(0, 3)["facts"]["reels"]
    ]


@pytest.mark.parametrize(
    ("change", "extra", "message"),
    [
        ({}, ["--nonce", "3"], "--round takes only --server-seed (and --database-url or"),
        ({}, ["--items", "1"], "--round takes only --server-seed (and --database-url or --config)"),
        ({"reels": "drop"}, [], "facts.reels must list one reel per box (2), got 1"),
        ({"reels": "other box"}, [], "facts.reels[0].boxVersionId is 2, the round's box says 1"),
        ({"fairness": None}, [], "round r_box1 has no fairness data (status 'settled')"),
        ({"algorithm": "sha512"}, [], "unsupported algorithmKey 'sha512'"),
        ({"count": 0}, [], "box.count must be an integer in 1..100: 0"),
        ({"upgrader": True}, [], "--database-url is for box rounds; this round is not one"),
    ],
)
def test_a_malformed_box_round_file_is_exit_2(
    capsys: pytest.CaptureFixture[str],
    store: str,
    tmp_path: Path,
    change: dict,
    extra: list[str],
    message: str,
) -> None:
    answer = box_round(5, 2)
    if change.get("reels") == "drop":
        answer["facts"]["reels"].pop()
    if change.get("reels") == "other box":
        answer["facts"]["reels"][0]["boxVersionId"] = 2
    if "fairness" in change:
        del answer["round"]["fairness"]
    if "algorithm" in change:
        answer["round"]["fairness"]["algorithmKey"] = change["algorithm"]
    if "upgrader" in change:  # an Upgrader round: the roll's verify, which takes no store
        del answer["round"]["box"]
        answer["round"]["game"] = "upgrader"
    if "count" in change:
        answer["round"]["box"]["count"] = change["count"]
    argv = ["--round", _file(tmp_path, answer), "--server-seed", SERVER, "--database-url", store]
    code, out, err = verify(capsys, *argv, *extra)
    assert (code, out) == (2, "")
    assert err.startswith(f"upgrader verify: {message}"), err

"""The verifier page's box draws (``drawReels``, ``verifyBoxDraw`` and the page's
``form#box-verifier`` in src/api/static/fairness.js) under Node, and in Chromium with
verifier.html opened from file://.

Node (skipped without ``node``): every case of tests/vectors/box_draw_v1.json as a one-box
round through ``verifyBoxDraw``, with a three-item table cut here, must give the vector's
ticket, cursor and word, and the item whose range (computed here) holds it; rounds of
several boxes use consecutive nonces (``reference_draw``, hashlib); malformed input is
refused. Loaded both as a CommonJS module and as a plain browser script.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import msgspec
import pytest

from application.games.boxes.answers import BoxAnswer, BoxItemAnswer
from domain.boxes import BoxEntry, BoxVersion
from tests.unit.test_box_draw import BOX_VECTORS, THIRD, reference_draw
from tests.unit.test_fairness_js import FAIRNESS_JS, NODE, VERIFIER_HTML, needs_node

CASES: list[dict] = json.loads(BOX_VECTORS.read_text(encoding="ascii"))["cases"]
SERVER = hashlib.sha256(b"box-verifier-js").hexdigest()
CLIENT = "lucky seven"
BIG_NONCE = 2**53 - 1  # the next nonces are beyond a double's exact integers


def table(total: int) -> list[tuple[int, int, int]]:
    """Items 1..3 over ``total`` tickets: (itemId, ticketFrom, ticketTo), in table order."""
    if total < 3:
        return [(1, 0, total - 1)]
    a, b = total // 3, 2 * total // 3
    return [(1, 0, a - 1), (2, a, b - 1), (3, b, total - 1)]


def ranges_text(rows: list[tuple[int, int, int]], as_json: bool) -> str:
    if as_json:  # the box version as GET /api/play/boxes/{boxId}/versions/{v} answers it
        version = BoxVersion(
            box_id=5,
            box_version_id=2,
            price_minor=100,
            entries=tuple(BoxEntry(i, b - a + 1) for i, a, b in rows),
        )
        items = [
            BoxItemAnswer(
                item_id=r.item_id,
                name=f"Item {r.item_id}",
                value_minor=10,
                image_url=None,
                weight=r.weight,
                ticket_from=r.ticket_from,
                ticket_to=r.ticket_to,
                probability_bps=r.probability_bps,
            )
            for r in version.ranges()
        ]
        answer = BoxAnswer(
            box_id=5,
            box_version_id=2,
            name="Five",
            image_url=None,
            price_minor=100,
            currency="EUR",
            odds_hash=version.odds_hash,
            total_tickets=version.total_tickets,
            rtp_bps=0,
            available=True,
            offered=True,
            items=items,
        )
        return msgspec.json.encode(answer).decode()
    return "\n".join(f"{i} {a}-{b}" for i, a, b in rows)


def item_of(ticket: int, rows: list[tuple[int, int, int]]) -> int:
    return next(i for i, a, b in rows if a <= ticket <= b)


DRIVER = r"""
"use strict";
const fs = require("fs");
const vm = require("vm");
const [fairnessPath, inputPath] = process.argv.slice(2);
const M = require(fairnessPath);
const sandbox = { crypto: globalThis.crypto };
vm.runInNewContext(fs.readFileSync(fairnessPath, "utf8"), sandbox, { filename: fairnessPath });
const B = sandbox.UpgraderFairness;

async function main() {
  const input = JSON.parse(fs.readFileSync(inputPath, "utf8"));
  const out = { cases: [], rounds: [], errors: [], parsed: [] };
  for (let i = 0; i < input.cases.length; i++) {
    const c = input.cases[i];
    const api = i % 2 ? M : B;  // half as a module, half as browser scripts
    const r = await api.verifyBoxDraw(c);
    out.cases.push([r.ok, r.checks.length, r.totalTickets, r.serverSeedHash,
      ...["nonce", "ticket", "cursor", "wordIndex", "itemId", "ticketFrom", "ticketTo"]
        .map((k) => r.reels[0][k])]);
  }
  for (const round of input.rounds) {
    const r = await B.verifyBoxDraw(round);
    out.rounds.push({ ok: r.ok, reels: r.reels, checks: r.checks, notes: r.notes,
      tableOddsHash: r.tableOddsHash || null });
  }
  for (const bad of input.bad) {
    try { await M.verifyBoxDraw(bad); out.errors.push("accepted"); }
    catch (e) { out.errors.push(e.name + ": " + e.message); }
  }
  for (const text of input.tables) {
    out.parsed.push(B.parseTable(text));
  }
  console.log(JSON.stringify(out));
}
main().catch((e) => { console.error(e); process.exit(3); });
"""


def _round(nonce: int | str, count: str, total: int, **claims: str) -> dict:
    rows = table(total)
    return {
        "serverSeed": SERVER,
        "clientSeed": CLIENT,
        "nonce": str(nonce),
        "count": count,
        "ranges": ranges_text(rows, as_json=False),
        "totalTickets": "",
        **claims,
    }


def _version_round(nonce: int, price: int, currency: str = "EUR", **claims: str) -> dict:
    """A two-box round over 1000 tickets whose ranges are box 5 version 2's JSON as the
    catalogue answers it, in ``currency`` at ``price``."""
    version = json.loads(ranges_text(table(1000), as_json=True))
    version["priceMinor"], version["currency"] = price, currency
    return {**_round(nonce, "2", 1000, **claims), "ranges": json.dumps(version)}


def odds_hash_of(price: int, rows: list[tuple[int, int, int]]) -> str:
    """Decisions §10's oddsHash of box 5 version 2 at ``price``, with hashlib."""
    items = ",".join(f"[{i},{b - a + 1}]" for i, a, b in rows)
    text = f'{{"boxId":5,"boxVersionId":2,"priceMinor":{price},"items":[{items}]}}'
    return hashlib.sha256(text.encode("ascii")).hexdigest()


COMMITTED = odds_hash_of(100, table(1000))  # box 5 version 2 in the base currency
ROUNDS = [
    _round(7, "5", 1000),
    _round(BIG_NONCE, "3", THIRD),
    _round(0, "", 10, tickets="0,0", items="1,2"),  # count from the claims: 2 boxes
    _version_round(40, 100, oddsHash=COMMITTED.upper(), nonces="40, 41"),
    _version_round(40, 110, "USD", oddsHash=COMMITTED, nonces="40,42"),  # USD at 1.1
    _version_round(40, 100, oddsHash="ab" * 32),  # another table's hash
]
GOOD = {"serverSeed": SERVER, "clientSeed": CLIENT, "nonce": "1", "count": "1"}
BAD = [
    ({**GOOD, "ranges": "1 0-9\n2 11-20"}, "item 2 (itemId 2) starts at ticket 11, expected 10"),
    ({**GOOD, "ranges": "1 1-9"}, "item 1 (itemId 1) starts at ticket 1, expected 0"),
    ({**GOOD, "ranges": "1 0-9\n2 5-20"}, "item 2 (itemId 2) starts at ticket 5, expected 10"),
    ({**GOOD, "ranges": "1 0-9\nten 10-20"}, "line 2 is not ITEM FROM-TO"),
    ({**GOOD, "ranges": "1 0-2147483648"}, "item 1: ticketTo must be a whole number in"),
    (
        {
            **GOOD,
            "ranges": '{"totalTickets": 11, "items": [{"itemId": 1, "ticketFrom": 0, '
            '"ticketTo": 9}]}',
        },
        "totalTickets says 11 but the ranges hold 10",
    ),
    ({**GOOD, "ranges": "{not json"}, "the ticket ranges are not valid JSON"),
    ({**GOOD}, "give the box's ticket ranges or its total tickets"),
    ({**GOOD, "ranges": "1 0-9", "totalTickets": "11"}, "total tickets 11 differs from"),
    ({**GOOD, "totalTickets": "0"}, "total tickets must be a whole number in 1..2147483648"),
    ({**GOOD, "totalTickets": "2147483649"}, "total tickets must be a whole number in 1.."),
    ({**GOOD, "totalTickets": "9", "count": "0"}, "the number of boxes must be a whole number"),
    ({**GOOD, "totalTickets": "9", "count": "101"}, "the number of boxes must be a whole"),
    ({**GOOD, "totalTickets": "9", "items": "1"}, "items can only be checked with the box's"),
    ({**GOOD, "totalTickets": "9", "count": "2", "tickets": "1"}, "1 tickets given for 2 boxes"),
    ({**GOOD, "totalTickets": "9", "nonce": "-1"}, "the first nonce must be a non-negative"),
    ({**GOOD, "totalTickets": "9", "serverSeed": "A" * 64}, "server seed must be 64 lowercase"),
    ({**GOOD, "totalTickets": "9", "clientSeed": ""}, "client seed must be 1 to 64 printable"),
    ({**GOOD, "totalTickets": "9", "serverSeedHash": "xyz"}, "server seed hash must be 64 hex"),
    ({**GOOD, "totalTickets": "9", "oddsHash": "xyz"}, "the oddsHash must be 64 hex characters"),
    ({**GOOD, "totalTickets": "9", "nonces": "1,2"}, "2 nonces given for 1 boxes"),
    ({**GOOD, "totalTickets": "9", "nonces": "-1"}, "a claimed nonce must be a non-negative"),
]
TABLES = [
    "101 0-9\n102: 10..69\n\n103 70 99\n",
    json.dumps({"box": {"items": [{"itemId": 7, "ticketFrom": 0, "ticketTo": 0}]}}),
    json.dumps([{"itemId": 8, "ticketFrom": 0, "ticketTo": 2**31 - 1}]),
]


@pytest.fixture(scope="module")
def node_result(tmp_path_factory: pytest.TempPathFactory) -> dict:
    import subprocess

    assert NODE is not None
    folder = tmp_path_factory.mktemp("box-node")
    cases = []
    for index, case in enumerate(CASES):
        rows = table(case["totalTickets"])
        cases.append(
            {
                "serverSeed": case["serverSeed"],
                "clientSeed": case["clientSeed"],
                "nonce": case["nonce"] if index % 3 else str(case["nonce"]),
                "count": "1",
                "ranges": ranges_text(rows, as_json=index % 4 == 1),
                "totalTickets": "" if index % 5 else str(case["totalTickets"]),
                "serverSeedHash": case["serverSeedHash"],
                "tickets": str(case["ticket"]),
                "items": str(item_of(case["ticket"], rows)),
            }
        )
    document = {"cases": cases, "rounds": ROUNDS, "bad": [b for b, _ in BAD], "tables": TABLES}
    (folder / "input.json").write_text(json.dumps(document), encoding="utf-8")
    (folder / "driver.js").write_text(DRIVER, encoding="utf-8")
    completed = subprocess.run(
        [NODE, str(folder / "driver.js"), str(FAIRNESS_JS), str(folder / "input.json")],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)


@needs_node
def test_every_box_vector_verifies_as_a_one_box_round_in_node(node_result: dict) -> None:
    expected = []
    for index, case in enumerate(CASES):
        rows = table(case["totalTickets"])
        item = item_of(case["ticket"], rows)
        _, start, end = next(r for r in rows if r[0] == item)
        expected.append(
            [
                True,
                # serverSeedHash, ticket, item; with the catalogue's JSON, its oddsHash
                4 if index % 4 == 1 else 3,
                case["totalTickets"],
                case["serverSeedHash"],
                str(case["nonce"]),
                case["ticket"],
                case["cursor"],
                case["wordIndex"],
                item,
                start,
                end,
            ]
        )
    assert len(node_result["cases"]) == len(CASES) == 1113
    assert node_result["cases"] == expected
    assert sum(1 for c in CASES if c["cursor"]) == 4  # whole rejected blocks are among them


@needs_node
def test_a_round_of_several_boxes_uses_consecutive_nonces_in_node(node_result: dict) -> None:
    results = node_result["rounds"][:3]
    for (first, count, total), result in zip(
        [(7, 5, 1000), (BIG_NONCE, 3, THIRD), (0, 2, 10)], results, strict=True
    ):
        rows = table(total)
        reels = []
        for k in range(count):
            ticket, cursor, word = reference_draw(SERVER, CLIENT, first + k, total)
            item = item_of(ticket, rows)
            _, start, end = next(r for r in rows if r[0] == item)
            reels.append(
                {
                    "box": k + 1,
                    "nonce": str(first + k),
                    "ticket": ticket,
                    "cursor": cursor,
                    "wordIndex": word,
                    "totalTickets": total,
                    "itemId": item,
                    "ticketFrom": start,
                    "ticketTo": end,
                }
            )
        assert result["reels"] == reels
    # the third round claims tickets 0,0 and items 1,2 over 10 tickets
    drawn = [reference_draw(SERVER, CLIENT, n, 10)[0] for n in (0, 1)]
    items = [item_of(t, table(10)) for t in drawn]
    assert results[2]["checks"] == [
        {
            "claim": f"box {k + 1} (nonce {k}) {what}",
            "ok": got == claimed,
            "claimed": claimed,
            "recomputed": got,
        }
        for k in range(2)
        for what, claimed, got in (("ticket", 0, drawn[k]), ("item", k + 1, items[k]))
    ]
    assert results[2]["ok"] is (drawn == [0, 0] and items == [1, 2])
    assert results[0]["ok"] is True and results[0]["checks"] == []


@needs_node
def test_the_odds_hash_and_nonces_of_a_box_round_are_checked_in_node(node_result: dict) -> None:
    """The round's oddsHash against the pasted version's, the version's table and price
    hashed again (hashlib here); a version shown in another currency (a repriced
    priceMinor) is a note, not a failure; each reel's nonce against the claims."""
    base, usd, foreign = node_result["rounds"][3:]

    def check(claim: str, claimed: object, recomputed: object) -> dict:
        return {
            "claim": claim,
            "ok": claimed == recomputed,
            "claimed": claimed,
            "recomputed": recomputed,
        }

    assert base["checks"] == [
        check("oddsHash", COMMITTED, COMMITTED),
        check("box 1 nonce", "40", "40"),
        check("box 2 nonce", "41", "41"),
        check("odds table's oddsHash", COMMITTED, COMMITTED),
    ]
    assert (base["ok"], base["notes"], base["tableOddsHash"]) == (True, [], COMMITTED)
    assert usd["checks"] == [
        check("oddsHash", COMMITTED, COMMITTED),
        check("box 1 nonce", "40", "40"),
        check("box 2 nonce", "42", "41"),
    ]
    assert usd["ok"] is False  # the second nonce claimed is not the second box's
    repriced = odds_hash_of(110, table(1000))
    assert usd["tableOddsHash"] == repriced
    assert usd["notes"] == [
        f"The pasted table (box 5 version 2, priceMinor 110 USD) hashes to {repriced}, not "
        f"{COMMITTED}. The oddsHash commits to the price in the operator's base currency: "
        "fetch the version with ?currency= set to it and paste it again. In the base "
        "currency, a different hash means a different table."
    ]
    assert foreign["checks"] == [
        check("oddsHash", "ab" * 32, COMMITTED),
        check("odds table's oddsHash", COMMITTED, COMMITTED),
    ]
    assert foreign["ok"] is False


@needs_node
def test_malformed_box_input_is_refused_in_node(node_result: dict) -> None:
    assert len(node_result["errors"]) == len(BAD)
    for error, (_, message) in zip(node_result["errors"], BAD, strict=True):
        assert error.startswith(f"FairnessInputError: {message}"), error


@needs_node
def test_ticket_ranges_parse_from_lines_and_catalogue_json_in_node(node_result: dict) -> None:
    assert node_result["parsed"] == [
        {
            "totalTickets": 100,
            "ranges": [
                {"itemId": 101, "ticketFrom": 0, "ticketTo": 9},
                {"itemId": 102, "ticketFrom": 10, "ticketTo": 69},
                {"itemId": 103, "ticketFrom": 70, "ticketTo": 99},
            ],
        },
        {"totalTickets": 1, "ranges": [{"itemId": 7, "ticketFrom": 0, "ticketTo": 0}]},
        {"totalTickets": 2**31, "ranges": [{"itemId": 8, "ticketFrom": 0, "ticketTo": 2**31 - 1}]},
    ]


def test_the_page_has_the_box_form_and_the_script_no_network() -> None:
    html = VERIFIER_HTML.read_text(encoding="utf-8")
    for name in ("boxServerSeed", "boxClientSeed", "boxNonce", "boxCount", "boxRanges"):
        assert f'name="{name}"' in html
    assert 'id="box-verifier"' in html and 'id="box-result"' in html
    source = FAIRNESS_JS.read_text(encoding="utf-8")
    for banned in ("fetch(", "XMLHttpRequest", "import ", "export ", "WebSocket", "eval(", "://"):
        assert banned not in source, banned


# -- in Chromium, the page opened from disk ----------------------------------------------


def test_the_page_opened_from_file_verifies_a_box_draw(tmp_path: Path) -> None:
    """verifier.html from file:// (Web Crypto works there): a vector case whose first block
    is wholly rejected, as a two-box round with ranges; each reel's ticket and item."""
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed: browser test skipped"
    )
    chromium = Path("/usr/bin/chromium")
    if not chromium.exists():
        pytest.skip("Debian's Chromium is not at /usr/bin/chromium: browser test skipped")
    case = next(c for c in CASES if c["totalTickets"] == THIRD and c["cursor"] == 1)
    rows = table(THIRD)
    second = reference_draw(case["serverSeed"], case["clientSeed"], case["nonce"] + 1, THIRD)
    tickets = [case["ticket"], second[0]]
    items = [item_of(t, rows) for t in tickets]
    errors: list[str] = []
    requested: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(chromium), args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            page = browser.new_page()
            page.on("request", lambda request: requested.append(request.url))
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(VERIFIER_HTML.as_uri())
            page.fill("#box-server-seed", case["serverSeed"])
            page.fill("#box-client-seed", case["clientSeed"])
            page.fill("#box-nonce", str(case["nonce"]))
            page.fill("#box-ranges", ranges_text(rows, as_json=False))
            page.fill("#box-tickets", f"{tickets[0]},{tickets[1]}")
            page.fill("#box-items", f"{items[0]},{items[1]}")
            page.click("#box-verifier button[type=submit]")
            page.wait_for_selector("#box-result h2")
            heading = page.inner_text("#box-result h2")
            reels = page.locator("#box-result li.reel")
            shown = [
                (
                    reels.nth(k).get_attribute("data-ticket"),
                    reels.nth(k).get_attribute("data-item"),
                    reels.nth(k).inner_text(),
                )
                for k in range(reels.count())
            ]
            status = page.get_attribute("#box-result", "data-status")
        finally:
            browser.close()
    assert heading == "Verified: all 4 checks passed"
    assert status == "ok"
    first_range = next(r for r in rows if r[0] == items[0])
    assert shown[0] == (
        str(case["ticket"]),
        str(items[0]),
        f"Box 1: nonce {case['nonce']}, ticket {case['ticket']} "
        f"(block 1, word {case['wordIndex']}) \u2192 item {items[0]} "
        f"(tickets {first_range[1]} to {first_range[2]})",
    )
    assert shown[1][:2] == (str(second[0]), str(items[1]))
    assert len(shown) == 2
    assert errors == []
    assert {url.split(":", 1)[0] for url in requested} == {"file"}


def test_the_page_fills_the_box_form_from_a_pasted_round() -> None:
    """A round_settled webhook of a two-box round (decisions §10's shape) pasted into the
    page fills seeds, nonce, count, total tickets, oddsHash, nonces, tickets and items;
    with the revealed server seed and the version's JSON every claim is verified, the
    version's oddsHash recomputed from its table."""
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed: browser test skipped"
    )
    chromium = Path("/usr/bin/chromium")
    if not chromium.exists():
        pytest.skip("Debian's Chromium is not at /usr/bin/chromium: browser test skipped")
    rows = table(1000)
    drawn = [reference_draw(SERVER, CLIENT, n, 1000)[0] for n in (12, 13)]
    reels = [
        {
            "boxId": 5,
            "boxVersionId": 2,
            "nonce": 12 + k,
            "ticket": ticket,
            "totalTickets": 1000,
            "itemId": item_of(ticket, rows),
        }
        for k, ticket in enumerate(drawn)
    ]
    round_ = {
        "publicId": "r_1",
        "status": "settled",
        "game": "boxes",
        "box": {
            "boxId": 5,
            "boxVersionId": 2,
            "count": 2,
            "oddsHash": COMMITTED,
            "totalTickets": 1000,
        },
        "fairness": {
            "serverSeedHash": hashlib.sha256(SERVER.encode()).hexdigest(),
            "clientSeed": CLIENT,
            "nonce": 12,
            "algorithmKey": "hmac_sha256_v1",
        },
    }
    webhook = {
        "id": "w",
        "type": "round_settled",
        "data": {"round": round_, "facts": {"reels": reels}},
    }
    errors: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(chromium), args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            page = browser.new_page()
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto(VERIFIER_HTML.as_uri())
            page.click("text=Paste a box round from the API (optional)")
            page.fill("#box-round-json", json.dumps(webhook))
            page.click("#fill-from-box-round")
            page.wait_for_selector("#box-result[data-status=filled]")
            names = ("client-seed", "nonce", "count", "total-tickets", "odds-hash", "nonces")
            names += ("tickets", "items")
            filled = {name: page.input_value(f"#box-{name}") for name in names}
            page.fill("#box-server-seed", SERVER)
            page.fill("#box-ranges", ranges_text(rows, as_json=True))
            page.click("#box-verifier button[type=submit]")
            page.wait_for_selector("#box-result h2:has-text('erified')")
            heading = page.inner_text("#box-result h2")
            page.fill("#box-round-json", json.dumps({"round": {**round_, "fairness": None}}))
            page.click("#fill-from-box-round")
            page.wait_for_selector("#box-result[data-status=error]")
            refused = page.inner_text("#box-result li")
        finally:
            browser.close()
    assert filled == {
        "client-seed": CLIENT,
        "nonce": "12",
        "count": "2",
        "total-tickets": "1000",
        "odds-hash": COMMITTED,
        "nonces": "12,13",
        "tickets": f"{drawn[0]},{drawn[1]}",
        "items": f"{reels[0]['itemId']},{reels[1]['itemId']}",
    }
    # serverSeedHash, oddsHash, 2 nonces, 2 tickets, 2 items, the table's oddsHash
    assert heading == "Verified: all 9 checks passed"
    assert refused == "this round has no fairness block (a voided round?)"
    assert errors == []

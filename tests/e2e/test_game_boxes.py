"""The box game in a real browser, launched from the operator's page in its iframe.

The platform and the reference operator run as processes on the demo configuration
(``tests/support/game_browser.py``); Chromium plays as a person would. What a box shows
(price, each item's chance, the ticket ranges) is computed here from ``ops/demo/
config.toml`` with the rules of decisions section 10; after a seed rotation every reel's
ticket and item are recomputed here with hmac from the revealed server seed. A reel's
landed item is read from the page's geometry: the tile under the reel's marker.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import re
import tomllib
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.game_browser import BROWSER_MARKS, DEMO_CONFIG, OperatorSite, Session, euros
from tests.support.processes import ServerProcess

with contextlib.suppress(ImportError):  # without playwright every test skips (BROWSER_MARKS)
    from playwright.sync_api import Browser, Route, expect

pytestmark = BROWSER_MARKS


def require_box_routes(platform: ServerProcess) -> None:
    """Skip, saying why, on a platform without box opening (built in another branch)."""
    response = httpx.post(platform.url + "/api/play/rounds/open", json={}, timeout=5)
    if response.status_code in (404, 405):
        pytest.skip("the platform has no POST /api/play/rounds/open yet (box purchases)")


DESKTOP = {"viewport": {"width": 1280, "height": 900}}
PHONE = {
    "viewport": {"width": 360, "height": 740},
    "device_scale_factor": 2,
    "is_mobile": True,
    "has_touch": True,
    "reduced_motion": "reduce",  # the reels are put at their end at once
}

# For each reel: the data-item-id of the tile under the centre of its marker.
LANDED = """() => [...document.querySelectorAll("#reels .reel")].map((reel) => {
  const marker = reel.querySelector(".reel-marker").getBoundingClientRect();
  const x = marker.left + marker.width / 2;
  const under = [...reel.querySelectorAll(".tile")].filter((tile) => {
    const box = tile.getBoundingClientRect();
    return box.left <= x && x <= box.right;
  });
  return under.length === 1 ? Number(under[0].getAttribute("data-item-id")) : null;
})"""

# Anything wider than the screen (the phone test's check, for the box screen).
SIDEWAYS = """() => {
  const width = document.documentElement.clientWidth;
  const problems = [];
  if (document.documentElement.scrollWidth > width) {
    problems.push("the document is " + document.documentElement.scrollWidth + " px wide");
  }
  for (const node of document.querySelectorAll("body *")) {
    if (node.closest(".reel-strip")) continue;  // a strip slides inside its window
    const box = node.getBoundingClientRect();
    if (!box.width || !box.height) continue;
    if (box.left < -0.5 || box.right > width + 0.5) {
      problems.push((node.id || node.className || node.tagName) + " spans " +
        Math.round(box.left) + ".." + Math.round(box.right));
    }
  }
  return problems;
}"""


# --------------------------------------------------------------------------- the demo's boxes


def _demo() -> dict[str, Any]:
    with open(DEMO_CONFIG, "rb") as handle:
        return tomllib.load(handle)


RAW = _demo()
ITEMS = {item["item_id"]: item for item in RAW["catalog"]["items"]}


def offered(box_id: int) -> dict[str, Any]:
    """The box's offered version: its active version with the highest id."""
    versions = [box for box in RAW["catalog"]["boxes"] if box["box_id"] == box_id and box["active"]]
    return max(versions, key=lambda box: box["box_version_id"])


def table(box: dict[str, Any]) -> list[tuple[int, int, int, int]]:
    """(itemId, ticketFrom, ticketTo, probabilityBps) in table order."""
    total = sum(line["weight"] for line in box["items"])
    rows, start = [], 0
    for line in box["items"]:
        rows.append(
            (line["item_id"], start, start + line["weight"] - 1, 10000 * line["weight"] // total)
        )
        start += line["weight"]
    return rows


def percent(bps: int) -> str:
    """The app's chance text: 2500 -> "25%", 230 -> "2.3%", 25 -> "0.25%"."""
    return f"{Decimal(bps) / 100:.2f}".rstrip("0").rstrip(".") + "%"


def name(item_id: int) -> str:
    return ITEMS[item_id]["name"]["en"]


def ticket(server_seed: str, client_seed: str, nonce: int, total: int) -> int:
    """Decisions section 10's draw over ``total`` tickets."""
    bound = (2**32 // total) * total
    cursor = 0
    while True:
        message = f"{client_seed}:{nonce}:{cursor}".encode()
        digest = hmac.new(server_seed.encode(), message, hashlib.sha256).digest()
        for index in range(8):
            word = int.from_bytes(digest[4 * index : 4 * index + 4], "big")
            if word < bound:
                return word % total
        cursor += 1


def item_of(box: dict[str, Any], drawn: int) -> int:
    return next(item for item, low, high, _ in table(box) if low <= drawn <= high)


# --------------------------------------------------------------------------- helpers


def open_boxes(session: Session) -> dict[str, Any]:
    """Press Open; the answer of POST /api/play/rounds/open (and its request body)."""
    with session.page.expect_response("**/api/play/rounds/open", timeout=20_000) as opened:
        session.game.locator("#box-open").click()
    response = opened.value
    assert response.status == 200, response.text()
    answer = response.json()
    answer["sent"] = response.request.post_data_json
    return answer


def assert_box_shown(session: Session, box: dict[str, Any]) -> None:
    game = session.game
    expect(game.locator("#box-name")).to_have_text(box["name"]["en"])
    expect(game.locator("#box-price")).to_have_text(euros(box["price_minor"]) + " per box")
    rows = table(box)
    expect(game.locator("#box-items .box-item")).to_have_count(len(rows))
    for item_id, _, _, bps in rows:
        line = game.locator(f"#box-items .box-item[data-item-id='{item_id}']")
        expect(line.locator(".box-item-name")).to_have_text(name(item_id))
        expect(line.locator(".box-item-value")).to_have_text(euros(ITEMS[item_id]["value_minor"]))
        expect(line.locator(".box-item-chance")).to_have_text(percent(bps))
    game.locator("#box-details summary").click()
    expect(game.locator("#box-odds tr")).to_have_count(len(rows))
    for index, (item_id, low, high, _) in enumerate(rows):
        odds = game.locator("#box-odds tr").nth(index)
        expect(odds).to_have_attribute("data-item-id", str(item_id))
        expect(odds.locator("td").nth(1)).to_have_text(f"{low}\u2013{high}")
    game.locator("#box-details summary").click()


# --------------------------------------------------------------------------- tests


def test_boxes_open_in_the_iframe_land_on_the_drawn_items_and_verify_in_the_browser(
    demo: tuple[ServerProcess, OperatorSite], browser: Browser
) -> None:
    platform, operator = demo
    require_box_routes(platform)
    box = offered(2)
    before = operator.balance()
    session = Session(browser, operator, "?game=box-2", expect_prizes=False, **DESKTOP)
    try:
        game = session.game
        assert session.frame_url.startswith(platform.url + "/game/boxes")
        assert "launchToken" not in session.frame_url
        expect(session.page.locator("#game-choice")).to_have_value("box-2")
        assert_box_shown(session, box)

        game.locator("#count-up").click()
        game.locator("#count-up").click()
        open_button = game.locator("#box-open")
        expect(open_button).to_have_text(f"Open 3 boxes \u00b7 {euros(3 * box['price_minor'])}")
        # The first answer is lost on its way back: the app re-sends the SAME open.
        bodies: list[dict[str, Any]] = []

        def lose_first_answer(route: Route) -> None:
            bodies.append(route.request.post_data_json)
            if len(bodies) == 1:
                route.fetch()  # the platform opens the boxes...
                route.abort("connectionreset")  # ...and the browser never hears of it
            else:
                route.continue_()

        session.page.route("**/api/play/rounds/open", lose_first_answer)
        answer = open_boxes(session)
        session.page.unroute("**/api/play/rounds/open")
        sent = answer["sent"]
        assert bodies == [sent, sent]
        assert set(sent) == {"clientActionId", "boxId", "boxVersionId", "count", "currency"}
        assert (sent["boxId"], sent["boxVersionId"], sent["count"]) == (2, 1, 3)
        assert re.fullmatch(r"[0-9a-f-]{36}", sent["clientActionId"])

        # The answer is in before a reel moves; Skip puts the still moving reels at their
        # end (a reel takes 2.6 s or more: this runs well within that).
        expect(game.locator("#reels")).to_have_attribute("data-spinning", "true")
        state = session.frame.evaluate(
            """() => {
              const reels = document.getElementById("reels");
              const spinning = reels.getAttribute("data-spinning");
              const landed = reels.querySelectorAll(".reel[data-landed='true']").length;
              const busy = document.getElementById("box-open").disabled;
              document.getElementById("box-skip").click();
              return [spinning, landed, busy,
                reels.querySelectorAll(".reel[data-landed='true']").length];
            }"""
        )
        assert state == ["true", 0, True, 3], state
        drawn = [reel["itemId"] for reel in answer["facts"]["reels"]]
        assert session.frame.evaluate(LANDED) == drawn
        expect(game.locator("#box-skip")).to_be_hidden()
        expect(open_button).to_be_enabled()

        # The won items, the balance from the answer, the same on the operator's page.
        round_ = answer["round"]
        assert round_["betMinor"] == 3 * box["price_minor"]
        assert round_["payoutMinor"] == sum(ITEMS[i]["value_minor"] for i in drawn)
        won = game.locator("#won-items .won-item")
        expect(won).to_have_count(3)
        assert [int(w.get_attribute("data-item-id") or 0) for w in won.all()] == drawn
        after_open = before - 3 * box["price_minor"]
        assert answer["balanceAfterMinor"] == after_open
        expect(game.locator("#balance")).to_have_text(euros(after_open))
        assert operator.balance() == after_open

        # Cash back the first, keep the others: they stay in the inventory.
        first, *kept = answer["wonItems"]
        with session.page.expect_response("**/api/play/cashout") as cashed:
            won.nth(0).locator("[data-action='cashback']").click()
        credited = cashed.value.json()["creditedMinor"]
        worth = ITEMS[first["itemId"]]["value_minor"] * ITEMS[first["itemId"]]["cashback_bps"]
        assert worth % 10000 == 0  # the Tech box's items cash back exactly (no rounding)
        assert credited == first["cashbackMinor"] == worth // 10000
        expect(won.nth(0)).to_have_attribute("data-choice", "cashed_back")
        game.locator("#won-keep-all").click()
        expect(won.nth(1)).to_have_attribute("data-choice", "kept")
        expect(game.locator("#balance")).to_have_text(euros(after_open + credited))
        assert operator.balance() == after_open + credited
        inventory = game.locator("#inventory .inv-item[data-state='unresolved']")
        expect(inventory).to_have_count(len(kept))
        for item in kept:
            row = game.locator(f"#inventory [data-inventory-id='{item['inventoryItemId']}']")
            expect(row.locator(".inv-name")).to_have_text(item["name"])
            expect(row.locator(".badge")).to_have_text("in your inventory")

        # The history row, then the round verified in the browser after a rotation.
        game.locator(".tabs [data-tab='history']").click()
        row = game.locator(f"#history tr[data-round='{round_['publicId']}']")
        expect(row).to_have_attribute("data-game", "boxes")
        expect(row.locator(".h-prize")).to_have_text(
            f"{box['name']['en']} \u00d7 3: " + ", ".join(name(i) for i in drawn)
        )
        expect(row.locator(".h-stake")).to_have_text(euros(round_["betMinor"]))
        expect(row.locator(".h-payout")).to_have_text(euros(round_["payoutMinor"]))
        game.locator(".tabs [data-tab='fairness']").click()
        with session.page.expect_response("**/api/play/fairness/rotate") as rotated:
            game.locator("#rotate").click()
        server_seed = rotated.value.json()["previous"]["serverSeed"]
        expect(game.locator("#revealed .revealed-seed")).to_have_count(1)
        fairness = round_["fairness"]
        total = sum(line["weight"] for line in box["items"])
        for k, reel in enumerate(answer["facts"]["reels"]):
            assert reel["nonce"] == fairness["nonce"] + k
            drawn_ticket = ticket(server_seed, fairness["clientSeed"], reel["nonce"], total)
            assert (reel["ticket"], reel["itemId"]) == (drawn_ticket, item_of(box, drawn_ticket))
        game.locator(".tabs [data-tab='history']").click()
        row.locator("[data-verify]").click()
        output = game.locator("#verify-output")
        expect(output).to_have_attribute("data-verified", "ok")
        expect(output.locator("li.bad")).to_have_count(0)
        expect(output.locator("li.ok")).to_have_count(2 + 3)  # seed hash, odds hash, 3 reels
        for reel in answer["facts"]["reels"]:
            expect(output).to_contain_text(f"gives ticket {reel['ticket']} of {total}")
        assert session.problems == []
    finally:
        session.close()


def test_a_box_opened_on_a_phone_lands_on_its_item_without_sideways_scrolling(
    demo: tuple[ServerProcess, OperatorSite], browser: Browser, tmp_path: Path
) -> None:
    platform, operator = demo
    require_box_routes(platform)
    box = offered(1)
    session = Session(browser, operator, "?game=box-1", expect_prizes=False, **PHONE)
    try:
        game = session.game
        expect(game.locator("#box-open")).to_have_text(
            f"Open 1 box \u00b7 {euros(box['price_minor'])}"
        )
        assert session.frame.evaluate(SIDEWAYS) == []
        answer = open_boxes(session)
        drawn = [reel["itemId"] for reel in answer["facts"]["reels"]]
        expect(game.locator("#reels .reel[data-landed='true']")).to_have_count(1)
        assert session.frame.evaluate(LANDED) == drawn
        expect(game.locator("#won-items .won-item")).to_have_attribute(
            "data-item-id", str(drawn[0])
        )
        expect(game.locator("#balance")).to_have_text(euros(answer["balanceAfterMinor"]))
        item = answer["wonItems"][0]
        row = game.locator(f"#inventory [data-inventory-id='{item['inventoryItemId']}']")
        expect(row.locator(".badge")).to_have_text("in your inventory")
        assert session.frame.evaluate(SIDEWAYS) == []
        game.locator("#reels").scroll_into_view_if_needed()
        path = tmp_path / "phone-box-opened.png"
        session.page.screenshot(path=str(path), full_page=False)
        assert path.stat().st_size > 10_000
        assert session.problems == []
    finally:
        session.close()

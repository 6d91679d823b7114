"""The game on a small phone (344 x 740), in the operator's page, as a player sees it.

The operator page has one scroll area (the game's frame fills the screen under a one-line
header; the page itself never scrolls), nothing in the game is wider than the screen after
a few rounds (the history is a card per round, not a table), every chance preset offers
the demo's three prizes for the pre-selected wager and for a staked first prize, the roll
is a percentage and the time is the player's local time. Screenshots go to the test's
temporary folder.
"""

from __future__ import annotations

import contextlib
import re
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from tests.support.demo_catalog import (
    CONFIG,
    app_default_wager,
    band_of,
    counted_stake,
    item_id_named,
    prizes_per_preset,
)
from tests.support.game_browser import BROWSER_MARKS, OperatorSite, Session, euros
from tests.support.processes import ServerProcess, wait_until

with contextlib.suppress(ImportError):  # without playwright every test skips (BROWSER_MARKS)
    from playwright.sync_api import Browser, Frame, Route, expect

pytestmark = BROWSER_MARKS

PHONE = {
    "viewport": {"width": 344, "height": 740},
    "device_scale_factor": 2,
    "is_mobile": True,
    "has_touch": True,
    "reduced_motion": "reduce",  # the pointer jumps to the roll: short rounds
}
ZONE = "Asia/Kolkata"  # UTC+05:30: a local time is visibly not the UTC one

# Every element of the document that sticks out sideways or scrolls sideways inside.
SIDEWAYS = """() => {
  const width = document.documentElement.clientWidth;
  const problems = [];
  if (document.documentElement.scrollWidth > width) {
    problems.push("the document is " + document.documentElement.scrollWidth + " px wide");
  }
  for (const node of document.querySelectorAll("body *")) {
    const box = node.getBoundingClientRect();
    if (!box.width || !box.height) continue;
    const name = node.tagName.toLowerCase() + (node.id ? "#" + node.id : "") +
      (typeof node.className === "string" && node.className ? "." + node.className : "");
    if (box.left < -0.5 || box.right > width + 0.5) {
      problems.push(name + " spans " + Math.round(box.left) + ".." + Math.round(box.right));
    }
    const overflow = getComputedStyle(node).overflowX;
    if ((overflow === "auto" || overflow === "scroll") && node.scrollWidth > node.clientWidth + 1) {
      problems.push(name + " scrolls sideways: " + node.scrollWidth + " > " + node.clientWidth);
    }
  }
  return problems;
}"""

# The operator page's geometry: the page's own scroll sizes and the frame's box.
PAGE_GEOMETRY = """() => {
  const root = document.documentElement;
  const frame = document.getElementById("game").getBoundingClientRect();
  const header = document.querySelector("header.site").getBoundingClientRect();
  return {
    scrollHeight: root.scrollHeight, clientHeight: root.clientHeight,
    scrollWidth: root.scrollWidth, clientWidth: root.clientWidth,
    innerHeight: window.innerHeight, innerWidth: window.innerWidth,
    frameTop: frame.top, frameBottom: frame.bottom, frameLeft: frame.left,
    frameWidth: frame.width, headerBottom: header.bottom
  };
}"""


def game_frame(session: Session) -> Frame:
    return next(f for f in session.page.frames if "/game/upgrader" in f.url)


def band_text(stake_minor: int, chance_bps: int) -> str:
    band = band_of(stake_minor, chance_bps)
    return f"Target band {euros(band.lower_minor)} – {euros(band.upper_minor)}"


def assert_three_prizes_at_every_preset(session: Session, stake_minor: int) -> None:
    """Each preset shows the band the rules give and its three prizes, by name."""
    game = session.game
    expected = prizes_per_preset(stake_minor)
    for chance, names in expected.items():
        game.locator(f"#chances [data-chance='{chance}']").click()
        expect(game.locator("#band")).to_have_text(band_text(stake_minor, chance))
        expect(game.locator("#prizes .prize .prize-name")).to_have_text(names)
        assert len(names) == 3
    game.locator(f"#chances [data-chance='{CONFIG.default_chance_bps}']").click()
    expect(game.locator("#band")).to_have_text(band_text(stake_minor, CONFIG.default_chance_bps))


def assert_nothing_sideways(session: Session, where: str) -> None:
    problems = game_frame(session).evaluate(SIDEWAYS)
    assert problems == [], f"{where}: {problems}"
    page = session.page.evaluate(PAGE_GEOMETRY)
    assert page["scrollWidth"] <= page["clientWidth"], (where, page)


def shot(session: Session, folder: Path, name: str) -> Path:
    path = folder / name
    session.page.screenshot(path=str(path), full_page=False)
    assert path.stat().st_size > 10_000
    return path


def local_clock(iso: str) -> re.Pattern[str]:
    """The en-US text of ``iso`` in ZONE: "08:23:05 PM" today ("Nov 25, 08:23 PM" if the
    round was yesterday there, around midnight)."""
    when = datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone(ZoneInfo(ZONE))
    hour, minute, second = when.strftime("%I"), when.strftime("%M"), when.strftime("%S")
    day = when.strftime("%b ") + str(when.day)
    ampm = when.strftime("%p")
    return re.compile(rf"^(?:{hour}:{minute}:{second}|{day}, {hour}:{minute})\s{ampm}$", re.UNICODE)


def rounds_answer(session: Session) -> list[dict[str, Any]]:
    """Refresh the history and read the rounds the app was answered."""
    game = session.game
    with session.page.expect_response(lambda r: "/api/play/rounds" in r.url) as answer:
        game.locator("#history-refresh").click()
    return answer.value.json()["rounds"]


def test_a_phone_player_sees_several_prizes_and_plays_without_sideways_scrolling(
    demo: tuple[ServerProcess, OperatorSite], browser: Browser, tmp_path: Path
) -> None:
    _, operator = demo
    session = Session(browser, operator, timezone_id=ZONE, **PHONE)
    try:
        game = session.game
        wager = app_default_wager()
        expect(game.locator("#wager")).to_have_value("10.00")
        expect(game.locator("#chances [aria-checked='true']")).to_have_text("50%")
        assert_three_prizes_at_every_preset(session, wager)
        assert_nothing_sideways(session, "ready")
        shot(session, tmp_path, "phone-ready.png")

        # A few rounds at the pre-selected wager and chance, until one wins.
        outcomes = []
        while len(outcomes) < 3 or "win" not in outcomes:
            assert len(outcomes) < 40, "no win at 50 % in 40 rounds"
            outcomes.append(session.play())
            assert outcomes[-1] in ("win", "loss"), game.locator("#result").inner_text()
        first = prizes_per_preset(wager)[CONFIG.default_chance_bps][0]
        expect(game.locator("#result")).to_have_text(
            re.compile(r"Rolled \d{1,2}\.\d\d%, under 50%|rolled \d{1,2}\.\d\d%, needed under")
        )
        game.locator("#result").scroll_into_view_if_needed()
        shot(session, tmp_path, "phone-result.png")

        # The history: one card per round, the roll in percent, the local time.
        game.locator(".tabs [data-tab='history']").click()
        rounds = rounds_answer(session)
        assert len(rounds) == len(outcomes)
        rows = game.locator("#history tr")
        expect(rows).to_have_count(len(outcomes))
        for index, played in enumerate(rounds):
            row = rows.nth(index)
            rolled = played["rolledBps"]
            expect(row.locator(".h-roll")).to_have_text(f"{rolled // 100}.{rolled % 100:02d}%")
            expect(row.locator(".h-result")).to_have_text("win" if played["isWin"] else "miss")
            expect(row.locator(".h-stake")).to_have_text("€10.00")
            expect(row.locator(".h-chance")).to_have_text("50%")
            expect(row.locator("time")).to_have_attribute("datetime", played["settledAt"])
            expect(row.locator("time")).to_have_text(local_clock(played["settledAt"]))
        assert [("win" if r["isWin"] else "loss") for r in rounds] == outcomes[::-1]
        assert_nothing_sideways(session, "history")
        game.locator(".tabs-panel").scroll_into_view_if_needed()
        shot(session, tmp_path, "phone-history.png")

        # Stake the won prize: every preset shows three prizes for what it counts.
        game.locator(".tabs [data-tab='inventory']").click()
        won = game.locator("#inventory .inv-item", has_text=first).first
        expect(won.locator(".badge")).to_have_text("in your inventory")
        game.locator("#modes [data-mode='items']").click()
        won.locator(".stake-toggle").check()
        stake = counted_stake(item_id_named(first))
        expect(game.locator("#stake-total")).to_have_text(euros(stake))
        assert_three_prizes_at_every_preset(session, stake)
        assert_nothing_sideways(session, "items mode")
        game.locator("#prizes").scroll_into_view_if_needed()
        shot(session, tmp_path, "phone-items-prizes.png")
        staked_id = won.get_attribute("data-inventory-id")
        items_outcome = session.play()
        assert items_outcome in ("win", "loss"), game.locator("#result").inner_text()

        # Every item in words: the staked one says so.
        game.locator("#inventory-open-only").uncheck()
        staked = game.locator(f"#inventory [data-inventory-id='{staked_id}']")
        expect(staked.locator(".badge")).to_have_text("staked")
        kept = outcomes.count("win") - 1 + (items_outcome == "win")
        badges = game.locator("#inventory .badge")
        expect(badges).to_have_count(kept + 1)
        assert sorted(badges.all_inner_texts()) == ["in your inventory"] * kept + ["staked"]
        assert_nothing_sideways(session, "inventory")
        game.locator(".tabs-panel").scroll_into_view_if_needed()
        shot(session, tmp_path, "phone-inventory.png")

        game.locator(".tabs [data-tab='history']").click()
        expect(rows.first.locator(".h-stake")).to_have_text(f"{euros(stake)} in items")

        # Reopened in yen (no prize tiles at its first wager to learn pictures from), with
        # the rounds answered only after the inventory is drawn: inventory rows carry no
        # picture, so the items show a plain box until their rounds name theirs.
        held: list[Route] = []
        session.page.route("**/api/play/rounds*", lambda route: held.append(route))
        game_frame(session).evaluate("location.search = '?currency=JPY'")
        expect(game.locator("#currency-code")).to_have_text("JPY", timeout=20_000)
        expect(game.locator("#prizes-message")).to_be_visible()
        expect(game.locator("#prizes .prize")).to_have_count(0)
        game.locator("#inventory-open-only").uncheck()
        expect(staked.locator("img")).to_have_attribute("src", "/game/assets/items/unknown.svg")
        wait_until(lambda: len(held) == 1, 10, "the history request")
        held[0].continue_()
        session.page.unroute("**/api/play/rounds*")
        expect(staked.locator("img")).to_have_attribute(
            "src", f"/game/assets/items/{item_id_named(first)}.svg"
        )

        game.locator(".tabs [data-tab='fairness']").click()
        game.locator("#rotate").click()
        expect(game.locator("#revealed .revealed-seed")).to_have_count(1)
        assert_nothing_sideways(session, "fairness")
        assert session.problems == []
    finally:
        session.close()


def test_the_operator_page_has_one_scroll_area_on_a_phone(
    demo: tuple[ServerProcess, OperatorSite], browser: Browser, tmp_path: Path
) -> None:
    _, operator = demo
    session = Session(browser, operator, **PHONE)
    try:
        page = session.page.evaluate(PAGE_GEOMETRY)
        # the page does not scroll: its content is exactly the screen
        assert page["scrollHeight"] <= page["clientHeight"] == 740, page
        assert page["scrollWidth"] <= page["clientWidth"] == 344, page
        # the frame fills the screen under a one-line header, edge to edge
        assert page["frameTop"] == page["headerBottom"] <= 48, page
        assert page["frameBottom"] == 740 and page["frameLeft"] == 0, page
        assert page["frameWidth"] == 344, page
        # the game scrolls inside its frame: that is the one scroll area
        frame = game_frame(session)
        inside = frame.evaluate(
            "[document.documentElement.scrollHeight, document.documentElement.clientHeight]"
        )
        assert inside[0] > inside[1], inside
        assert abs(inside[1] - (740 - page["frameTop"])) <= 1, (inside, page)
        # a swipe over the game scrolls the game, never the page
        session.page.mouse.move(170, 400)
        session.page.mouse.wheel(0, 600)
        wait_until(lambda: frame.evaluate("window.scrollY") > 0, 10, "the game to scroll")
        assert session.page.evaluate("window.scrollY") == 0
        shot(session, tmp_path, "phone-operator-page-scrolled.png")
        assert session.problems == []
    finally:
        session.close()

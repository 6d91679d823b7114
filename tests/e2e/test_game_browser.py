"""The game app in a real browser, embedded in the operator's page on another origin.

The platform and the reference operator site run as processes (``tests/support/
game_browser.py``); Debian's Chromium, driven by Playwright, plays as a person would.
Screenshots of the main states go to ``tests/artifacts/`` (gitignored). The phone layout
is tested in ``test_game_phone.py``.
"""

from __future__ import annotations

import contextlib
import json
import re
from typing import Any

import pytest

from tests.support.game_browser import (
    BROWSER_MARKS,
    OperatorSite,
    Session,
    euros,
    inventory_available,
)
from tests.support.processes import ServerProcess, wait_until

with contextlib.suppress(ImportError):  # without playwright every test skips (BROWSER_MARKS)
    from playwright.sync_api import Browser, Route, expect

pytestmark = BROWSER_MARKS


# --------------------------------------------------------------------------- tests


def test_plays_a_balance_round_in_the_operator_iframe_and_retries_with_the_same_action(
    demo: tuple[ServerProcess, OperatorSite], browser: Browser
) -> None:
    platform, operator = demo
    before = operator.balance()
    session = Session(browser, operator, viewport={"width": 1280, "height": 800})
    try:
        game = session.game
        assert "launchToken" not in session.frame_url
        assert session.frame_url.startswith(platform.url + "/game/upgrader")
        assert session.page.url.startswith(operator.url)
        expect(session.page.locator("#casino-balance")).to_have_text(f"{before / 100:.2f} EUR")
        # the casino balance shows from the start (session/init), before any play
        expect(game.locator("#balance")).to_have_text(euros(before))
        expect(game.locator("#chances [aria-checked='true']")).to_have_text("50%")
        first = game.locator("#prizes .prize").first
        expect(first).to_have_attribute("aria-checked", "true")
        expect(game.locator("#target-name")).to_have_text(first.locator(".prize-name").inner_text())
        expect(game.locator("#band")).to_contain_text("Target band €")
        session.shot("01-desktop-ready.png")

        session.set_wager("5.00")
        expect(game.locator("#band")).to_contain_text("Target band €8.64 – €9.50")
        # The first answer is lost on its way back: the app must re-send the SAME action.
        sent: list[dict[str, Any]] = []

        def lose_first_answer(route: Route) -> None:
            sent.append(json.loads(route.request.post_data or "{}"))
            if len(sent) == 1:
                route.fetch()  # the platform plays the round...
                route.abort("connectionreset")  # ...and the browser never hears of it
            else:
                route.continue_()

        session.page.route("**/api/play/upgrader/play", lose_first_answer)
        outcome = session.play()
        session.page.unroute("**/api/play/upgrader/play")
        assert outcome in ("win", "loss"), game.locator("#result").inner_text()
        assert len(sent) == 2
        assert sent[0]["clientActionId"] == sent[1]["clientActionId"]
        assert sent[0] == sent[1]
        assert re.fullmatch(r"[0-9a-f-]{36}", sent[0]["clientActionId"])
        # One debit only, shown in the game and on the operator's page.
        expect(game.locator("#balance")).to_have_text(euros(before - 500))
        assert operator.balance() == before - 500
        expect(session.page.locator("#casino-balance")).to_have_text(
            f"{(before - 500) / 100:.2f} EUR"
        )
        expect(game.locator("#gauge")).to_have_attribute("data-outcome", outcome)
        game.locator(".tabs [data-tab='history']").click()
        expect(game.locator("#history tr")).to_have_count(1)
        expect(game.locator("#history tr").first.locator(".outcome")).to_have_text(
            "win" if outcome == "win" else "miss"
        )
        session.shot("02-desktop-result.png")

        # The next play is a new action with a new id.
        fresh: list[str] = []
        session.page.route(
            "**/api/play/upgrader/play",
            lambda route: (
                fresh.append(json.loads(route.request.post_data or "{}")["clientActionId"]),
                route.continue_(),
            ),
        )
        session.play()
        session.page.unroute("**/api/play/upgrader/play")
        assert fresh and fresh[0] != sent[0]["clientActionId"]

        # A refusal is shown in words: too little money for this wager.
        session.choose_chance("90%")
        session.set_wager("6000")
        expect(game.locator("#target-name")).to_have_text("Gold Bar")
        assert session.play() == "error"
        expect(game.locator("#result")).to_contain_text("balance is too low")
        expect(game.locator("#result")).to_contain_text("INSUFFICIENT_FUNDS")
        expect(game.locator("#history tr").first.locator(".outcome")).to_have_text("not played")
        expect(game.locator("#play")).to_have_text("Upgrade")
        session.shot("03-desktop-refused.png")
        assert session.problems == []
    finally:
        session.close()


def test_rotates_seeds_and_verifies_a_round_in_the_browser(
    demo: tuple[ServerProcess, OperatorSite], browser: Browser
) -> None:
    _, operator = demo
    session = Session(browser, operator, viewport={"width": 1280, "height": 800})
    try:
        game = session.game
        session.set_wager("5.00")
        assert session.play() in ("win", "loss")
        game.locator(".tabs [data-tab='history']").click()
        newest = game.locator("#history tr").first
        newest.locator("[data-verify]").click()
        expect(game.locator("#verify-output")).to_contain_text("still secret")

        game.locator(".tabs [data-tab='fairness']").click()
        old_hash = game.locator("#seed-hash").inner_text()
        assert re.fullmatch(r"[0-9a-f]{64}", old_hash)
        game.locator("#new-client-seed").fill("browser-test-seed")
        game.locator("#rotate").click()
        expect(game.locator("#client-seed")).to_have_text("browser-test-seed")
        expect(game.locator("#seed-hash")).not_to_have_text(old_hash)
        expect(game.locator("#nonce")).to_have_text("0")
        expect(game.locator("#revealed .revealed-seed").first).to_contain_text(old_hash)
        session.shot_of(".tabs-panel", "04-desktop-fairness.png")

        game.locator(".tabs [data-tab='history']").click()
        newest.locator("[data-verify]").click()
        output = game.locator("#verify-output")
        expect(output).to_contain_text("Verified in your browser")
        expect(output).to_have_class(re.compile(r"\bok\b"))
        expect(output.locator("li.bad")).to_have_count(0)
        expect(output.locator("li.ok")).to_have_count(3)
        session.shot_of(".tabs-panel", "05-desktop-verified.png")
        assert session.problems == []
    finally:
        session.close()


def test_stakes_a_won_item_and_cashes_one_back(
    demo: tuple[ServerProcess, OperatorSite], browser: Browser
) -> None:
    platform, operator = demo
    if not inventory_available(platform):
        pytest.skip(
            "items mode: the platform has no /api/play/inventory yet (the items-mode and "
            "inventory endpoints are not built), so the items step cannot run"
        )
    session = Session(browser, operator, viewport={"width": 1280, "height": 800})
    try:
        game = session.game
        session.choose_chance("90%")
        session.set_wager("15.00")
        expect(game.locator("#target-name")).to_have_text("Golden Ticket")
        wins = 0
        for _ in range(30):
            if session.play() == "win":
                wins += 1
            if wins == 2:
                break
        assert wins == 2, "two wins at 90% within 30 rounds"
        game.locator(".tabs [data-tab='inventory']").click()
        tickets = game.locator("#inventory .inv-item[data-state='unresolved']", has_text="Golden")
        expect(tickets).to_have_count(2)

        game.locator("#modes [data-mode='items']").click()
        expect(game.locator("#stake-block")).to_be_visible()
        staked = tickets.first
        staked_id = staked.get_attribute("data-inventory-id")
        staked.locator(".stake-toggle").check()
        expect(game.locator("#stake-total")).to_contain_text("€")
        session.choose_chance_with_prizes()
        session.shot("06-desktop-items-staked.png")
        outcome = session.play()
        assert outcome in ("win", "loss"), game.locator("#result").inner_text()
        assert game.locator("#balance").inner_text() == euros(operator.balance())
        expect(game.locator(f"#inventory [data-inventory-id='{staked_id}']")).to_have_count(0)
        game.locator("#inventory-open-only").uncheck()
        expect(game.locator(f"#inventory [data-inventory-id='{staked_id}']")).to_have_attribute(
            "data-state", "consumed"
        )
        game.locator("#inventory-open-only").check()
        expect(game.locator(f"#inventory [data-inventory-id='{staked_id}']")).to_have_count(0)
        session.shot("07-desktop-items-result.png")

        before = operator.balance()
        tickets.first.get_by_role("button", name="Cash back").click()
        expect(game.locator("#notice")).to_contain_text("Cashed back Golden Ticket")
        wait_until(lambda: operator.balance() > before, 10, "the cash-back credit")
        expect(game.locator("#balance")).to_have_text(euros(operator.balance()))
        assert session.problems == []
    finally:
        session.close()


def test_shows_money_in_the_launch_currency_and_survives_a_reload(
    demo: tuple[ServerProcess, OperatorSite], browser: Browser
) -> None:
    _, operator = demo
    session = Session(
        browser,
        operator,
        "?currency=JPY",
        expect_prizes=False,
        viewport={"width": 1280, "height": 800},
    )
    try:
        game = session.game
        expect(game.locator("#currency-code")).to_have_text("JPY")
        # the balance in the launch currency, read at once (GET /api/play/balance?currency=)
        expect(game.locator("#balance")).to_have_text("¥0")
        session.set_wager("1300")
        expect(game.locator("#band")).to_have_text("Target band ¥2,246 – ¥2,470")
        expect(game.locator("#target-value")).to_have_text("¥2,438")
        game.locator("#wager").fill("12.5")
        expect(game.locator("#prizes-message")).to_contain_text("whole number")
        expect(game.locator("#play")).to_be_disabled()
        session.set_wager("1300")
        assert session.play() == "error"  # the demo player has no yen
        expect(game.locator("#result")).to_contain_text("INSUFFICIENT_FUNDS")

        # A reload of the frame (its URL no longer has the launch token) resumes the
        # session from sessionStorage.
        frame = next(f for f in session.page.frames if "/game/upgrader" in f.url)
        assert "launchToken" not in frame.url and "currency=JPY" in frame.url
        frame.evaluate("location.reload()")
        expect(game.locator("#app")).to_have_attribute("data-state", "ready", timeout=20_000)
        expect(game.locator("#currency-code")).to_have_text("JPY")
        expect(game.locator("#balance")).to_have_text("¥0")
        game.locator(".tabs [data-tab='history']").click()
        expect(game.locator("#history tr").first.locator(".outcome")).to_have_text("not played")
        assert session.problems == []
    finally:
        session.close()


def test_the_game_without_a_launch_token_says_how_to_open_it(
    demo: tuple[ServerProcess, OperatorSite], browser: Browser
) -> None:
    platform, _ = demo
    context = browser.new_context(locale="en-US")
    try:
        page = context.new_page()
        response = page.goto(platform.url + "/game/upgrader")
        assert response is not None
        headers = response.headers
        assert "script-src 'self'" in headers["content-security-policy"]
        assert "frame-ancestors *" in headers["content-security-policy"]
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["referrer-policy"] == "no-referrer"
        expect(page.locator("#boot-text")).to_contain_text("from the casino site")
        page.goto(platform.url + "/game/upgrader?launchToken=forged")
        expect(page.locator("#boot-text")).to_contain_text("LAUNCH_TOKEN_INVALID")
        assert "launchToken" not in page.url
    finally:
        context.close()

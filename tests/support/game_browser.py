"""The game app in a real browser: the platform and the reference operator as processes,
Debian's Chromium driven by Playwright (shared by ``tests/e2e/test_game_*.py``).

A real platform (``upgrader serve``, SQLite in a temporary folder) and the reference
operator site (``python -m ops.reference_operator.launcher``: wallet, webhooks, the page with
the iframe) run as processes on free loopback ports; the operator page's origin differs
from the game's by port. Nothing is installed at run time: without /usr/bin/chromium or
the playwright package the tests skip and say why (``BROWSER_MARKS``).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.live import free_port
from tests.support.processes import ServerProcess, wait_until

try:
    from playwright.sync_api import Browser, Frame, FrameLocator, Page, expect, sync_playwright
except ImportError:  # pragma: no cover - depends on the machine
    sync_playwright = None  # type: ignore[assignment]

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = ROOT / "tests" / "artifacts"
DEMO_CONFIG = ROOT / "ops" / "demo" / "config.toml"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

BROWSER_MARKS = [
    pytest.mark.skipif(
        sync_playwright is None,
        reason="the playwright Python package is not installed "
        "(pip install playwright; no `playwright install` is needed, Debian's chromium is used)",
    ),
    pytest.mark.skipif(
        not CHROMIUM.exists(),
        reason="Debian's Chromium is not at /usr/bin/chromium (apt-get install -y chromium)",
    ),
]


class OperatorSite:
    """The reference operator (``launcher``) as a process on a free loopback port."""

    def __init__(self, config_path: Path, log_path: Path, platform_url: str) -> None:
        self.config_path = config_path
        self.log_path = log_path
        self.platform_url = platform_url
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> OperatorSite:
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "ops.reference_operator.launcher",
                    "--config",
                    str(self.config_path),
                    "--port",
                    str(self.port),
                    "--platform-url",
                    self.platform_url,
                ],
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        wait_until(self._ready, 30, "the operator site to reach the platform", interval=0.1)
        return self

    def _ready(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(f"the operator site exited:\n{self.log_path.read_text()}")
        try:
            response = httpx.get(self.url + "/demo/status", timeout=2)
        except httpx.TransportError:
            return False
        return response.status_code == 200 and response.json().get("platform") == "ok"

    def balance(self, player: str = "player-1") -> int:
        response = httpx.get(self.url + "/demo/balance", params={"player": player}, timeout=5)
        return response.json()["balanceMinor"]

    def stop(self) -> None:
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=5)


# --------------------------------------------------------------------------- helpers


class Session:
    """One browser tab on the operator page, the game in its iframe."""

    def __init__(
        self,
        browser: Browser,
        operator: OperatorSite,
        query: str = "",
        expect_prizes: bool = True,
        **context: Any,
    ) -> None:
        self.context = browser.new_context(locale="en-US", **context)
        self.page: Page = self.context.new_page()
        self.problems: list[str] = []
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda error: self.problems.append(f"page error: {error}"))
        self.operator = operator
        self.page.goto(operator.url + "/" + query)
        self.game: FrameLocator = self.page.frame_locator("#game")
        expect(self.game.locator("#app")).to_have_attribute("data-state", "ready", timeout=20_000)
        if expect_prizes:
            expect(self.game.locator("#prizes .prize").first).to_be_visible()

    def _console(self, message: Any) -> None:
        """CSP violations, script errors and missing assets are problems. A refused API
        call (shown to the player in words) and the deliberately lost answer are not."""
        url = message.location.get("url", "")
        expected = "Failed to load resource" in message.text and "/api/play/" in url
        if (message.type == "error" and not expected) or "Content Security Policy" in message.text:
            self.problems.append(f"console {message.type}: {message.text} at {url}")

    @property
    def frame_url(self) -> str:
        return self.frame.url

    @property
    def frame(self) -> Frame:
        """The game's frame (/game/upgrader or /game/boxes)."""
        return next(f for f in self.page.frames if "/game/" in f.url)

    def shot(self, name: str, full_page: bool = True) -> Path:
        path = ARTIFACTS / name
        self.page.screenshot(path=str(path), full_page=full_page)
        return path

    def shot_of(self, selector: str, name: str) -> Path:
        """A screenshot of one part of the game (scrolled into view inside the frame)."""
        path = ARTIFACTS / name
        self.game.locator(selector).screenshot(path=str(path))
        return path

    def set_wager(self, text: str) -> None:
        self.game.locator("#wager").fill(text)
        expect(self.game.locator("#play")).to_be_enabled()

    def choose_chance(self, label: str) -> None:
        self.game.locator("#chances button", has_text=label).click()
        expect(self.game.locator("#chances [aria-checked='true']")).to_have_text(label)

    def choose_chance_with_prizes(self) -> str:
        """Click through the chance presets until one offers prizes; its label."""
        chips = self.game.locator("#chances button")
        for index in range(chips.count()):
            chip = chips.nth(index)
            chip.click()
            expect(chip).to_have_attribute("aria-checked", "true")
            expect(self.game.locator("#prizes")).not_to_have_attribute("aria-busy", "true")
            if self.game.locator("#prizes .prize").count():
                expect(self.game.locator("#play")).to_be_enabled()
                return chip.inner_text()
        raise AssertionError("no chance preset offers a prize for this stake")

    def play(self) -> str:
        """Press Upgrade and wait for the outcome: 'win', 'loss' or 'error'."""
        self.game.locator("#play").click()
        result = self.game.locator("#result")
        expect(result).to_have_class(re.compile(r"\b(win|loss|error)\b"), timeout=20_000)
        expect(self.game.locator("#play")).not_to_have_text("Rolling…")
        return (result.get_attribute("class") or "").split()[-1]

    def close(self) -> None:
        self.context.close()


def euros(minor: int) -> str:
    return f"€{Decimal(minor) / 100:,.2f}"


def inventory_available(platform: ServerProcess) -> bool:
    """Whether the platform has the items-mode player routes (someone else builds them)."""
    response = httpx.get(platform.url + "/api/play/inventory", timeout=5)
    return response.status_code == 401


@contextlib.contextmanager
def running_demo(folder: Path) -> Iterator[tuple[ServerProcess, OperatorSite]]:
    """The demo configuration on free ports: the platform and the operator site."""
    config_path = folder / "config.toml"
    platform = ServerProcess(
        config_path,
        folder / "platform.log",
        key_id="demo-key",
        secret="change-me-inbound",
        database_url=f"sqlite:///{folder}/store.db",
        redact=["change-me-outbound"],
    )
    operator = OperatorSite(config_path, folder / "operator.log", platform.url)
    text = DEMO_CONFIG.read_text(encoding="utf-8")
    text = text.replace("http://127.0.0.1:8000", platform.url)
    text = text.replace("http://127.0.0.1:8001", operator.url)
    config_path.write_text(text, encoding="utf-8")
    platform.start()
    try:
        operator.start()
        yield platform, operator
    finally:
        operator.stop()
        platform.stop()


@contextlib.contextmanager
def headless_chromium() -> Iterator[Browser]:
    """Debian's Chromium (never a downloaded one), headless."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        yield chromium
        chromium.close()

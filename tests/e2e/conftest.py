"""Fixtures of the browser tests: the demo (platform + operator site) and Chromium, one
of each per test module (a module's tests play in order on the same platform)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.game_browser import OperatorSite, headless_chromium, running_demo
from tests.support.processes import ServerProcess

try:
    from playwright.sync_api import Browser
except ImportError:  # pragma: no cover - depends on the machine
    Browser = object  # type: ignore[assignment,misc]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, OperatorSite]]:
    with running_demo(tmp_path_factory.mktemp("game-browser")) as started:
        yield started


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with headless_chromium() as chromium:
        yield chromium

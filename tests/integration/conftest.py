"""A platform on a fresh store, served over real HTTP on loopback, with a manual clock."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from api.app import create_app
from application.clock import ManualClock
from application.platform import Platform
from tests.support.config import make_config
from tests.support.live import Api, LiveServer


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(start=float(int(time.time())))


@pytest.fixture
def platform(database_url: str, clock: ManualClock) -> Iterator[Platform]:
    platform = Platform(make_config(database_url), clock=clock)
    platform.record_configuration()
    yield platform
    platform.close()


@pytest.fixture
def live(platform: Platform) -> Iterator[LiveServer]:
    with LiveServer(create_app(platform)) as server:
        yield server


@pytest.fixture
def api(live: LiveServer, clock: ManualClock) -> Iterator[Api]:
    client = Api(live.url, clock)
    yield client
    client.close()

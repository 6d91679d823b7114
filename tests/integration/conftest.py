"""A platform on a fresh store, served over real HTTP on loopback, with a manual clock."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from application.clock import ManualClock
from application.platform import Platform
from entrypoints.app import create_app
from ops.reference_operator.wallet import ThreadedWalletServer
from tests.support.config import OUTBOUND, make_config
from tests.support.live import Api, LiveServer


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(start=float(int(time.time())))


@pytest.fixture
def wallet() -> Iterator[ThreadedWalletServer]:
    """The reference operator's wallet and webhook receiver, real, on loopback."""
    server = ThreadedWalletServer(dict(OUTBOUND)).start()
    yield server
    server.stop()


@pytest.fixture
def platform(
    database_url: str, clock: ManualClock, wallet: ThreadedWalletServer
) -> Iterator[Platform]:
    config = make_config(
        database_url,
        wallet_url=wallet.url,
        wallet_timeout_seconds=1,
        uncertain_debit_grace_seconds=30,
    )
    platform = Platform(config, clock=clock)
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

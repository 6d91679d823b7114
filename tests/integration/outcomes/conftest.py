"""Fixtures of the tests of what a 503 says: a platform with abuse limits off, served on
loopback, the reference wallet with a hook on accepted debits, a store that can be held."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from application.clock import ManualClock
from application.platform import Platform
from entrypoints.app import create_app
from ops.reference_operator.wallet import ThreadedWalletServer
from tests.support.config import OUTBOUND
from tests.support.items import EXTRA_OUTBOUND
from tests.support.live import Api, LiveServer
from tests.support.slow_store import HookedLedger, StoreHold, limits_off_config


@pytest.fixture
def wallet() -> Iterator[ThreadedWalletServer]:
    secrets = {**OUTBOUND, **EXTRA_OUTBOUND}
    server = ThreadedWalletServer(secrets, ledger=HookedLedger()).start()
    yield server
    server.stop()


@pytest.fixture
def platform(
    database_url: str, clock: ManualClock, wallet: ThreadedWalletServer
) -> Iterator[Platform]:
    platform = Platform(limits_off_config(database_url, wallet.url), clock=clock)
    platform.record_configuration()
    yield platform
    platform.close()


@pytest.fixture
def api(platform: Platform, clock: ManualClock) -> Iterator[Api]:
    with LiveServer(create_app(platform)) as server:
        client = Api(server.url, clock)
        yield client
        client.close()


@pytest.fixture
def hold(platform: Platform) -> Iterator[StoreHold]:
    store_hold = StoreHold(platform)
    yield store_hold
    store_hold.close()

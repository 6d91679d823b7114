"""What one process runs: the services behind the routes and the background workers."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable
from typing import Any

import anyio

from application.games.boxes.play import BoxPlays
from application.games.upgrader.play_balance import BalancePlays
from application.games.upgrader.play_items import ItemsPlays
from application.inventory.cashout import Cashouts
from application.platform import Platform, ensure_tables
from application.rounds.fairness import SCHEMA as FAIRNESS_SCHEMA
from application.rounds.fairness import FairnessService
from application.store.calls import in_background
from application.wallet.client import WalletClient
from projections.analytics import Analytics
from projections.dispatcher import WebhookDispatcher
from projections.hash_chain import HashChain
from projections.inventory import InventoryView
from projections.outbox import WebhookOutbox
from projections.reconciler import WalletReconciler
from projections.rounds import RoundHistory
from projections.runner import ProjectionRunner
from projections.wakeup import NotifyListener
from projections.wallet_ops import WalletCreditAttempts, WalletDebitAttempts

log = logging.getLogger("upgrader.runtime")

# The background loops a process can run (``upgrader worker NAME``; ``serve`` runs all).
BACKGROUND_LOOPS = ("projections", "reconciler", "dispatcher")
PASS_SECONDS = 0.05  # the shortest interval between two projection passes


def all_projections(platform: Platform) -> list[Any]:
    """Every read model the background worker keeps, in the order a pass applies them."""
    return [
        RoundHistory(),
        WalletDebitAttempts(),
        WalletCreditAttempts(),
        InventoryView(),
        WebhookOutbox(),
        HashChain(platform.events.recorder),
        Analytics(),
    ]


class Runtime:
    def __init__(
        self,
        platform: Platform,
        *,
        workers: bool | Iterable[str] = True,
        projection_interval: float | None = None,
    ) -> None:
        self.platform = platform
        self.loops = frozenset(BACKGROUND_LOOPS) if workers is True else frozenset(workers or ())
        # idle polling: on PostgreSQL only the fallback of the NOTIFY wake-up; SQLite polls
        if projection_interval is None:
            projection_interval = 0.2 if platform.location.kind == "postgresql" else 0.05
        self.projection_interval = projection_interval
        self._projection_wake = asyncio.Event()
        ensure_tables(platform.db, FAIRNESS_SCHEMA)
        service = platform.config.service
        self.wallet = WalletClient(platform.clock, service.wallet_timeout_seconds)
        self.runner = ProjectionRunner(platform.events, platform.db, all_projections(platform))
        self.fairness = FairnessService(platform)
        self.reconciler = WalletReconciler(platform, self.wallet, self.runner)
        self.webhooks = WebhookDispatcher(platform, self.runner)
        self.balance = BalancePlays(platform, self.wallet, self.fairness, self.reconciler.wake)
        self.items = ItemsPlays(platform, self.fairness)
        self.boxes = BoxPlays(platform, self.wallet, self.fairness, self.reconciler.wake)
        self.cashouts = Cashouts(platform, self.wallet, self.reconciler.wake)
        self._stopping = asyncio.Event()
        self._tasks: list[asyncio.Task] = []

    async def start(self) -> None:
        self._stopping = asyncio.Event()
        loops = {
            "projections": self._project_forever,
            "reconciler": lambda: self.reconciler.run_forever(self._stopping),
            "dispatcher": lambda: self.webhooks.run_forever(self._stopping),
        }
        self._tasks = [
            asyncio.create_task(loops[name](), name=name)
            for name in BACKGROUND_LOOPS
            if name in self.loops
        ]

    def _listen_for_appends(self, wake: asyncio.Event) -> NotifyListener | None:
        """PostgreSQL: wake the projection loop on the NOTIFY of every event-log insert."""
        channel = getattr(self.platform.events.recorder, "channel_name", None)
        if self.platform.location.kind != "postgresql" or not channel:
            return None
        loop = asyncio.get_running_loop()

        def notified() -> None:
            if not wake.is_set():  # racy but harmless: at worst one more call_soon
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                    loop.call_soon_threadsafe(wake.set)

        return NotifyListener(self.platform.location.conninfo(), channel, notified).start()

    async def _project_forever(self) -> None:
        wake = self._projection_wake = asyncio.Event()
        listener = self._listen_for_appends(wake)
        try:
            while not self._stopping.is_set():
                wake.clear()
                started = anyio.current_time()
                try:
                    applied = await in_background(self.runner.run_pass)
                except Exception:
                    log.exception("projection pass failed")
                    applied = 0
                if applied:
                    self.webhooks.wake()  # new outbox rows may exist
                    # Under a stream of appends, start passes at most every
                    # PASS_SECONDS: each pass then takes what arrived meanwhile as one
                    # batch (fewer, larger transactions) for at most that much more lag.
                    rest = PASS_SECONDS - (anyio.current_time() - started)
                    if rest > 0:
                        await asyncio.sleep(rest)
                else:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(wake.wait(), self.projection_interval)
        finally:
            if listener is not None:
                await in_background(listener.stop)

    async def stop(self) -> None:
        self._stopping.set()
        self._projection_wake.set()  # the loops see the stop at once, not after
        self.reconciler.wake()  # their next interval (0.5 s)
        self.webhooks.wake()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(task, timeout=15)
        self._tasks = []
        await self.wallet.close()
        await self.webhooks.close()

    def read_model(self, name: str) -> None:
        """Bring one read model up to the current head before a read (read your writes)."""
        self.runner.catch_up(name)

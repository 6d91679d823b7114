"""What one process runs: the services behind the routes and the background workers."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable

import anyio

from application.cashout import Cashouts
from application.fairness_service import SCHEMA as FAIRNESS_SCHEMA
from application.fairness_service import FairnessService
from application.platform import Platform, ensure_tables
from application.play_balance import BalancePlays
from application.play_items import ItemsPlays
from application.wallet import WalletClient
from projections.analytics import Analytics
from projections.dispatcher import WebhookDispatcher
from projections.hash_chain import HashChain
from projections.inventory import InventoryView
from projections.outbox import WebhookOutbox
from projections.reconciler import WalletReconciler
from projections.rounds import RoundHistory
from projections.runner import ProjectionRunner
from projections.wallet_ops import WalletCreditAttempts, WalletDebitAttempts

log = logging.getLogger("upgrader.runtime")

# The background loops a process can run (``upgrader worker NAME``; ``serve`` runs all).
BACKGROUND_LOOPS = ("projections", "reconciler", "dispatcher")


class Runtime:
    def __init__(
        self,
        platform: Platform,
        *,
        workers: bool | Iterable[str] = True,
        projection_interval: float = 0.2,
    ) -> None:
        self.platform = platform
        self.loops = frozenset(BACKGROUND_LOOPS) if workers is True else frozenset(workers or ())
        self.projection_interval = projection_interval
        ensure_tables(platform.db, FAIRNESS_SCHEMA)
        service = platform.config.service
        self.wallet = WalletClient(platform.clock, service.wallet_timeout_seconds)
        self.runner = ProjectionRunner(
            platform.events,
            platform.db,
            [
                RoundHistory(),
                WalletDebitAttempts(),
                WalletCreditAttempts(),
                InventoryView(),
                WebhookOutbox(),
                HashChain(platform.events.recorder),
                Analytics(),
            ],
        )
        self.fairness = FairnessService(platform)
        self.reconciler = WalletReconciler(platform, self.wallet, self.runner)
        self.webhooks = WebhookDispatcher(platform, self.runner)
        self.balance = BalancePlays(platform, self.wallet, self.fairness, self.reconciler.wake)
        self.items = ItemsPlays(platform, self.fairness)
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

    async def _project_forever(self) -> None:
        while not self._stopping.is_set():
            try:
                applied = await anyio.to_thread.run_sync(self.runner.run_pass)
            except Exception:
                log.exception("projection pass failed")
                applied = 0
            if applied:
                self.webhooks.wake()  # new outbox rows may exist
            else:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), self.projection_interval)

    async def stop(self) -> None:
        self._stopping.set()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(task, timeout=15)
        self._tasks = []
        await self.wallet.close()
        await self.webhooks.close()

    def read_model(self, name: str) -> None:
        """Bring one read model up to the current head before a read (read your writes)."""
        self.runner.catch_up(name)

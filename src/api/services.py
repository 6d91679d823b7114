"""What the routes use of the process's runtime: the services behind them
(``entrypoints/runtime.py`` builds them, with the background workers)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from application.games.boxes.play import BoxPlays
    from application.games.upgrader.play_balance import BalancePlays
    from application.games.upgrader.play_items import ItemsPlays
    from application.inventory.cashout import Cashouts
    from application.platform import Platform
    from application.rounds.fairness import FairnessService
    from application.wallet.client import WalletClient


class Services(Protocol):
    platform: Platform
    wallet: WalletClient
    fairness: FairnessService
    balance: BalancePlays
    items: ItemsPlays
    boxes: BoxPlays
    cashouts: Cashouts

    async def start(self) -> None:
        """Start the background loops this process runs."""

    async def stop(self) -> None:
        """Stop them and close the outbound clients."""

    def read_model(self, name: str) -> None:
        """Bring one read model up to the current head before a read (read your writes)."""

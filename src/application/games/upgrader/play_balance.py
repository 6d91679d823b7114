"""PlayUpgrader, balance mode: the Upgrader's checks and settle on the wager saga.

The saga (``application/rounds/saga.py``: open, debit, settle or void or uncertain, roll
back) is the same for every game; the Upgrader supplies its opening (the checks of
decisions §7 and what they quoted and pinned), its settle (the roll, the payout and the
item grant, ``application/games/upgrader/settlement.py``) and the debit's reason ``upgrader.wager``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

from application.games.upgrader.answers import recorded_answer
from application.games.upgrader.opening import round_opening
from application.games.upgrader.quote import check_target, operator_for_mode, quote
from application.games.upgrader.settlement import settle_round
from application.games.upgrader.views import AnyPlayAnswer
from application.platform import Platform
from application.rounds.actions import fingerprint
from application.rounds.fairness import FairnessService
from application.rounds.saga import WagerSaga
from application.rounds.settle import saved_then_afresh
from application.wallet.client import WalletClient
from application.wallet.refusals import wallet_unavailable
from domain.ids import round_id
from domain.round import Round
from domain.upgrader_round import UpgraderOpening


@dataclass(frozen=True)
class PlayBalance:
    operator_id: str
    player_external_id: str
    client_action_id: str
    wager_minor: int
    chance_bps: int
    target_item_id: int
    currency: str | None = None
    locale: str | None = None


class BalancePlays:
    """The Upgrader as a :class:`~application.rounds.saga.WagerGame`."""

    reason = "upgrader.wager"

    def __init__(
        self,
        platform: Platform,
        wallet: WalletClient,
        fairness: FairnessService,
        wake_reconciler: Any = None,
    ) -> None:
        self.platform = platform
        self.fairness = fairness
        self.saga = WagerSaga(platform, wallet, self, wake_reconciler)

    async def play(self, command: PlayBalance) -> AnyPlayAnswer:
        rid = round_id(command.operator_id, command.player_external_id, command.client_action_id)
        operator = self.platform.directory.operators[command.operator_id]
        body_print = fingerprint(
            "balance",
            command.wager_minor,
            command.chance_bps,
            command.target_item_id,
            command.currency or operator.base.code,
        )
        return await self.saga.play(
            rid, body_print, lambda: self._opening(command, rid, body_print)
        )

    def _opening(self, command: PlayBalance, rid: UUID, body_print: str) -> UpgraderOpening:
        directory = self.platform.directory
        operator = operator_for_mode(directory, command.operator_id, "balance")
        quoted = quote(
            operator, command.currency, command.wager_minor, command.chance_bps, for_play=True
        )
        item, prize = check_target(
            quoted, directory.catalog, command.target_item_id, command.locale
        )
        if not operator.config.wallet_url:
            raise wallet_unavailable()  # known before any debit: nothing is recorded
        return round_opening(
            self.platform,
            quoted,
            item,
            prize,
            rid=rid,
            player=command.player_external_id,
            client_action_id=command.client_action_id,
            mode="balance",
            fingerprint=body_print,
        )

    # -- WagerGame ----------------------------------------------------------------------

    def settle(self, saved: Round, attempt: int, debit: dict[str, Any]) -> AnyPlayAnswer:
        return settle_round(
            self.platform,
            self.fairness,
            saved_then_afresh(self.platform, saved),
            attempt,
            debit,
        )

    def answer(self, round_: Round) -> AnyPlayAnswer:
        return recorded_answer(round_)

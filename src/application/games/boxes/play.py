"""OpenBoxes: buying and opening boxes on the wager saga (decisions §10).

The saga (``application/rounds/saga.py``: open, debit, settle or void or uncertain, roll
back) is every game's; the box game supplies its opening (the checks of
``opening.py`` and the table they pin), its settle (``count`` draws and their item grants,
``settlement.py``) and the debit's reason ``boxes.purchase``.

Checks, in order (decisions §10, the first failure answers): the body's shape, ``count``
within 1..``max_boxes_per_round`` included (422 ``VALIDATION_ERROR``); the action's
idempotency (a known ``clientActionId`` answers its original answer, or 409
``IDEMPOTENCY_CONFLICT`` when the body differs); then the game, currency, box, version and
availability checks of ``opening.py``; then the wallet. The action's body print is
(``boxes``, boxId, boxVersionId, count, currency or the base currency): ``locale`` only
names the items and is not part of it, as for the Upgrader. A ``clientActionId`` is the
player's across games: the same one used for an Upgrader play and a box purchase is 409.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from application.errors import validation_error
from application.games.boxes.opening import (
    OpenBoxes,
    box_opening,
    check_version,
    max_boxes_per_round,
)
from application.games.boxes.round_answers import BoxOpenAnswer, recorded_answer
from application.games.boxes.settlement import settle_box_round
from application.platform import Platform
from application.rounds.actions import fingerprint
from application.rounds.fairness import FairnessService
from application.rounds.saga import WagerSaga
from application.rounds.settle import saved_then_afresh
from application.wallet.client import WalletClient
from domain.box_round import GAME_KEY, PURCHASE_REASON, BoxOpening
from domain.ids import round_id
from domain.round import Round


class BoxPlays:
    """The box game as a :class:`~application.rounds.saga.WagerGame`."""

    reason = PURCHASE_REASON

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

    async def open(self, asked: OpenBoxes) -> BoxOpenAnswer:
        operator = self.platform.directory.operators[asked.operator_id]
        most = max_boxes_per_round(operator)
        if not 1 <= asked.count <= most:
            raise validation_error(f"count: must be an integer within 1..{most}")
        rid = round_id(asked.operator_id, asked.player_external_id, asked.client_action_id)
        body_print = fingerprint(
            GAME_KEY,
            asked.box_id,
            asked.box_version_id,
            asked.count,
            asked.currency or operator.base.code,
        )
        return await self.saga.play(rid, body_print, lambda: self._opening(asked, rid, body_print))

    def _opening(self, asked: OpenBoxes, rid: UUID, body_print: str) -> BoxOpening:
        operator = self.platform.directory.operators[asked.operator_id]
        version = check_version(self.platform, operator, asked)
        return box_opening(self.platform, operator, version, asked, rid=rid, fingerprint=body_print)

    # -- WagerGame ----------------------------------------------------------------------

    def settle(self, saved: Round, attempt: int, debit: dict[str, Any]) -> BoxOpenAnswer:
        return settle_box_round(
            self.platform,
            self.fairness,
            saved_then_afresh(self.platform, saved),
            attempt,
            debit,
        )

    def answer(self, round_: Round) -> BoxOpenAnswer:
        return recorded_answer(round_)

"""A round's cancel over S2S (decisions §11): ``POST /api/s2s/rounds/{publicId}/cancel``
(``application/rounds/cancel.py`` carries it out)."""

from __future__ import annotations

from litestar import Request
from litestar.datastructures import State
from litestar.params import FromPath, JSONBody

from api.errors import ERROR_RESPONSES
from api.routes.common import S2SController, post, runtime_of
from api.schemas_cancel import CancelAnswer, S2SCancelBody
from application.rounds.cancel import CancelCommand


class S2SCancelController(S2SController):
    @post("/rounds/{public_id:str}/cancel", status_code=200, responses=ERROR_RESPONSES)
    async def cancel(
        self,
        request: Request,
        state: State,
        public_id: FromPath[str],
        data: JSONBody[S2SCancelBody],
    ) -> CancelAnswer:
        command = CancelCommand(
            operator_id=request.state.operator_id,
            player_external_id=data.player_external_id,
            client_action_id=data.client_action_id,
            public_id=public_id,
            reason=data.reason,
        )
        return await runtime_of(state).cancels.cancel(command)

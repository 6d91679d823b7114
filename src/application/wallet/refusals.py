"""A wallet's refusal of a debit, as every game answers it (decisions §4).

The wallet's own code is answered when it is well formed (``PLAYER_BLOCKED`` 403, any
other 422), with the voided round; a wallet that does not confirm a debit is 503.
A voided round is the head of every game's round view (``RoundHead``) and nothing more
(interface 2.1): its public id and status.
"""

from __future__ import annotations

import re
from typing import Annotated

from application.errors import PlatformError, WalletRefusal
from application.wire import Wire, words


class RoundHead(Wire):
    """The first fields of every game's round view (a game's round view extends it); a
    voided round (the wallet refused the debit) is these alone."""

    public_id: Annotated[str, words("the round's id, r_ and 32 hex digits")]
    status: Annotated[str, words('"settled", or "voided" when the wallet refused the debit')]


def voided_round_wire(public_id: str) -> RoundHead:
    return RoundHead(public_id=public_id, status="voided")


WALLET_CODE = re.compile(r"[A-Z][A-Z0-9_]{0,63}")


def wallet_refusal(wallet_code: str, move: str) -> tuple[str, int, str]:
    """(code, status, message) of a wallet's refusal of ``move`` (decisions §4): the
    wallet's own code, ``PLAYER_BLOCKED`` 403 and any other well-formed code 422; a code
    that is not ``^[A-Z][A-Z0-9_]{0,63}$`` is not echoed: 422 ``WALLET_REFUSED``."""
    if wallet_code in ("INSUFFICIENT_FUNDS", "PLAYER_BLOCKED"):
        status = 403 if wallet_code == "PLAYER_BLOCKED" else 422
        return wallet_code, status, f"the wallet refused the {move}"
    if WALLET_CODE.fullmatch(wallet_code):
        return wallet_code, 422, f"the wallet refused the {move} with {wallet_code}"
    return "WALLET_REFUSED", 422, f"the wallet refused the {move} with a malformed error code"


def refused_debit_error(
    public_id: str, wallet_code: str, balance_after_minor: int | None
) -> PlatformError:
    """The refused debit's error (decisions §4), with the voided round."""
    code, _, message = wallet_refusal(wallet_code, "debit")
    return WalletRefusal(
        code,
        message,
        round=voided_round_wire(public_id),
        balanceAfterMinor=balance_after_minor,
    )


def wallet_unavailable() -> PlatformError:
    return PlatformError(
        "WALLET_UNAVAILABLE",
        "the wallet did not confirm the debit; nothing is kept, retry the action",
    )

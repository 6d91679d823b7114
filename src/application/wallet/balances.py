"""A player's casino balance, read from the operator's wallet (``wallet.balance``,
decisions §4). The platform keeps no balance of its own: every read asks the wallet.

- ``GET /api/play/balance`` asks in the operator's base currency, or in ``?currency=``
  when that is one of the operator's configured currencies (else 422
  ``UNSUPPORTED_CURRENCY``); a wallet that cannot answer (timeout, failure, an answer
  that is not ``{balanceMinor, currency}`` with a plausible balance) is 503
  ``WALLET_UNAVAILABLE``.
- ``session/init`` asks in the base currency and waits at most
  ``SESSION_INIT_BALANCE_SECONDS`` (or the wallet timeout, when shorter): without an
  answer by then its ``balance`` is null and the session starts all the same.
"""

from __future__ import annotations

from typing import Any

from application.errors import PlatformError
from application.platform import Platform
from application.wallet.client import WalletClient

SESSION_INIT_BALANCE_SECONDS = 1.0


def balance_unavailable() -> PlatformError:
    return PlatformError("WALLET_UNAVAILABLE", "the wallet did not answer the balance read; retry")


async def read_player_balance(
    platform: Platform,
    wallet: WalletClient,
    operator_id: str,
    player_external_id: str,
    currency: str | None = None,
    timeout: float | None = None,
) -> dict[str, Any] | None:
    """``{balanceMinor, currency}`` of this player, or None when the wallet cannot say."""
    operator = platform.directory.operators[operator_id]
    code = operator.currency(currency).code
    minor = await wallet.read_balance(
        operator.config.wallet_url,
        operator.config.outbound_secret,
        operator.id,
        player_external_id,
        code,
        timeout,
    )
    return None if minor is None else {"balanceMinor": minor, "currency": code}

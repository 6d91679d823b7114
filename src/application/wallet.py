"""The operator wallet client (decisions §4): signed aiohttp calls and three outcomes.

- ``Accepted``: money moved.
- ``Refused``: the wallet said no (``accepted: false`` with an ``errorCode``); nothing moved.
- ``Uncertain``: timeout, connection failure, 5xx, unreadable answer or no wallet URL;
  the caller must assume the worst (a debit may have happened) and roll it back.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import msgspec

from application.clock import Clock, iso_utc
from domain.signing import outbound_headers


@dataclass(frozen=True)
class Accepted:
    balance_after_minor: int | None
    provider_txn_ref: str | None


@dataclass(frozen=True)
class Refused:
    error_code: str
    balance_after_minor: int | None


@dataclass(frozen=True)
class Uncertain:
    reason: str


WalletOutcome = Accepted | Refused | Uncertain


class _Answer(msgspec.Struct):
    accepted: bool
    balanceAfterMinor: int | None = None
    providerTxnRef: str | None = None
    errorCode: str | None = None


class WalletClient:
    """One aiohttp session per process, created in the running loop on first use."""

    def __init__(self, clock: Clock, timeout_seconds: float, max_connections: int = 100) -> None:
        self.clock = clock
        self.timeout = aiohttp.ClientTimeout(total=timeout_seconds)
        self.max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=self.max_connections, ttl_dns_cache=300)
            self._session = aiohttp.ClientSession(timeout=self.timeout, connector=connector)
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def call(
        self,
        wallet_url: str | None,
        secret: str,
        operator_id: str,
        request_type: str,
        fields: dict[str, Any],
    ) -> WalletOutcome:
        if not wallet_url:
            return Uncertain("no wallet URL configured")
        body = msgspec.json.encode(
            {
                "type": request_type,
                "operatorId": operator_id,
                "requestedAt": iso_utc(self.clock.now()),
                **fields,
            }
        )
        headers = outbound_headers(
            secret, int(time.time()), "POST", urlsplit(wallet_url).path or "/", body
        )
        headers["Content-Type"] = "application/json"
        if "idempotencyKey" in fields:
            headers["Idempotency-Key"] = fields["idempotencyKey"]
        try:
            async with self._client().post(wallet_url, data=body, headers=headers) as response:
                raw = await response.read()
                status = response.status
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            return Uncertain(f"wallet unreachable ({type(exc).__name__})")
        if status >= 500 or status < 200 or status >= 300:
            return Uncertain(f"wallet answered HTTP {status}")
        try:
            answer = msgspec.json.decode(raw, type=_Answer)
        except msgspec.DecodeError:
            return Uncertain("wallet answer is not the documented JSON")
        if answer.accepted:
            return Accepted(answer.balanceAfterMinor, answer.providerTxnRef)
        if not answer.errorCode:
            return Uncertain("wallet refused without an errorCode")
        return Refused(answer.errorCode, answer.balanceAfterMinor)

"""The operator wallet client (decisions §4): signed aiohttp calls and three outcomes.

- ``Accepted``: money moved.
- ``Refused``: the wallet said no (``accepted: false`` with an ``errorCode``); nothing moved.
- ``Uncertain``: timeout, connection failure, 5xx, unreadable answer or no wallet URL;
  the caller must assume the worst (a debit may have happened) and roll it back.

A wallet answer is untrusted input, read strictly:

- at most ``MAX_ANSWER_BYTES``, JSON of the documented shape (unknown fields ignored);
- a balance (``balanceAfterMinor``, ``balanceMinor``) is a JSON integer (not a float,
  not a bool) in ``0 .. 2**63 - 1``: a negative balance or one beyond int64 is not a
  balance this platform can show or record (``plausible_balance``);
- an accepted answer whose ``balanceAfterMinor`` is present but not a balance is
  unreadable, hence ``Uncertain`` (a debit is then rolled back and the play answers 503;
  a credit is re-sent with the same key);
- a refusal whose balance is missing or not a balance is still a refusal; with
  ``read_balance_on_refusal`` the client then asks ``wallet.balance`` (below);
- a ``wallet.balance`` answer is ``{balanceMinor, currency}`` with a balance as above and
  the currency that was asked; anything else is a failed read (``None``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import msgspec

from application.clock import Clock, iso_utc
from domain.signing import outbound_headers

INT64_MAX = 2**63 - 1
MAX_ANSWER_BYTES = 64 * 1024  # a larger answer is unreadable
# A refusal's errorCode is kept to this many characters: longer than any well-formed code
# (64, decisions §4), so a code too long to echo stays too long once cut.
MAX_ERROR_CODE_CHARS = 128


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


def plausible_balance(value: Any) -> int | None:
    """``value`` when it is a balance this platform accepts from a wallet, else None:
    an ``int`` (a JSON integer; ``bool`` is not one) in ``0 .. 2**63 - 1``."""
    if type(value) is int and 0 <= value <= INT64_MAX:
        return value
    return None


class _Answer(msgspec.Struct):
    accepted: bool
    balanceAfterMinor: Any = None
    balanceMinor: Any = None
    providerTxnRef: str | None = None
    errorCode: str | None = None


class _BalanceAnswer(msgspec.Struct):
    balanceMinor: Any
    currency: str


def request_body(
    operator_id: str, request_type: str, fields: dict[str, Any], requested_at: float
) -> bytes:
    """The JSON body of a wallet call, exactly as the platform sends it (decisions §4)."""
    return msgspec.json.encode(
        {
            "type": request_type,
            "operatorId": operator_id,
            "requestedAt": iso_utc(requested_at),
            **fields,
        }
    )


def request_headers(
    secret: str, wallet_url: str, body: bytes, now: int, idempotency_key: str | None
) -> dict[str, str]:
    """The signed envelope of a wallet call (interface 5.1): X-Timestamp, X-Signature over
    the path part of ``wallet_url``, and on a money move ``Idempotency-Key``, equal to the
    body's ``idempotencyKey``."""
    headers = outbound_headers(secret, now, "POST", urlsplit(wallet_url).path or "/", body)
    headers["Content-Type"] = "application/json"
    if idempotency_key is not None:
        headers["Idempotency-Key"] = idempotency_key
    return headers


def read_money_answer(raw: bytes) -> WalletOutcome:
    """What the platform makes of a 2xx answer to a money move (no balance read)."""
    try:
        answer = msgspec.json.decode(raw, type=_Answer)
    except msgspec.DecodeError:
        return Uncertain("wallet answer is not the documented JSON")
    if answer.accepted:
        if answer.balanceAfterMinor is None:
            return Accepted(None, answer.providerTxnRef)
        balance = plausible_balance(answer.balanceAfterMinor)
        if balance is None:
            return Uncertain("wallet balanceAfterMinor is not an integer in 0..2**63-1")
        return Accepted(balance, answer.providerTxnRef)
    if not answer.errorCode:
        return Uncertain("wallet refused without an errorCode")
    given = answer.balanceAfterMinor
    return Refused(
        answer.errorCode[:MAX_ERROR_CODE_CHARS],
        plausible_balance(answer.balanceMinor if given is None else given),
    )


def read_balance_answer(raw: bytes, currency: str) -> int | None:
    """What the platform makes of a 2xx answer to ``wallet.balance`` in ``currency``."""
    try:
        answer = msgspec.json.decode(raw, type=_BalanceAnswer)
    except msgspec.DecodeError:
        return None
    if answer.currency != currency:
        return None
    return plausible_balance(answer.balanceMinor)


async def read_capped(content: aiohttp.StreamReader, limit: int) -> bytes | None:
    """The whole body, or None when it is longer than ``limit`` bytes."""
    chunks: list[bytes] = []
    size = 0
    while chunk := await content.read(limit + 1):
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


class WalletClient:
    """One aiohttp session per process, created in the running loop on first use."""

    def __init__(self, clock: Clock, timeout_seconds: float, max_connections: int = 100) -> None:
        self.clock = clock
        self.timeout_seconds = timeout_seconds
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

    async def _post(
        self,
        wallet_url: str | None,
        secret: str,
        operator_id: str,
        request_type: str,
        fields: dict[str, Any],
        timeout: float | None = None,
    ) -> bytes | Uncertain:
        """The body of a 2xx answer, or why there is none."""
        if not wallet_url:
            return Uncertain("no wallet URL configured")
        body = request_body(operator_id, request_type, fields, self.clock.now())
        key = fields.get("idempotencyKey")
        headers = request_headers(secret, wallet_url, body, int(time.time()), key)
        options: dict[str, Any] = {"data": body, "headers": headers}
        if timeout is not None:
            options["timeout"] = aiohttp.ClientTimeout(total=timeout)
        try:
            async with self._client().post(wallet_url, **options) as response:
                status = response.status
                raw = await read_capped(response.content, MAX_ANSWER_BYTES)
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            return Uncertain(f"wallet unreachable ({type(exc).__name__})")
        if not 200 <= status < 300:
            return Uncertain(f"wallet answered HTTP {status}")
        if raw is None:
            return Uncertain(f"wallet answer is longer than {MAX_ANSWER_BYTES} bytes")
        return raw

    async def call(
        self,
        wallet_url: str | None,
        secret: str,
        operator_id: str,
        request_type: str,
        fields: dict[str, Any],
        *,
        read_balance_on_refusal: bool = False,
    ) -> WalletOutcome:
        """One money move. With ``read_balance_on_refusal``, a refusal that carries no
        balance (interface 2.9 shows none) gets one from a ``wallet.balance`` read of the
        same player and currency, given what is left of the wallet timeout since this
        call began, so the whole exchange stays within ``wallet_timeout_seconds``; its
        ``balance_after_minor`` is None only when that read fails too (decisions §4)."""
        started = time.monotonic()
        raw = await self._post(wallet_url, secret, operator_id, request_type, fields)
        if isinstance(raw, Uncertain):
            return raw
        outcome = read_money_answer(raw)
        if not isinstance(outcome, Refused):
            return outcome
        if outcome.balance_after_minor is not None or not read_balance_on_refusal:
            return outcome
        left = self.timeout_seconds - (time.monotonic() - started)
        if left <= 0:
            return outcome
        balance = await self.read_balance(
            wallet_url, secret, operator_id, fields["playerExternalId"], fields["currency"], left
        )
        return replace(outcome, balance_after_minor=balance)

    async def read_balance(
        self,
        wallet_url: str | None,
        secret: str,
        operator_id: str,
        player_external_id: str,
        currency: str,
        timeout: float | None = None,
    ) -> int | None:
        """``wallet.balance`` (decisions §4): the player's balance in ``currency``, or
        None when the wallet cannot answer in ``timeout`` (default: the wallet timeout)
        or answers something that is not ``{balanceMinor, currency}`` with a plausible
        balance in the currency asked."""
        raw = await self._post(
            wallet_url,
            secret,
            operator_id,
            "wallet.balance",
            {"playerExternalId": player_external_id, "currency": currency},
            timeout,
        )
        if isinstance(raw, Uncertain):
            return None
        return read_balance_answer(raw, currency)

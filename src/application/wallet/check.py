"""``upgrader wallet-check``: run an operator's wallet through the contract before go-live.

Every call is built and signed by the platform's own code (``client.request_body``,
``client.request_headers``), sent over aiohttp as the platform sends it, and every answer
is read against ``contract.py`` (the source of ``docs/wallet-openapi.json``). The
checks (``check_steps.py`` runs them in this order), on one test player:

=============================  ==========================================================
check                          passes when
=============================  ==========================================================
balance                        ``wallet.balance`` answers ``{balanceMinor, currency}``: an
                               integer in 0 .. 2^63-1 and the currency asked
credit                         a credit is accepted, ``balanceAfterMinor`` and a read show
                               the balance up by the amount
credit replay                  the same credit again answers the same (``accepted``,
                               ``balanceAfterMinor``, ``providerTxnRef``), moves nothing
debit, debit replay            the same for a debit
rollback of a debit            the debit is given back
rollback replay                the same rollback again answers the same, moves nothing
rollback of an unseen debit    a rollback of a debit never sent is accepted, moves nothing
debit after its rollback       that debit, sent afterwards, is refused (the tombstone)
insufficient funds             a debit of the balance + 1 is refused, moves nothing
blocked player                 a debit of ``--blocked-player`` is refused ``PLAYER_BLOCKED``
                               (skipped without one)
bad signature, missing         a debit signed with another secret, unsigned, signed 600 s
signature, stale timestamp,    ago, or whose signature is of another amount (a changed
tampered body                  body) is refused and moves nothing
unsigned balance read          a balance read with a bad signature is refused
balance restored               the player is back at its starting balance
timing                         every call answered within the limit (the operator's
                               ``wallet_timeout_seconds``, 10 s by default)
=============================  ==========================================================

Every answer must be in contract (types, ranges, at most 64 KiB) for its check to pass.
A refusal is a 2xx ``{accepted: false, errorCode}``; for a forged call, any 4xx (401
recommended) is a refusal too. A 5xx, a timeout or an accepted answer is not: the
platform treats a 5xx as "uncertain" and would retry it. Each check ends by reading the
balance and the next expects from what that showed, so a defect fails the check that
meets it rather than every check after it; a float balance fails ``balance`` only (the
other checks read its value).

The player is credited before it is debited, so it needs no funds; a debit a check
should not have been accepted is rolled back, and at the end the balance is moved back
to where it started. Nothing else should move the test player's money during the run.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import msgspec

from application.wallet.client import MAX_ANSWER_BYTES, read_capped, request_body, request_headers
from application.wallet.contract import BALANCE, SESSION_INIT_BALANCE_SECONDS, answer_problem

PASS, FAIL, SKIP = "pass", "fail", "skip"
STALE_SECONDS = 600  # beyond the ±300 s any wallet must refuse
GRACE_SECONDS = 5.0  # how much longer than the limit we wait, to report how slow a call was


class Unreachable(Exception):
    """The wallet URL cannot be reached at all (no connection)."""


@dataclass(frozen=True)
class CheckSettings:
    url: str
    secret: str
    operator_id: str
    player: str
    currency: str
    amount: int = 100
    blocked_player: str | None = None
    limit_seconds: float = 10.0


@dataclass(frozen=True)
class CheckResult:
    name: str
    status: str  # PASS, FAIL or SKIP
    reason: str


@dataclass
class Exchange:
    """One call and what came back."""

    request_type: str
    seconds: float
    status: int | None = None
    raw: bytes | None = None
    error: str | None = None  # no usable HTTP answer

    def json(self) -> Any:
        try:
            return msgspec.json.decode(self.raw) if self.raw is not None else None
        except msgspec.DecodeError:
            return None


def debit_key() -> str:
    return f"r_{uuid.uuid4().hex}:1"


def balance_value(answer: Any) -> int | None:
    """A balance answer's ``balanceMinor`` even when out of contract (``100.0``): effects
    are checked with it, so only the ``balance`` check fails for a float balance."""
    value = answer.get("balanceMinor") if isinstance(answer, dict) else None
    if type(value) is int:
        return value
    if type(value) is float and value.is_integer():
        return int(value)
    return None


@dataclass
class WalletCheck:
    settings: CheckSettings
    session: aiohttp.ClientSession
    results: list[CheckResult] = field(default_factory=list)
    exchanges: list[Exchange] = field(default_factory=list)
    known: int | None = None  # the test player's balance as last read

    # -- calls -------------------------------------------------------------------------

    async def send(
        self, request_type: str, fields: dict[str, Any], forge: str | None = None
    ) -> Exchange:
        """One signed call; ``forge`` spoils it: bad_signature, missing, stale, tampered."""
        s = self.settings
        body = request_body(s.operator_id, request_type, fields, time.time())
        now, key = int(time.time()), fields.get("idempotencyKey")
        headers = request_headers(s.secret, s.url, body, now, key)
        if forge == "bad_signature":
            headers = request_headers(s.secret + "-not-it", s.url, body, now, key)
        elif forge == "missing":
            del headers["X-Timestamp"], headers["X-Signature"]
        elif forge == "stale":
            headers = request_headers(s.secret, s.url, body, now - STALE_SECONDS, key)
        elif forge == "tampered":  # the signature is of the same call for ten times more
            bigger = {**fields, "amountMinor": fields["amountMinor"] * 10}
            signed = request_body(s.operator_id, request_type, bigger, time.time())
            headers = request_headers(s.secret, s.url, signed, now, key)
        started = time.monotonic()
        exchange = Exchange(request_type, 0.0)
        try:
            async with self.session.post(s.url, data=body, headers=headers) as response:
                exchange.status = response.status
                exchange.raw = await read_capped(response.content, MAX_ANSWER_BYTES)
                if exchange.raw is None:
                    exchange.error = f"the answer is larger than {MAX_ANSWER_BYTES} bytes"
        except aiohttp.ClientConnectorError as exc:
            if not self.exchanges:
                raise Unreachable(str(exc)) from exc
            exchange.error = f"no connection ({exc})"
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            exchange.error = f"no answer ({type(exc).__name__})"
        exchange.seconds = time.monotonic() - started
        self.exchanges.append(exchange)
        return exchange

    def money(self, key: str, amount: int | None = None, **extra: Any) -> dict[str, Any]:
        return {
            "playerExternalId": extra.pop("player", self.settings.player),
            "amountMinor": self.settings.amount if amount is None else amount,
            "currency": self.settings.currency,
            "idempotencyKey": key,
            **extra,
        }

    def debit_fields(self, key: str, amount: int | None = None, **extra: Any) -> dict[str, Any]:
        round_id = key.split(":", 1)[0]
        return self.money(key, amount, roundId=round_id, reason="upgrader.wager", **extra)

    def rollback_fields(self, original: str, amount: int | None = None) -> dict[str, Any]:
        round_id = original.split(":", 1)[0]
        return self.money(
            f"{original}:rollback", amount, originalIdempotencyKey=original, roundId=round_id
        )

    async def balance(self) -> int | None:
        """The test player's balance, read leniently (the ``balance`` check is strict)."""
        exchange = await self.send(
            BALANCE,
            {"playerExternalId": self.settings.player, "currency": self.settings.currency},
        )
        if exchange.status is None or not 200 <= exchange.status < 300:
            return None
        return balance_value(exchange.json())

    # -- verdicts ----------------------------------------------------------------------

    def record(self, name: str, status: str, reason: str) -> None:
        self.results.append(CheckResult(name, status, reason))

    @staticmethod
    def answer_fault(exchange: Exchange) -> str | None:
        """Why this is not a contract answer, or None."""
        if exchange.error:
            return exchange.error
        if exchange.status in (401, 403):
            return (
                f"HTTP {exchange.status}: the wallet refused the signature (another secret "
                "or operatorId?); the platform would treat it as uncertain"
            )
        if exchange.status is None or not 200 <= exchange.status < 300:
            return f"HTTP {exchange.status}: the platform would treat it as uncertain"
        assert exchange.raw is not None
        return answer_problem(exchange.request_type, exchange.raw)

    def accepted_fault(self, exchange: Exchange) -> str | None:
        fault = self.answer_fault(exchange)
        if fault is None and exchange.json()["accepted"] is not True:
            return f"refused {exchange.json()['errorCode']}, expected accepted"
        return fault

    def refused_fault(self, exchange: Exchange) -> str | None:
        fault = self.answer_fault(exchange)
        if fault is None and exchange.json()["accepted"] is not False:
            return "accepted, expected a refusal"
        return fault

    def after(self, delta: int) -> int | None:
        """The balance expected once ``delta`` has moved, from the last one read."""
        return None if self.known is None else self.known + delta

    async def effect_fault(self, expected: int | None, what: str) -> str | None:
        """None when a read shows ``expected``; else what the read shows. Every step ends
        with one such read, and the next step expects from what it showed: a defect
        fails the step that meets it, not every step after it."""
        actual = await self.balance()
        self.known = actual
        if actual is None:
            return "cannot verify: wallet.balance has no usable answer (see balance)"
        if expected is None:
            return "cannot verify: the balance before is unknown (see balance)"
        if actual != expected:
            return f"{what}: the balance is {actual}, expected {expected}"
        return None

    def forged_fault(self, exchange: Exchange) -> str | None:
        """None when a forged call was refused (4xx or a 2xx refusal)."""
        if exchange.error:
            return f"{exchange.error}: not a refusal"
        status = exchange.status or 0
        if 400 <= status < 500:
            return None
        answer = exchange.json()
        if 200 <= status < 300:
            if isinstance(answer, dict) and answer.get("accepted") is False:
                return None
            return f"answered HTTP {status} {(exchange.raw or b'')[:80].decode(errors='replace')}"
        return f"HTTP {status}: a server error is not a refusal (refuse with 401)"

    def timing_reason(self) -> tuple[str, str]:
        limit = self.settings.limit_seconds
        slow = [e for e in self.exchanges if e.seconds > limit or "Timeout" in (e.error or "")]
        slowest = max(self.exchanges, key=lambda e: e.seconds)
        summary = (
            f"{len(self.exchanges)} calls, slowest {slowest.request_type} "
            f"{slowest.seconds:.2f} s (limit {limit:g} s)"
        )
        if slow:
            names = ", ".join(sorted({e.request_type for e in slow}))
            return FAIL, f"{len(slow)} calls over {limit:g} s ({names}); {summary}"
        reads = [e.seconds for e in self.exchanges if e.request_type == BALANCE]
        if reads and max(reads) > SESSION_INIT_BALANCE_SECONDS:
            summary += (
                f"; a balance read took {max(reads):.2f} s: sessions start without a balance "
                f"after {SESSION_INIT_BALANCE_SECONDS} s"
            )
        return PASS, summary

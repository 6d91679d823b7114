"""Reference operator wallet: the operator's side of the wallet contract, runnable.

A small standalone aiohttp service that answers the platform's wallet calls
(``wallet.balance``, ``wallet.debit``, ``wallet.credit``, ``wallet.rollback``) and
receives its ``round_settled`` webhooks. Integrators can copy this file as a starting
point; the platform's own tests run it on loopback as a real wallet, with fault
injection. It imports nothing from the platform on purpose.

Contract (interface 2.9, 5.1, 6; decisions 4, 9):

* Every call is a signed POST. Headers ``X-Timestamp`` (Unix seconds) and
  ``X-Signature``: lowercase hex HMAC-SHA256, keyed with the operator's outbound
  secret, over ``f"{timestamp}\\n{METHOD}\\n{path}\\n{sha256hex(body)}"`` where path is
  the request path only. The timestamp must be within +-300 s. The body's
  ``operatorId`` selects the secret. Failures answer 401
  ``{"error": {"code": "MISSING_HEADERS" | "INVALID_SIGNATURE" | "TIMESTAMP_SKEW"}}``.
* Money moves carry ``Idempotency-Key`` equal to the body's ``idempotencyKey``.
  The key is the transaction identity: a repeat returns the original answer and moves
  nothing; the same key with another type, player, currency, amount or rollback target
  is refused ``IDEMPOTENCY_KEY_REUSED``.
* A rollback reverses the debit it names once. A rollback of a debit never seen is
  accepted, moves nothing, and is remembered: a later debit with that key is refused
  ``ROLLED_BACK``.

Answers follow interface 2.9 to the letter: ``wallet.balance`` answers exactly
``{balanceMinor, currency}``; an accepted money move ``{accepted: true,
balanceAfterMinor, providerTxnRef}``; a refusal exactly ``{accepted: false, errorCode}``.
``Ledger(balance_in_refusals=True)`` (CLI ``--balance-in-refusals``) also puts the
player's balance in refusals as ``balanceAfterMinor``, as some wallets do.

Players are implicit: an unknown player has balance 0 in every currency. A blocked
player's debits are refused ``PLAYER_BLOCKED``; credits and rollbacks still go through.
Refused debits are remembered under their key like accepted ones (the platform never
reuses a debit key). Refused credits and rollbacks are not remembered, so the service's
retry with the same key is evaluated afresh.

Run it::

    python -m ops.reference_operator.wallet --port 8001 \\
        --secret demo=change-me-outbound --fund demo:player-1:EUR:100000

``--secret OP=env:VAR`` reads the secret from the environment instead of argv.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field, fields
from typing import Any, Self

from aiohttp import web

log = logging.getLogger("reference_wallet")

MAX_SKEW_SECONDS = 300

BALANCE = "wallet.balance"
DEBIT = "wallet.debit"
CREDIT = "wallet.credit"
ROLLBACK = "wallet.rollback"
MONEY_TYPES = frozenset({DEBIT, CREDIT, ROLLBACK})
REQUEST_TYPES = frozenset({BALANCE, *MONEY_TYPES})

INSUFFICIENT_FUNDS = "INSUFFICIENT_FUNDS"
PLAYER_BLOCKED = "PLAYER_BLOCKED"
IDEMPOTENCY_KEY_REUSED = "IDEMPOTENCY_KEY_REUSED"
ROLLED_BACK = "ROLLED_BACK"
ROLLBACK_TARGET_NOT_DEBIT = "ROLLBACK_TARGET_NOT_DEBIT"

Clock = Callable[[], int]


def unix_now() -> int:
    return int(time.time())


# --------------------------------------------------------------------------- ledger


@dataclass
class ReceivedRequest:
    """One authenticated wallet call, as received (filled in when answered)."""

    type: str | None
    idempotency_key: str | None
    body: dict[str, Any]
    operator_id: str
    fault: str | None = None  # "stall", "5xx", "non_json", "refuse" (comma-joined)
    http_status: int | None = None  # None while still being handled
    answer: dict[str, Any] | None = None  # the JSON answer; None for non-JSON / errors
    # as it came on the wire, for checking it again (``check_signature``)
    raw: bytes = b""
    path: str = ""
    headers: dict[str, str] = field(default_factory=dict)  # the envelope headers sent


@dataclass
class _Txn:
    operator_id: str
    key: str
    type: str
    player: str
    currency: str
    amount: int
    original_key: str | None
    answer: dict[str, Any]
    applied: bool
    reversed: bool = False


class Ledger:
    """In-memory wallet. All methods are synchronous and guarded by one lock, so the
    ledger can be used from the server's event loop and from test threads at once."""

    def __init__(self, *, balance_in_refusals: bool = False) -> None:
        self.balance_in_refusals = balance_in_refusals
        self._lock = threading.RLock()
        self._balances: dict[tuple[str, str, str], int] = {}
        self._blocked: set[tuple[str, str]] = set()
        self._txns: dict[tuple[str, str], _Txn] = {}
        self._tombstones: dict[tuple[str, str], str] = {}  # (op, debit key) -> rollback key
        self._rolled_back: set[tuple[str, str]] = set()  # (op, debit key) acknowledged
        self._reversals: dict[tuple[str, str], int] = {}  # (op, debit key) -> money reversals
        self._seq = 0
        self.requests: list[ReceivedRequest] = []
        self.received_webhooks: list[dict[str, Any]] = []
        self.webhook_attempts = 0  # authenticated webhook deliveries, refused ones included
        self.auth_failures: list[tuple[str, str]] = []  # (path, code)

    # -- set-up and inspection -------------------------------------------------------

    def fund(self, operator_id: str, player: str, currency: str, amount: int) -> int:
        """Add ``amount`` minor units (may be negative); returns the new balance."""
        with self._lock:
            account = (operator_id, player, currency)
            self._balances[account] = self._balances.get(account, 0) + amount
            return self._balances[account]

    def block(self, operator_id: str, player: str) -> None:
        with self._lock:
            self._blocked.add((operator_id, player))

    def unblock(self, operator_id: str, player: str) -> None:
        with self._lock:
            self._blocked.discard((operator_id, player))

    def balance(self, operator_id: str, player: str, currency: str) -> int:
        with self._lock:
            return self._balances.get((operator_id, player, currency), 0)

    def net_debits(self, operator_id: str | None = None) -> int:
        """Sum of applied debits minus the debits rolled back."""
        with self._lock:
            return sum(t.amount for t in self._debits(operator_id) if t.applied and not t.reversed)

    def net_credits(self, operator_id: str | None = None) -> int:
        with self._lock:
            return sum(
                t.amount
                for t in self._txns.values()
                if t.type == CREDIT and t.applied and _op_matches(t.operator_id, operator_id)
            )

    def applied_debit_keys(self, operator_id: str | None = None) -> set[str]:
        """Keys of debits that moved money, including ones later rolled back."""
        with self._lock:
            return {t.key for t in self._debits(operator_id) if t.applied}

    def open_debit_keys(self, operator_id: str | None = None) -> set[str]:
        """Keys of debits that moved money and are not rolled back."""
        with self._lock:
            return {t.key for t in self._debits(operator_id) if t.applied and not t.reversed}

    def rolled_back_keys(self, operator_id: str | None = None) -> set[str]:
        """Debit keys with an accepted rollback (reversed, tombstoned, or refused debit)."""
        with self._lock:
            return {k for op, k in self._rolled_back if _op_matches(op, operator_id)}

    def tombstoned_keys(self, operator_id: str | None = None) -> set[str]:
        """Debit keys rolled back before any debit with that key was seen."""
        with self._lock:
            return {k for op, k in self._tombstones if _op_matches(op, operator_id)}

    def rollback_count(self, original_key: str, operator_id: str | None = None) -> int:
        """How many rollbacks of ``original_key`` actually gave money back (0 or 1)."""
        with self._lock:
            return sum(
                n
                for (op, k), n in self._reversals.items()
                if k == original_key and _op_matches(op, operator_id)
            )

    def requests_of(self, type_: str) -> list[ReceivedRequest]:
        with self._lock:
            return [r for r in self.requests if r.type == type_]

    def _debits(self, operator_id: str | None) -> list[_Txn]:
        return [
            t
            for t in self._txns.values()
            if t.type == DEBIT and _op_matches(t.operator_id, operator_id)
        ]

    # -- the wallet calls ------------------------------------------------------------

    def record(
        self,
        body: dict[str, Any],
        *,
        raw: bytes = b"",
        path: str = "",
        headers: dict[str, str] | None = None,
    ) -> ReceivedRequest:
        key = body.get("idempotencyKey")
        type_ = body.get("type")
        entry = ReceivedRequest(
            type=type_ if isinstance(type_, str) else None,
            idempotency_key=key if isinstance(key, str) else None,
            body=body,
            operator_id=str(body.get("operatorId")),
            raw=raw,
            path=path,
            headers=dict(headers or {}),
        )
        with self._lock:
            self.requests.append(entry)
        return entry

    def record_auth_failure(self, path: str, code: str) -> None:
        with self._lock:
            self.auth_failures.append((path, code))

    def record_webhook(self, body: dict[str, Any], *, stored: bool) -> None:
        with self._lock:
            self.webhook_attempts += 1
            if stored:
                self.received_webhooks.append(body)

    def handle(self, body: dict[str, Any], *, refuse_with: str | None = None) -> dict[str, Any]:
        """Answer one validated wallet request (see ``validate_request``).

        ``refuse_with`` refuses a money move with that errorCode (fault injection)."""
        with self._lock:
            type_ = body["type"]
            op = body["operatorId"]
            if type_ == BALANCE:
                currency = body["currency"]
                return {
                    "balanceMinor": self.balance(op, body["playerExternalId"], currency),
                    "currency": currency,
                }
            existing = self._txns.get((op, body["idempotencyKey"]))
            if existing is not None:
                if _fingerprint_of_txn(existing) == _fingerprint_of_body(body):
                    return dict(existing.answer)
                return self._refused(body, IDEMPOTENCY_KEY_REUSED)
            if type_ == DEBIT:
                return self._debit(body, refuse_with)
            if type_ == CREDIT:
                return self._credit(body, refuse_with)
            return self._rollback(body, refuse_with)

    def _debit(self, body: dict[str, Any], refuse_with: str | None) -> dict[str, Any]:
        op, key, player = body["operatorId"], body["idempotencyKey"], body["playerExternalId"]
        amount = body["amountMinor"]
        if (op, key) in self._tombstones:
            code: str | None = ROLLED_BACK
        elif refuse_with:
            code = refuse_with
        elif (op, player) in self._blocked:
            code = PLAYER_BLOCKED
        elif self.balance(op, player, body["currency"]) < amount:
            code = INSUFFICIENT_FUNDS
        else:
            code = None
        if code is not None:
            answer = self._refused(body, code)
            self._store(body, answer, applied=False)
            return answer
        self._balances[(op, player, body["currency"])] -= amount
        answer = self._accepted(op, player, body["currency"])
        self._store(body, answer, applied=True)
        return answer

    def _credit(self, body: dict[str, Any], refuse_with: str | None) -> dict[str, Any]:
        if refuse_with:
            return self._refused(body, refuse_with)  # not remembered: a retry is fresh
        op, player, currency = body["operatorId"], body["playerExternalId"], body["currency"]
        account = (op, player, currency)
        self._balances[account] = self._balances.get(account, 0) + body["amountMinor"]
        answer = self._accepted(op, player, currency)
        self._store(body, answer, applied=True)
        return answer

    def _rollback(self, body: dict[str, Any], refuse_with: str | None) -> dict[str, Any]:
        if refuse_with:
            return self._refused(body, refuse_with)  # not remembered: a retry is fresh
        op, original = body["operatorId"], body["originalIdempotencyKey"]
        target = self._txns.get((op, original))
        if target is None:
            self._tombstones.setdefault((op, original), body["idempotencyKey"])
            answer = self._accepted(op, body["playerExternalId"], body["currency"])
        elif target.type != DEBIT:
            return self._refused(body, ROLLBACK_TARGET_NOT_DEBIT)
        else:
            if target.applied and not target.reversed:
                account = (op, target.player, target.currency)
                self._balances[account] = self._balances.get(account, 0) + target.amount
                target.reversed = True
                self._reversals[(op, original)] = self._reversals.get((op, original), 0) + 1
            answer = self._accepted(op, target.player, target.currency)
        self._rolled_back.add((op, original))
        self._store(body, answer, applied=True)
        return answer

    def _accepted(self, op: str, player: str, currency: str) -> dict[str, Any]:
        self._seq += 1
        return {
            "accepted": True,
            "balanceAfterMinor": self.balance(op, player, currency),
            "providerTxnRef": f"ref-wallet-{self._seq:08d}",
        }

    def _refused(self, body: dict[str, Any], code: str) -> dict[str, Any]:
        """Exactly ``{accepted: false, errorCode}`` (interface 2.9), plus the player's
        balance as ``balanceAfterMinor`` when the ledger was made with
        ``balance_in_refusals``."""
        answer: dict[str, Any] = {"accepted": False, "errorCode": code}
        if self.balance_in_refusals:
            op, player = body["operatorId"], body["playerExternalId"]
            answer["balanceAfterMinor"] = self.balance(op, player, body["currency"])
        return answer

    def _store(self, body: dict[str, Any], answer: dict[str, Any], *, applied: bool) -> None:
        op, key = body["operatorId"], body["idempotencyKey"]
        self._txns[(op, key)] = _Txn(
            operator_id=op,
            key=key,
            type=body["type"],
            player=body["playerExternalId"],
            currency=body["currency"],
            amount=body["amountMinor"],
            original_key=body.get("originalIdempotencyKey"),
            answer=dict(answer),
            applied=applied,
        )


def _op_matches(op: str, wanted: str | None) -> bool:
    return wanted is None or op == wanted


def _fingerprint_of_body(body: dict[str, Any]) -> tuple[Any, ...]:
    return (
        body["type"],
        body["playerExternalId"],
        body["currency"],
        body["amountMinor"],
        body.get("originalIdempotencyKey"),
    )


def _fingerprint_of_txn(txn: _Txn) -> tuple[Any, ...]:
    return (txn.type, txn.player, txn.currency, txn.amount, txn.original_key)


def validate_request(body: dict[str, Any]) -> str | None:
    """None when the body is a well-formed wallet request, else what is wrong."""
    type_ = body.get("type")
    if type_ not in REQUEST_TYPES:
        return f"unknown type {type_!r}"
    for name in ("playerExternalId", "currency"):
        value = body.get(name)
        if not isinstance(value, str) or not value:
            return f"{name} must be a non-empty string"
    if type_ == BALANCE:
        return None
    names = ["idempotencyKey"] + (["originalIdempotencyKey"] if type_ == ROLLBACK else [])
    for name in names:
        value = body.get(name)
        if not isinstance(value, str) or not value:
            return f"{name} must be a non-empty string"
    amount = body.get("amountMinor")
    if not isinstance(amount, int) or isinstance(amount, bool):
        return "amountMinor must be an integer"
    if amount < 0 or (amount == 0 and type_ != ROLLBACK):
        return "amountMinor must be positive"
    return None


# --------------------------------------------------------------------------- faults


@dataclass(frozen=True)
class FaultPlan:
    """The faults chosen for one request (a snapshot of ``Faults``)."""

    stall_seconds: float = 0.0
    stall_after_apply: bool = False
    status_5xx: int | None = None
    non_json: bool = False
    error_after_apply: bool = False
    refuse_with: str | None = None
    answer_fields: dict[str, Any] | None = None

    def describe(self) -> str:
        parts = []
        if self.stall_seconds > 0:
            parts.append("stall")
        if self.status_5xx:
            parts.append("5xx")
        elif self.non_json:
            parts.append("non_json")
        if self.refuse_with:
            parts.append("refuse")
        if self.answer_fields:
            parts.append("answer_fields")
        return ",".join(parts)


@dataclass
class Faults:
    """Run-time fault knobs. Set attributes directly, or ``configure(**knobs)`` to reset
    and set in one step. All default to "no fault".

    Wallet calls:
      stall_seconds      sleep this long before answering. The money move is applied
                         after the sleep (a late wallet), or before it when
                         ``stall_after_apply`` is true ("applied, answer lost").
      status_5xx         answer this status (500-599) with a JSON error body.
      non_json           answer 200 with a body that is not JSON.
      error_after_apply  for status_5xx / non_json: apply the money move first
                         (default: nothing moves).
      refuse_with        refuse with this errorCode. Applies to wallet.debit only, or to
                         the money types in ``only_types`` when that is set.
      answer_fields      merge these fields into the JSON answer, after the ledger has
                         answered (a wallet out of contract, e.g. {"balanceMinor": -5}
                         or {"balanceAfterMinor": 2**70}); the ledger keeps its own.
      only_types         None: faults hit every request type; else only these types
                         (e.g. {"wallet.debit"} lets rollbacks through).
      times              None: unlimited; else only the next N matching requests are
                         faulted (each decrements it), then faults stop.
      hits               (read) how many requests were faulted so far.
    Webhooks:
      webhook_status     answer this status without storing the webhook.
      webhook_times      None: unlimited; else only the next N deliveries.
    """

    stall_seconds: float = 0.0
    stall_after_apply: bool = False
    status_5xx: int | None = None
    non_json: bool = False
    error_after_apply: bool = False
    refuse_with: str | None = None
    answer_fields: dict[str, Any] | None = None
    only_types: set[str] | frozenset[str] | None = None
    times: int | None = None
    webhook_status: int | None = None
    webhook_times: int | None = None
    hits: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def reset(self) -> None:
        """Turn every fault off (``hits`` is kept)."""
        self.configure()

    def configure(self, **knobs: Any) -> Self:
        """Reset every knob to its default, then set ``knobs``; returns self."""
        names = {f.name for f in fields(self)} - {"hits", "_lock"}
        unknown = set(knobs) - names
        if unknown:
            raise TypeError(f"unknown fault knobs: {sorted(unknown)}")
        status = knobs.get("status_5xx")
        if status is not None and not 500 <= status <= 599:
            raise ValueError("status_5xx must be in 500..599")
        with self._lock:
            for f in fields(self):
                if f.name in names:
                    setattr(self, f.name, knobs.get(f.name, f.default))
        return self

    def take(self, request_type: str | None) -> FaultPlan | None:
        """The faults for one wallet call of this type (consumes one of ``times``)."""
        with self._lock:
            if self.times is not None and self.times <= 0:
                return None
            selected = self.only_types is None or request_type in self.only_types
            transport = selected and (
                self.stall_seconds > 0 or self.status_5xx is not None or self.non_json
            )
            if self.only_types is None:
                refuse = bool(self.refuse_with) and request_type == DEBIT
            else:
                refuse = bool(self.refuse_with) and selected and request_type in MONEY_TYPES
            tamper = selected and bool(self.answer_fields)
            if not (transport or refuse or tamper):
                return None
            if self.times is not None:
                self.times -= 1
            self.hits += 1
            return FaultPlan(
                stall_seconds=self.stall_seconds if transport else 0.0,
                stall_after_apply=self.stall_after_apply,
                status_5xx=self.status_5xx if transport else None,
                non_json=self.non_json if transport else False,
                error_after_apply=self.error_after_apply,
                refuse_with=self.refuse_with if refuse else None,
                answer_fields=dict(self.answer_fields or {}) if tamper else None,
            )

    def take_webhook(self) -> int | None:
        """The status to fail this webhook delivery with, or None to accept it."""
        with self._lock:
            if self.webhook_status is None:
                return None
            if self.webhook_times is not None:
                if self.webhook_times <= 0:
                    return None
                self.webhook_times -= 1
            return self.webhook_status


# --------------------------------------------------------------------------- signing


ENVELOPE_HEADERS = ("X-Timestamp", "X-Signature", "Idempotency-Key")


def _verify(
    request: web.Request, raw: bytes, secrets: MutableMapping[str, str], clock: Clock
) -> tuple[dict[str, Any] | None, str | None]:
    """(body, None) when the call is authentic, else (None, error code)."""
    return check_signature(
        request.method,
        request.rel_url.raw_path,
        request.headers.get("X-Timestamp"),
        request.headers.get("X-Signature"),
        raw,
        secrets,
        clock,
    )


def check_signature(
    method: str,
    raw_path: str,
    timestamp: str | None,
    signature: str | None,
    raw: bytes,
    secrets: MutableMapping[str, str],
    clock: Clock = unix_now,
) -> tuple[dict[str, Any] | None, str | None]:
    """The outbound envelope check (interface 5.1): (body, None) when the call with these
    parts is authentic, else (None, error code). The body's ``operatorId`` picks the
    secret from ``secrets``."""
    if not timestamp or not signature:
        return None, "MISSING_HEADERS"
    if not re.fullmatch(r"-?[0-9]{1,15}", timestamp):
        return None, "INVALID_SIGNATURE"
    if abs(int(timestamp) - clock()) > MAX_SKEW_SECONDS:
        return None, "TIMESTAMP_SKEW"
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    operator_id = body.get("operatorId") if isinstance(body, dict) else None
    secret = secrets.get(operator_id) if isinstance(operator_id, str) else None
    body_hash = hashlib.sha256(raw).hexdigest()
    canonical = f"{timestamp}\n{method.upper()}\n{raw_path}\n{body_hash}"
    expected = hmac.new(
        (secret or "\x00unknown-operator").encode(), canonical.encode(), hashlib.sha256
    ).hexdigest()
    matches = hmac.compare_digest(expected.encode(), signature.encode("utf-8", "replace"))
    if secret is None or not matches or not isinstance(body, dict):
        return None, "INVALID_SIGNATURE"
    return body, None


def _error(status: int, code: str, message: str) -> web.Response:
    return web.json_response({"error": {"code": code, "message": message}}, status=status)


# --------------------------------------------------------------------------- app


def make_app(
    ledger: Ledger,
    faults: Faults,
    secrets: MutableMapping[str, str],
    *,
    wallet_path: str = "/wallet",
    webhook_path: str = "/webhooks",
    clock: Clock = unix_now,
) -> web.Application:
    """The wallet (POST ``wallet_path``) and webhook receiver (POST ``webhook_path``).

    ``secrets`` maps operatorId to its outbound secret; it is read on every call, so
    operators may be added while the app runs. ``GET /healthz`` answers unsigned."""

    async def authenticate(request: web.Request) -> dict[str, Any] | web.Response:
        raw = await request.read()
        body, failure = _verify(request, raw, secrets, clock)
        if failure is not None:
            ledger.record_auth_failure(request.path, failure)
            log.warning("refused %s %s: %s", request.method, request.path, failure)
            return _error(401, failure, "request signature not accepted")
        assert body is not None
        return body

    async def wallet(request: web.Request) -> web.StreamResponse:
        body = await authenticate(request)
        if isinstance(body, web.Response):
            return body
        sent = {name: request.headers[name] for name in ENVELOPE_HEADERS if name in request.headers}
        entry = ledger.record(
            body, raw=await request.read(), path=request.rel_url.raw_path, headers=sent
        )

        def answer(response: web.Response, payload: dict[str, Any] | None) -> web.Response:
            entry.http_status, entry.answer = response.status, payload
            log.info(
                "%s op=%s player=%s key=%s fault=%s -> %s %s",
                entry.type,
                entry.operator_id,
                body.get("playerExternalId"),
                entry.idempotency_key,
                entry.fault,
                response.status,
                json.dumps(payload) if payload is not None else "(no json)",
            )
            return response

        problem = validate_request(body)
        if problem is not None:
            payload = {"error": {"code": "INVALID_REQUEST", "message": problem}}
            return answer(web.json_response(payload, status=400), payload)
        if body["type"] in MONEY_TYPES:
            header_key = request.headers.get("Idempotency-Key")
            if header_key != body["idempotencyKey"]:
                message = "Idempotency-Key header must equal the body's idempotencyKey"
                payload = {"error": {"code": "IDEMPOTENCY_KEY_MISMATCH", "message": message}}
                return answer(web.json_response(payload, status=400), payload)

        plan = faults.take(body["type"]) or FaultPlan()
        entry.fault = plan.describe() or None
        transport_error = plan.status_5xx is not None or plan.non_json
        if plan.stall_seconds > 0 and not plan.stall_after_apply:
            await asyncio.sleep(plan.stall_seconds)
        result = None
        if not transport_error or plan.error_after_apply:
            result = ledger.handle(body, refuse_with=plan.refuse_with)
        if plan.stall_seconds > 0 and plan.stall_after_apply:
            await asyncio.sleep(plan.stall_seconds)
        if plan.status_5xx is not None:
            payload = {"error": {"code": "WALLET_FAULT", "message": "injected server error"}}
            return answer(web.json_response(payload, status=plan.status_5xx), None)
        if plan.non_json:
            text = "<html><body>502 Bad Gateway (injected)</body></html>"
            return answer(web.Response(text=text, content_type="text/html"), None)
        assert result is not None
        if plan.answer_fields:
            result = {**result, **plan.answer_fields}
        return answer(web.json_response(result), result)

    async def webhook(request: web.Request) -> web.StreamResponse:
        body = await authenticate(request)
        if isinstance(body, web.Response):
            return body
        status = faults.take_webhook()
        ledger.record_webhook(body, stored=status is None)
        if status is not None:
            log.info("webhook id=%s refused with %s (fault)", body.get("id"), status)
            return _error(status, "WEBHOOK_FAULT", "injected webhook failure")
        log.info("webhook id=%s type=%s stored", body.get("id"), body.get("type"))
        return web.json_response({})

    async def healthz(request: web.Request) -> web.StreamResponse:
        return web.json_response({"status": "ok"})

    app = web.Application()
    app.router.add_post(wallet_path, wallet)
    app.router.add_post(webhook_path, webhook)
    app.router.add_get("/healthz", healthz)
    return app


# --------------------------------------------------------------------------- servers


class WalletServer:
    """Runs ``make_app`` on ``host`` (default 127.0.0.1, a free port) in this loop.

    ``async with WalletServer({"op-1": "secret"}) as wallet: wallet.url ...``"""

    def __init__(
        self,
        secrets: MutableMapping[str, str],
        *,
        ledger: Ledger | None = None,
        faults: Faults | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        wallet_path: str = "/wallet",
        webhook_path: str = "/webhooks",
        clock: Clock = unix_now,
        shutdown_timeout: float = 1.0,
        balance_in_refusals: bool = False,
    ) -> None:
        """``balance_in_refusals`` makes the ``Ledger`` when none is given (see there)."""
        self.secrets = secrets
        self.ledger = (
            ledger if ledger is not None else Ledger(balance_in_refusals=balance_in_refusals)
        )
        self.faults = faults if faults is not None else Faults()
        self.host = host
        self.port = port
        self.wallet_path = wallet_path
        self.webhook_path = webhook_path
        self.clock = clock
        self._shutdown_timeout = shutdown_timeout
        self._runner: web.AppRunner | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def url(self) -> str:
        return self.base_url + self.wallet_path

    @property
    def webhook_url(self) -> str:
        return self.base_url + self.webhook_path

    async def start(self) -> Self:
        app = make_app(
            self.ledger,
            self.faults,
            self.secrets,
            wallet_path=self.wallet_path,
            webhook_path=self.webhook_path,
            clock=self.clock,
        )
        runner = web.AppRunner(app, shutdown_timeout=self._shutdown_timeout, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self.port = runner.addresses[0][1]
        return self

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()


class _OfServer:
    """A read-only attribute of a ``ThreadedWalletServer``: the same one of the
    ``WalletServer`` it runs (like a ``property`` returning ``self._server.<name>``)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        return self if instance is None else getattr(instance._server, self.name)

    def __set__(self, instance: Any, value: Any) -> None:
        raise AttributeError(
            f"property {self.name!r} of {type(instance).__name__!r} object has no setter"
        )


class ThreadedWalletServer:
    """A ``WalletServer`` on its own event loop in a background thread, for sync code.

    ``with ThreadedWalletServer({"op-1": "secret"}) as wallet: wallet.url ...``"""

    secrets: MutableMapping[str, str] = _OfServer()
    ledger: Ledger = _OfServer()
    faults: Faults = _OfServer()
    port: int = _OfServer()
    base_url: str = _OfServer()
    url: str = _OfServer()
    webhook_url: str = _OfServer()

    def __init__(self, secrets: MutableMapping[str, str], **kwargs: Any) -> None:
        self._server = WalletServer(secrets, **kwargs)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def start(self, timeout: float = 10.0) -> Self:
        if self._thread is not None:
            raise RuntimeError("already started")
        loop = asyncio.new_event_loop()
        thread = threading.Thread(
            target=self._run, args=(loop,), name="reference-wallet", daemon=True
        )
        self._loop, self._thread = loop, thread
        thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self._server.start(), loop).result(timeout)
        except BaseException:
            self._halt()
            raise
        return self

    def stop(self, timeout: float = 10.0) -> None:
        if self._loop is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self._server.stop(), self._loop).result(timeout)
        finally:
            self._halt()

    def _halt(self) -> None:
        loop, thread = self._loop, self._thread
        self._loop = self._thread = None
        if loop is not None and thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()

    @staticmethod
    def _run(loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            with contextlib.suppress(Exception):
                loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


# --------------------------------------------------------------------------- CLI


def _parse_secret(text: str) -> tuple[str, str]:
    operator_id, sep, secret = text.partition("=")
    if not sep or not operator_id or not secret:
        raise argparse.ArgumentTypeError("expected OPERATOR=SECRET or OPERATOR=env:VAR")
    if secret.startswith("env:"):
        value = os.environ.get(secret[4:])
        if not value:
            raise argparse.ArgumentTypeError(f"environment variable {secret[4:]} is not set")
        secret = value
    return operator_id, secret


def _parse_fund(text: str) -> tuple[str, str, str, int]:
    operator_id, sep, rest = text.partition(":")
    parts = rest.rsplit(":", 2)
    if not sep or len(parts) != 3 or not operator_id or not all(parts):
        raise argparse.ArgumentTypeError("expected OPERATOR:PLAYER:CURRENCY:AMOUNT_MINOR")
    player, currency, amount = parts
    try:
        return operator_id, player, currency, int(amount)
    except ValueError:
        raise argparse.ArgumentTypeError("AMOUNT_MINOR must be an integer") from None


def _parse_player(text: str) -> tuple[str, str]:
    operator_id, sep, player = text.partition(":")
    if not sep or not operator_id or not player:
        raise argparse.ArgumentTypeError("expected OPERATOR:PLAYER")
    return operator_id, player


def _secrets_from_config(path: str) -> list[tuple[str, str]]:
    """(operator id, outbound secret) pairs from the platform's configuration file."""
    import tomllib

    with open(path, "rb") as handle:
        config = tomllib.load(handle)
    return [(o["id"], o["outbound_secret"]) for o in config.get("operators", [])]


def parse_cli(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line of ``main`` (secrets read from ``--config`` included)."""
    parser = argparse.ArgumentParser(
        prog="python -m ops.reference_operator.wallet",
        description="Reference operator wallet and webhook receiver.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument(
        "--secret",
        action="append",
        type=_parse_secret,
        default=[],
        metavar="OP=SECRET",
        help="operator's outbound secret (repeatable); OP=env:VAR reads it from $VAR",
    )
    parser.add_argument(
        "--config",
        default=None,
        help="the platform's TOML config: every operator's outbound_secret is read from it",
    )
    parser.add_argument(
        "--fund", action="append", type=_parse_fund, default=[], metavar="OP:PLAYER:CUR:MINOR"
    )
    parser.add_argument(
        "--block", action="append", type=_parse_player, default=[], metavar="OP:PLAYER"
    )
    parser.add_argument("--wallet-path", default="/wallet")
    parser.add_argument("--webhook-path", default="/webhooks")
    parser.add_argument(
        "--balance-in-refusals",
        action="store_true",
        help="add the balance to refusals as balanceAfterMinor (default: exactly "
        "{accepted: false, errorCode}, as interface 2.9 shows)",
    )
    args = parser.parse_args(argv)
    if args.config:
        args.secret.extend(_secrets_from_config(args.config))
    if not args.secret:
        parser.error("at least one --secret OP=SECRET (or --config FILE) is needed")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_cli(argv)

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    secrets = dict(args.secret)
    ledger = Ledger(balance_in_refusals=args.balance_in_refusals)
    for operator_id, player, currency, amount in args.fund:
        ledger.fund(operator_id, player, currency, amount)
        log.info("funded %s/%s %s %d", operator_id, player, currency, amount)
    for operator_id, player in args.block:
        ledger.block(operator_id, player)
    app = make_app(
        ledger, Faults(), secrets, wallet_path=args.wallet_path, webhook_path=args.webhook_path
    )
    log.info(
        "reference wallet on http://%s:%d%s (webhooks %s) for operators %s",
        args.host,
        args.port,
        args.wallet_path,
        args.webhook_path,
        ", ".join(sorted(secrets)),
    )
    web.run_app(app, host=args.host, port=args.port, print=None, access_log=None)


if __name__ == "__main__":
    main()

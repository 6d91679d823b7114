"""A wallet with one deliberate defect, for ``upgrader wallet-check`` to find.

It is the reference wallet (its ``Ledger`` and signature check, on real HTTP) with one
defect switched on, using only the ledger's public methods:

- ``replays_debits``: a debit sent again under a key it has seen moves the money again
  (and answers a new ``providerTxnRef``), as a wallet keyed on the request would;
- ``accepts_forgeries``: no signature check at all;
- ``forgets_tombstones``: a debit whose key was rolled back before it arrived is taken
  anyway (the rollback of the unseen debit was accepted and forgotten);
- ``float_balance``: ``wallet.balance`` answers ``balanceMinor`` as a float (``100.0``);
- ``skips_rollbacks``: a rollback of a debit it took is accepted but gives nothing back;
- ``slow_debit``: the first debit is answered after ``stall_seconds``.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Self

from aiohttp import web

from ops.reference_operator.wallet import (
    DEBIT,
    ROLLBACK,
    Ledger,
    check_signature,
    validate_request,
)

DEFECTS = (
    "replays_debits",
    "accepts_forgeries",
    "forgets_tombstones",
    "float_balance",
    "skips_rollbacks",
    "slow_debit",
)


class BrokenWallet:
    """``async with BrokenWallet({"demo": "secret"}, "replays_debits") as w: w.url``"""

    def __init__(self, secrets: dict[str, str], defect: str, stall_seconds: float = 0.0) -> None:
        if defect not in DEFECTS:
            raise ValueError(f"unknown defect {defect!r}")
        self.secrets = secrets
        self.defect = defect
        self.stall_seconds = stall_seconds
        self.ledger = Ledger()
        self.stalls_left = 1
        self.replays = 0
        self._runner: web.AppRunner | None = None
        self.url = ""

    def _rewrite(self, body: dict[str, Any]) -> dict[str, Any]:
        """The request the ledger gets instead (how each defect is made)."""
        op, key = body["operatorId"], body.get("idempotencyKey")
        if body["type"] == DEBIT:
            if self.defect == "replays_debits" and key in self.ledger.applied_debit_keys(op):
                self.replays += 1
                return {**body, "idempotencyKey": f"{key}#again-{self.replays}"}
            if self.defect == "forgets_tombstones" and key in self.ledger.tombstoned_keys(op):
                return {**body, "idempotencyKey": f"{key}#forgotten"}
        if body["type"] == ROLLBACK and self.defect == "skips_rollbacks":
            original = body["originalIdempotencyKey"]
            if original in self.ledger.applied_debit_keys(op):
                return {**body, "originalIdempotencyKey": f"{original}#elsewhere"}
        return body

    async def _wallet(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        body, failure = check_signature(
            request.method,
            request.rel_url.raw_path,
            request.headers.get("X-Timestamp"),
            request.headers.get("X-Signature"),
            raw,
            self.secrets,
        )
        if self.defect == "accepts_forgeries":
            body = json.loads(raw)
        elif failure is not None:
            return web.json_response({"error": {"code": failure}}, status=401)
        assert body is not None
        problem = validate_request(body)
        if problem is not None:
            return web.json_response({"error": {"code": "INVALID_REQUEST"}}, status=400)
        if self.defect == "slow_debit" and body["type"] == DEBIT and self.stalls_left:
            self.stalls_left -= 1
            await asyncio.sleep(self.stall_seconds)
        self.ledger.record(body)
        answer = self.ledger.handle(self._rewrite(body))
        if self.defect == "float_balance" and "balanceMinor" in answer:
            answer["balanceMinor"] = float(answer["balanceMinor"])
        return web.json_response(answer)

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_post("/wallet", self._wallet)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}/wallet"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


@contextmanager
def serving(wallet: BrokenWallet) -> Iterator[BrokenWallet]:
    """``wallet`` served from its own event loop in a thread, for synchronous tests."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="broken-wallet", daemon=True)
    thread.start()
    try:
        asyncio.run_coroutine_threadsafe(wallet.__aenter__(), loop).result(10)
        try:
            yield wallet
        finally:
            asyncio.run_coroutine_threadsafe(wallet.__aexit__(None, None, None), loop).result(10)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()

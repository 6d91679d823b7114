"""A slow link in front of the reference webhook receiver (the reference wallet has no
webhook stall of its own).

``SlowReceiver(target_base_url)`` listens on a free loopback port and forwards every
``POST /webhooks`` unchanged (body, ``X-Timestamp``, ``X-Signature``; the path is the
same, so the signature still verifies) to the real receiver. ``delay_before`` sleeps
before forwarding (a slow receiver), ``delay_after`` after the receiver stored the
webhook and before answering (delivered, answer late or lost). Runs on its own event loop
in a thread; ``in_flight`` counts deliveries being held right now.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Self

import aiohttp
from aiohttp import web

FORWARDED_HEADERS = ("X-Timestamp", "X-Signature", "Content-Type")


class SlowReceiver:
    def __init__(self, target_base_url: str, path: str = "/webhooks") -> None:
        self.target = target_base_url.rstrip("/") + path
        self.path = path
        self.delay_before = 0.0
        self.delay_after = 0.0
        self.in_flight = 0  # deliveries held here right now
        self.holding = 0  # of which already stored by the receiver, answer not yet sent
        self.forwarded = 0
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

    def slow(self, before: float = 0.0, after: float = 0.0) -> None:
        self.delay_before, self.delay_after = before, after

    def _count(self, delta: int) -> None:
        with self._lock:
            self.in_flight += delta

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        headers = {h: request.headers[h] for h in FORWARDED_HEADERS if h in request.headers}
        self._count(1)
        try:
            if self.delay_before:
                await asyncio.sleep(self.delay_before)
            assert self._session is not None
            async with self._session.post(self.target, data=body, headers=headers) as answer:
                payload, status = await answer.read(), answer.status
            with self._lock:
                self.forwarded += 1
            if self.delay_after:
                with self._lock:
                    self.holding += 1
                try:
                    await asyncio.sleep(self.delay_after)
                finally:
                    with self._lock:
                        self.holding -= 1
            return web.Response(status=status, body=payload, content_type="application/json")
        finally:
            self._count(-1)

    async def _start(self) -> None:
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30))
        app = web.Application()
        app.router.add_post(self.path, self._forward)
        runner = web.AppRunner(app, shutdown_timeout=0.5, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self._runner = runner
        self.port = runner.addresses[0][1]

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    def start(self) -> Self:
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name="slow-receiver", daemon=True)
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), loop).result(10)
        return self

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        self._loop = self._thread = None
        if loop is None or thread is None:
            return
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()

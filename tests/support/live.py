"""The Litestar app served by a real uvicorn on a free loopback port, in a thread, with
the HTTP protocol class ``upgrader serve`` uses (``api/http_protocol.py``)."""

from __future__ import annotations

import itertools
import os
import random
import socket
import threading
import time
from typing import Any

import httpx
import uvicorn

from api.http_protocol import JoinedWritesProtocol
from tests.support.signing import signed_headers

# A port chosen by binding port 0 comes from the kernel's ephemeral range, where the
# kernel may hand it to another test process (or to an outgoing connection) between our
# release and the server's bind: "address already in use" under ``pytest -n 4``. So each
# xdist worker takes ports from its own slice below the ephemeral range (32768-60999 on
# Linux), starting at a random offset, and checks each port is free before giving it out.
_SLICE = 2000
_FIRST = 20000


def _worker_ports() -> itertools.cycle[int]:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    base = _FIRST + (int(worker) % 6 if worker.isdigit() else 0) * _SLICE
    start = random.randrange(_SLICE)
    return itertools.cycle([base + (start + n) % _SLICE for n in range(_SLICE)])


_ports = _worker_ports()
_ports_lock = threading.Lock()


def free_port() -> int:
    """A loopback port nobody listens on, from this test process's own slice."""
    with _ports_lock:
        for _ in range(_SLICE):
            port = next(_ports)
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    continue
                return port
    raise RuntimeError("no free loopback port in this worker's slice")


class LiveServer:
    def __init__(self, app: Any) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            app,
            host="127.0.0.1",
            port=self.port,
            log_level="warning",
            lifespan="on",
            http=JoinedWritesProtocol,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


class Api:
    """A real HTTP client that signs S2S calls with a given key and the platform's clock."""

    def __init__(
        self, base_url: str, clock: Any, key_id: str = "key-a", secret: str = "secret-a-1"
    ) -> None:
        self.http = httpx.Client(base_url=base_url, timeout=30)
        self.clock = clock
        self.key_id = key_id
        self.secret = secret

    def s2s(
        self,
        method: str,
        path: str,
        body: bytes = b"",
        params: Any = None,
        key_id: str | None = None,
        secret: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        signed = signed_headers(
            key_id or self.key_id, secret or self.secret, int(self.clock.now()), method, path, body
        )
        return self.http.request(
            method, path, content=body or None, params=params, headers={**signed, **(headers or {})}
        )

    def play(
        self, method: str, path: str, token: str, json: Any = None, params: Any = None
    ) -> httpx.Response:
        return self.http.request(
            method, path, json=json, params=params, headers={"Authorization": f"Bearer {token}"}
        )

    def close(self) -> None:
        self.http.close()

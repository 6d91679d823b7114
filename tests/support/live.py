"""The Litestar app served by a real uvicorn on a free loopback port, in a thread, with
the HTTP protocol class ``upgrader serve`` uses (``api/http_protocol.py``)."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import httpx
import uvicorn

from api.http_protocol import JoinedWritesProtocol
from tests.support.signing import signed_headers


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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

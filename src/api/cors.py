"""CORS for the player API only: /api/play/* is open to any origin (interface 5.3.4).

Bearer tokens, not cookies, authenticate those calls, so ``*`` is safe and credentials
are never allowed. S2S routes get no CORS headers at all.
"""

from __future__ import annotations

from litestar.types import ASGIApp, Message, Receive, Scope, Send

PLAYER_PREFIX = "/api/play/"
_HEADERS = [
    (b"access-control-allow-origin", b"*"),
    (b"access-control-expose-headers", b"Retry-After"),
]
_PREFLIGHT = [
    *_HEADERS,
    (b"access-control-allow-methods", b"GET, POST, OPTIONS"),
    (b"access-control-allow-headers", b"Authorization, Content-Type"),
    (b"access-control-max-age", b"600"),
    (b"content-length", b"0"),
]


def player_cors(app: ASGIApp) -> ASGIApp:
    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(PLAYER_PREFIX):
            await app(scope, receive, send)
            return
        if scope["method"] == "OPTIONS":
            await send({"type": "http.response.start", "status": 204, "headers": _PREFLIGHT})
            await send({"type": "http.response.body", "body": b""})
            return

        async def send_with_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *_HEADERS]}
            await send(message)

        await app(scope, receive, send_with_cors)

    return middleware

"""The player-facing game app: one static page and its assets, served by the platform.

``GET /game/upgrader?launchToken=...`` and ``GET /game/boxes?launchToken=...`` answer
the app's HTML, the same page for both (it boots the game its session names; the token is
read by the app in the browser, never by the server); ``GET /game/assets/{file}`` its CSS, scripts
and item images from ``api/static/game/``, plus the shared ``fairness.js`` verifier.
No build step and no inline script: the Content-Security-Policy allows scripts from this
origin only. ``frame-ancestors *`` lets any operator site embed the game for now.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from litestar import Controller, Response, get
from litestar.datastructures import State
from litestar.params import FromPath, QueryParameter

from application.errors import not_found
from application.platform import Platform

STATIC = Path(__file__).resolve().parent.parent / "static"
GAME = STATIC / "game"
SHARED_ASSETS = {"fairness.js": STATIC / "fairness.js"}

MEDIA_TYPES = {
    ".html": "text/html",
    ".css": "text/css",
    ".js": "text/javascript",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".webp": "image/webp",
    ".ico": "image/x-icon",
}

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data: https:",
        "connect-src 'self'",
        "font-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
    ]
)

SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def frame_ancestors(platform: Platform, launch_token: str | None) -> str:
    """Who may frame the game: the launching operator's ``allowed_frame_origins``; without
    a verifiable launch token (a reload, a bad link), any configured operator's origins."""
    claims = platform.sessions.peek_launch_token(launch_token) if launch_token else None
    operators = platform.directory.operators
    if claims is not None and claims.operator_id in operators:
        origins = operators[claims.operator_id].config.allowed_frame_origins
    else:
        origins = sorted({o for op in operators.values() for o in op.config.allowed_frame_origins})
    if "*" in origins:
        return "frame-ancestors *"
    return "frame-ancestors " + (" ".join(origins) if origins else "'none'")


def _file_response(
    path: Path, cache_control: str, ancestors: str = "frame-ancestors 'none'"
) -> Response[bytes]:
    headers = {**SECURITY_HEADERS, "Cache-Control": cache_control}
    headers["Content-Security-Policy"] = f"{CONTENT_SECURITY_POLICY}; {ancestors}"
    return Response(content=path.read_bytes(), media_type=MEDIA_TYPES[path.suffix], headers=headers)


def asset_path(name: str) -> Path | None:
    """The file under the game folder that ``name`` names, or None (no escaping it)."""
    name = name.lstrip("/")
    if name in SHARED_ASSETS:
        return SHARED_ASSETS[name]
    candidate = (GAME / name).resolve()
    if not candidate.is_relative_to(GAME) or candidate.suffix not in MEDIA_TYPES:
        return None
    return candidate if candidate.is_file() else None


class GameController(Controller):
    path = "/game"
    include_in_schema = False

    # One app for every game: it boots the game its session/init answer names.
    @get(["/upgrader", "/boxes"], sync_to_thread=False)
    def game_page(
        self,
        state: State,
        launch_token: Annotated[str | None, QueryParameter(name="launchToken")] = None,
    ) -> Response[bytes]:
        # The page carries a launch token in its URL until the app removes it: never cache.
        ancestors = frame_ancestors(state.platform, launch_token)
        return _file_response(GAME / "index.html", "no-store", ancestors)

    @get("/assets/{name:path}", sync_to_thread=False)
    def asset(self, name: FromPath[str]) -> Response[bytes]:
        found = asset_path(name)
        if found is None:
            raise not_found("asset")
        return _file_response(found, "no-cache")

"""The API explorers, offline, and ``GET /``.

Swagger UI and ReDoc are served by the platform itself: their scripts and styles come
from the ``drf-spectacular-sidecar`` package (the swagger-ui-dist and redoc builds,
released with upstream; the package is only read from disk, never imported, so Django,
which it declares, is never loaded). No page loads anything from another host, and none
has an inline script: a Content-Security-Policy (``connect-src 'self'``) holds them to it.

Under ``/api/schema``:

- ``/api/schema`` and ``/api/schema/redoc``: ReDoc of the platform API;
- ``/api/schema/swagger``: Swagger UI, with a selector for the platform API and the
  wallet contract;
- ``/api/schema/wallet``: ReDoc of the wallet contract (the operator's endpoint);
- ``/api/schema/openapi.json`` (and ``.yaml``): the platform API document;
- ``/api/schema/wallet-openapi.json``: the wallet contract (``docs/wallet-openapi.json``);
- ``/api/schema/assets/{file}``: the explorers' files.

``GET /`` answers a small page pointing to these, the health check and the demo (or
JSON when asked for ``application/json`` only).
"""

from __future__ import annotations

import dataclasses
import json
from functools import cache
from html import escape
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Any

from litestar import Request, Response, Router, get
from litestar.datastructures import ResponseHeader
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import JsonRenderPlugin, OpenAPIRenderPlugin, YamlRenderPlugin
from litestar.params import FromPath

from application.errors import not_found

SCHEMA_PATH = "/api/schema"
ASSETS = f"{SCHEMA_PATH}/assets"
SIDECAR = "drf-spectacular-sidecar"
SIDECAR_DIRS = (
    "drf_spectacular_sidecar/static/drf_spectacular_sidecar/swagger-ui-dist",
    "drf_spectacular_sidecar/static/drf_spectacular_sidecar/redoc/bundles",
)
OWN_ASSETS = {"explorer.js": Path(__file__).resolve().parent / "static" / "explorer.js"}
MEDIA_TYPES = {
    ".js": "text/javascript",
    ".css": "text/css",
    ".png": "image/png",
    ".map": "application/json",
}
# ReDoc's sidebar footer shows Redocly's logo from their CDN, unconditionally; the bundle
# is served with that one URL replaced by an empty image, so nothing leaves the host.
PATCHES = {
    "redoc.standalone.js": (
        b"https://cdn.redoc.ly/redoc/logo-mini.svg",
        b"data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg'/%3E",
    )
}
PLATFORM_SPEC = {"url": f"{SCHEMA_PATH}/openapi.json", "name": "Platform API"}
WALLET_SPEC = {
    "url": f"{SCHEMA_PATH}/wallet-openapi.json",
    "name": "Wallet contract (the operator's endpoint)",
}

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",  # both explorers set style attributes
        "img-src 'self' data:",
        "font-src 'self' data:",
        "connect-src 'self'",
        "worker-src 'self' blob:",  # ReDoc's search runs in a worker made from a blob
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ]
)
PAGE_HEADERS = [
    ResponseHeader(name="Content-Security-Policy", value=CONTENT_SECURITY_POLICY),
    ResponseHeader(name="X-Content-Type-Options", value="nosniff"),
    ResponseHeader(name="Referrer-Policy", value="no-referrer"),
]


@cache
def assets() -> dict[str, Path]:
    """File name -> path of every explorer file served under ``/api/schema/assets``."""
    found = dict(OWN_ASSETS)
    try:
        dist = distribution(SIDECAR)
    except PackageNotFoundError:  # pragma: no cover - a dependency of the project
        return found
    for folder in SIDECAR_DIRS:
        directory = Path(str(dist.locate_file(folder)))
        for path in sorted(directory.iterdir()):
            if path.suffix in MEDIA_TYPES:
                found.setdefault(path.name, path)
    return found


def _page(title: str, head: str, body: str) -> bytes:
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title>
<link rel="icon" type="image/png" href="{ASSETS}/favicon-32x32.png">
{head}
</head>
<body>
{body}
</body>
</html>
""".encode()


class SwaggerPage(OpenAPIRenderPlugin):
    """Swagger UI from local files; ``explorer.js`` starts it (no inline script)."""

    def __init__(self) -> None:
        super().__init__(path="/swagger")

    def render(self, request: Request, openapi_schema: dict[str, Any]) -> bytes:
        specs = escape(json.dumps([PLATFORM_SPEC, WALLET_SPEC]))
        return _page(
            f"{openapi_schema['info']['title']}: Swagger UI",
            f'<link rel="stylesheet" href="{ASSETS}/swagger-ui.css">',
            f'<div id="swagger-ui" data-explorer="swagger" data-specs="{specs}"></div>\n'
            f'<script src="{ASSETS}/swagger-ui-bundle.js"></script>\n'
            f'<script src="{ASSETS}/swagger-ui-standalone-preset.js"></script>\n'
            f'<script src="{ASSETS}/explorer.js"></script>',
        )

    def receive_router(self, router: Router) -> None:
        router.register(asset)
        router.register(wallet_document)


class RedocPage(OpenAPIRenderPlugin):
    """ReDoc from a local file; it renders the ``<redoc spec-url>`` element by itself."""

    def __init__(self, path: str, spec: dict[str, str]) -> None:
        super().__init__(path=path)
        self.spec = spec

    def render(self, request: Request, openapi_schema: dict[str, Any]) -> bytes:
        return _page(
            f"{self.spec['name']}: ReDoc",
            "",
            f'<redoc spec-url="{escape(self.spec["url"])}"></redoc>\n'
            f'<script src="{ASSETS}/redoc.standalone.js"></script>',
        )


def with_explorers(config: OpenAPIConfig) -> OpenAPIConfig:
    """``config`` serving the explorers under ``/api/schema`` (a new router per app: the
    OpenAPI plugin registers its pages into it). The first page is also served at
    ``/api/schema`` itself."""
    plugins: list[OpenAPIRenderPlugin] = [
        RedocPage("/redoc", PLATFORM_SPEC),
        SwaggerPage(),
        RedocPage("/wallet", WALLET_SPEC),
        JsonRenderPlugin(path="/openapi.json"),
        YamlRenderPlugin(path=["/openapi.yaml", "/openapi.yml"]),
    ]
    router = Router(
        SCHEMA_PATH, route_handlers=[], include_in_schema=False, response_headers=PAGE_HEADERS
    )
    # the fields given, less the ones litestar derives (and warns about when passed back)
    derived = {"root_schema_site", "enabled_endpoints", "openapi_controller", "path"}
    given = {
        f.name: getattr(config, f.name)
        for f in dataclasses.fields(config)
        if f.init and f.name not in derived
    }
    return OpenAPIConfig(**{**given, "render_plugins": plugins, "openapi_router": router})


@cache
def asset_content(name: str) -> bytes | None:
    """The bytes served for ``name`` (patched where ``PATCHES`` says), or None."""
    path = assets().get(name)
    if path is None:
        return None
    content = path.read_bytes()
    if name in PATCHES:
        old, new = PATCHES[name]
        content = content.replace(old, new)
    return content


@get("/assets/{name:str}", sync_to_thread=False, include_in_schema=False)
def asset(name: FromPath[str]) -> Response[bytes]:
    content = asset_content(name)
    if content is None:
        raise not_found("asset")
    return Response(
        content=content,
        media_type=MEDIA_TYPES[Path(name).suffix],
        headers={"Cache-Control": "public, max-age=86400"},
    )


@get("/wallet-openapi.json", sync_to_thread=False, include_in_schema=False)
def wallet_document() -> Response[bytes]:
    from application.wallet.openapi import document_text

    return Response(content=document_text().encode(), media_type="application/json")


LINKS = [
    ("API reference (ReDoc)", f"{SCHEMA_PATH}/redoc"),
    ("API explorer (Swagger UI)", f"{SCHEMA_PATH}/swagger"),
    ("OpenAPI document", PLATFORM_SPEC["url"]),
    ("Wallet contract you implement (ReDoc)", f"{SCHEMA_PATH}/wallet"),
    ("Wallet contract (OpenAPI)", WALLET_SPEC["url"]),
]
HEALTH = "/api/s2s/health"
DEMO = (
    "`make run` starts the platform with the reference operator, whose page "
    "(http://127.0.0.1:8001/ by default) launches the game at /game/upgrader."
)


def _wants_json(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return "application/json" in accept and "text/html" not in accept


@get("/", sync_to_thread=False, include_in_schema=False)
def root(request: Request) -> Response[Any]:
    """Where to go from here: the docs, the health check, the demo."""
    if _wants_json(request):
        return Response(
            content={
                "service": "Upgrader game platform",
                "docs": {name: url for name, url in LINKS},
                "health": {"path": HEALTH, "signed": True},
                "demo": DEMO.replace("`", ""),
            },
            headers={"Cache-Control": "no-cache"},
        )
    items = "\n".join(f'<li><a href="{url}">{escape(name)}</a></li>' for name, url in LINKS)
    body = f"""<main>
<h1>Upgrader game platform</h1>
<p>A B2B game platform: operators call its signed server-to-server API, players play
the Upgrader in the game app, money moves through the operator's wallet.</p>
<h2>Documentation</h2>
<ul>
{items}
</ul>
<h2>Health</h2>
<p><code>GET {HEALTH}</code>, signed like every <code>/api/s2s/</code> call (the README
shows how, with Python, curl, JavaScript and Java examples in <code>ops/examples/</code>).</p>
<h2>Demo</h2>
<p><code>make run</code> starts the platform with the reference operator, whose page
(<code>http://127.0.0.1:8001/</code> by default) launches the game at
<code>/game/upgrader</code>.</p>
</main>"""
    headers = {h.name: h.value or "" for h in PAGE_HEADERS}
    return Response(
        content=_page("Upgrader game platform", "", body),
        media_type="text/html",
        headers={**headers, "Cache-Control": "no-cache"},
    )

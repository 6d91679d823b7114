"""Reference operator site: the wallet and webhook receiver plus a page that embeds the game.

This is what an operator's own web site does to offer its games (interface 4.1, 5.4):
its backend mints a launch token with a SIGNED ``POST /api/s2s/launches`` and sends the
player's browser to the ``launchUrl`` the platform answers, inside an iframe. One aiohttp
app composes that with the reference wallet (``wallet.make_app``), so a single process is
the whole operator side of the demo:

* ``GET /?game=G``               the operator page: casino balance, a choice of game (the
                                 Upgrader or a box of the signed S2S catalogue, games.py)
                                 and the chosen game in an iframe
* ``GET /demo/launch?player=ID&game=G`` mint a launch token (signed) and 302 to its
                                 launchUrl (``game``: ``upgrader``, default, or ``box-N``)
* ``GET /demo/balance?player=ID`` the player's balance in this wallet (for the page)
* ``GET /demo/status``           signed ``GET /api/s2s/health`` against the platform
* ``POST /wallet``, ``POST /webhooks``, ``GET /healthz``  the reference wallet

Operator id, key id and secrets come from the platform's configuration file (``--config``),
never from the command line, and never reach a log line. Run it::

    python -m ops.reference_operator.launcher --config ops/demo/config.toml --port 8001
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import html
import json
import logging
import re
import time
import tomllib
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

import aiohttp
from aiohttp import web

from ops.reference_operator.games import (
    BOXES_PATH,
    BoxOffer,
    Choice,
    box_offers,
    choice_form,
    parse_choice,
)
from ops.reference_operator.wallet import Faults, Ledger, make_app

log = logging.getLogger("reference_operator")

PLAYER_ID = re.compile(r"^[\x21-\x7e]{1,128}$")
CURRENCY = re.compile(r"^[A-Z]{3}$")
LOCALE = re.compile(r"^[A-Za-z0-9-]{1,35}$")
LAUNCHES_PATH = "/api/s2s/launches"
HEALTH_PATH = "/api/s2s/health"
CLIENT_KEY: web.AppKey[aiohttp.ClientSession] = web.AppKey("platform_client", aiohttp.ClientSession)


# --------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class OperatorSettings:
    """What the operator side needs, read from the platform's configuration file."""

    operator_id: str
    key_id: str
    secret: str = field(repr=False)
    base_currency: str
    exponent: int
    platform_url: str
    outbound_secrets: dict[str, str] = field(repr=False)


class SettingsError(Exception):
    pass


def settings_from_config(
    path: str,
    *,
    operator_id: str | None = None,
    key_id: str | None = None,
    platform_url: str | None = None,
) -> OperatorSettings:
    """The operator (default: the first), its key (default: the first not revoked) and
    every operator's outbound secret, from the platform's TOML configuration."""
    try:
        with open(path, "rb") as handle:
            raw = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise SettingsError(f"{path}: cannot read the configuration ({exc})") from None
    operators = raw.get("operators") or []
    if not operators:
        raise SettingsError(f"{path}: no [[operators]]")
    chosen = next((o for o in operators if operator_id in (None, o.get("id"))), None)
    if chosen is None:
        raise SettingsError(f"{path}: no operator with id {operator_id!r}")
    keys = [k for k in chosen.get("keys", []) if not k.get("revoked", False)]
    key = next((k for k in keys if key_id in (None, k.get("key_id"))), None)
    if key is None:
        raise SettingsError(f"{path}: operator {chosen['id']!r} has no usable key {key_id or ''}")
    base = chosen.get("base_currency", "EUR")
    exponent = next(
        (c.get("exponent", 2) for c in chosen.get("currencies", []) if c.get("code") == base), 2
    )
    service = raw.get("service", {})
    return OperatorSettings(
        operator_id=chosen["id"],
        key_id=key["key_id"],
        secret=key["secret"],
        base_currency=base,
        exponent=exponent,
        platform_url=(platform_url or service.get("base_url", "http://127.0.0.1:8000")).rstrip("/"),
        outbound_secrets={o["id"]: o["outbound_secret"] for o in operators},
    )


# --------------------------------------------------------------------------- signing


def signature(secret: str, timestamp: str, method: str, path: str, body: bytes) -> str:
    """Interface 5.1: hex HMAC-SHA256 over ``timestamp\\nMETHOD\\npath\\nsha256hex(body)``."""
    canonical = f"{timestamp}\n{method.upper()}\n{path}\n{hashlib.sha256(body).hexdigest()}"
    return hmac.new(secret.encode(), canonical.encode(), hashlib.sha256).hexdigest()


def signed_headers(
    key_id: str, secret: str, method: str, path: str, body: bytes = b"", now: int | None = None
) -> dict[str, str]:
    timestamp = str(int(time.time()) if now is None else now)
    return {
        "X-Key-Id": key_id,
        "X-Timestamp": timestamp,
        "X-Signature": signature(secret, timestamp, method, path, body),
        "Content-Type": "application/json",
    }


class PlatformRefused(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


async def call_platform(
    client: aiohttp.ClientSession,
    settings: OperatorSettings,
    method: str,
    path: str,
    payload: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One signed S2S call; the JSON answer, or PlatformRefused with the error code."""
    body = b"" if payload is None else json.dumps(payload, separators=(",", ":")).encode()
    headers = signed_headers(settings.key_id, settings.secret, method, path, body)
    async with client.request(
        method, settings.platform_url + path, data=body or None, headers=headers
    ) as response:
        try:
            answer = await response.json(content_type=None)
        except ValueError:
            answer = None
        if response.status != 200 or not isinstance(answer, dict):
            error = (answer or {}).get("error", {}) if isinstance(answer, dict) else {}
            raise PlatformRefused(
                response.status,
                error.get("code", f"HTTP_{response.status}"),
                error.get("message", "the platform answered without an error body"),
            )
        return answer


async def mint_launch(
    client: aiohttp.ClientSession,
    settings: OperatorSettings,
    player: str,
    choice: Choice | None = None,
) -> dict[str, Any]:
    """Interface 4.1: the signed launch of the chosen game (the Upgrader by default) for
    ``player``."""
    payload = (choice or Choice()).launch_body(player)
    return await call_platform(client, settings, "POST", LAUNCHES_PATH, payload)


async def offered_boxes(
    client: aiohttp.ClientSession, settings: OperatorSettings
) -> list[BoxOffer]:
    """The boxes of the operator's signed S2S catalogue, or [] (logged) when it cannot
    be read: the page then offers the Upgrader alone."""
    try:
        answer = await call_platform(client, settings, "GET", BOXES_PATH)
    except PlatformRefused as refused:
        log.warning("box catalogue refused: %s %s", refused.status, refused.code)
        return []
    except (aiohttp.ClientError, TimeoutError) as exc:
        log.warning("box catalogue: platform unreachable (%s)", type(exc).__name__)
        return []
    return box_offers(answer, settings.exponent)


def rebase(url: str, base: str | None) -> str:
    """``url`` with its scheme and host replaced by those of ``base`` (when given)."""
    if not base:
        return url
    target, origin = urlsplit(url), urlsplit(base)
    return urlunsplit((origin.scheme, origin.netloc, target.path, target.query, target.fragment))


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


# --------------------------------------------------------------------------- the site


def format_minor(minor: int, exponent: int) -> str:
    sign, digits = ("-" if minor < 0 else ""), str(abs(minor))
    if exponent <= 0:
        return sign + digits
    digits = digits.rjust(exponent + 1, "0")
    return f"{sign}{digits[:-exponent]}.{digits[-exponent:]}"


PAGE = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Demo Casino: {title}</title>
  <link rel="icon" href="data:,">
  <link rel="stylesheet" href="/demo/assets/site.css">
  <script src="/demo/assets/site.js" defer></script>
</head>
<body data-player="{player}" data-game-origins="{origins}">
  <header class="site">
    <div class="logo">Demo Casino</div>
    {games}
    <div class="account">
      <span class="who">Signed in as <b id="player">{player}</b></span>
      <span class="balance" title="Casino balance"><span class="balance-label">Casino balance</span>
        <b id="casino-balance">{balance}</b></span>
    </div>
  </header>
  <main>
    <iframe id="game" src="{launch}" title="{title} game"
            referrerpolicy="no-referrer" allow="clipboard-write"></iframe>
  </main>
  <footer>
    This page is the operator's site (the reference operator). The game in the frame is served
    by the platform: this site's backend minted a signed launch token and sent the frame there.
  </footer>
</body>
</html>
"""

# The page is exactly the viewport's height and the game's frame takes what the header
# leaves, so the game scrolls inside its frame and the page around it never scrolls: one
# scroll area. On a phone (narrow, or a short landscape screen) the header is one line and
# the frame reaches the screen's edges; a desktop keeps a frame of at least 480 px.
SITE_CSS = """* { box-sizing: border-box; }
html, body { margin: 0; height: 100%; }
body { display: flex; flex-direction: column; height: 100vh; height: 100dvh;
  background: #f4f1ea; color: #1c1917;
  font: 15px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; }
header.site { display: flex; flex-wrap: wrap; gap: 6px 16px; align-items: center;
  justify-content: space-between; padding: 8px 16px; background: #14532d; color: #fefce8; }
.logo { font-weight: 800; font-size: 18px; letter-spacing: 0.03em; }
.account { display: flex; flex-wrap: wrap; gap: 4px 16px; font-size: 14px; }
main { flex: 1; display: flex; min-height: 0; padding: 8px; }
iframe { display: block; flex: 1; width: 100%; height: 100%; min-height: 480px; border: 0;
  border-radius: 12px; background: #0f1020; box-shadow: 0 4px 24px rgba(0, 0, 0, 0.25); }
footer { padding: 6px 16px 10px; color: #57534e; font-size: 12px; }
.games { display: flex; align-items: center; gap: 6px; min-width: 0; }
.games-label { font-size: 13px; }
.games select { min-width: 0; max-width: 100%; padding: 4px 6px; border-radius: 6px;
  border: 1px solid #166534; background: #fefce8; color: #1c1917; font: inherit;
  font-size: 14px; }
.games button { padding: 4px 10px; border-radius: 6px; border: 0; background: #fefce8;
  color: #14532d; font: inherit; font-weight: 700; cursor: pointer; }
@media (max-width: 560px), (max-height: 560px) {
  header.site { flex-wrap: nowrap; padding: 6px 10px; gap: 8px; }
  .logo { font-size: 16px; white-space: nowrap; }
  .games { flex: 1 1 auto; }
  .games-label { display: none; }
  .games select { width: 100%; font-size: 13px; }
  .who, .balance-label { display: none; }
  .balance b { white-space: nowrap; }
  main { padding: 0; }
  iframe { min-height: 0; border-radius: 0; box-shadow: none; }
  footer { display: none; }
}
"""

SITE_JS = """(function () {
  "use strict";
  var body = document.body;
  var player = body.getAttribute("data-player");
  var origins = (body.getAttribute("data-game-origins") || "").split(" ");
  var out = document.getElementById("casino-balance");

  function refresh() {
    fetch("/demo/balance?player=" + encodeURIComponent(player), { cache: "no-store" })
      .then(function (r) { return r.ok ? r.json() : Promise.reject(r.status); })
      .then(function (b) { out.textContent = b.display; })
      .catch(function () { out.textContent = "unavailable"; });
  }

  // The game picker is a GET form to this page: choosing a game sends it at once.
  var choice = document.getElementById("game-choice");
  if (choice) {
    document.getElementById("game-go").hidden = true;
    choice.addEventListener("change", function () {
      choice.form.submit();
    });
  }

  window.addEventListener("message", function (event) {
    var data = event.data;
    if (origins.indexOf(event.origin) < 0 || !data || typeof data.type !== "string") {
      return;
    }
    if (data.type.indexOf("upgrader:") === 0) {
      refresh();
    }
  });
  refresh();
})();
"""


def _page_headers(frame_origins: list[str]) -> dict[str, str]:
    csp = "; ".join(
        [
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self'",
            "img-src 'self' data:",
            "frame-src 'self' " + " ".join(frame_origins),
            "base-uri 'none'",
            "frame-ancestors 'self'",
        ]
    )
    return {
        "Content-Security-Policy": csp,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
    }


def _problem(status: int, title: str, detail: str) -> web.Response:
    text = f"<!doctype html><meta charset=utf-8><title>{html.escape(title)}</title>"
    text += f"<h1>{html.escape(title)}</h1><p>{html.escape(detail)}</p>"
    return web.Response(
        status=status,
        text=text,
        content_type="text/html",
        headers={"Cache-Control": "no-store", "Content-Security-Policy": "default-src 'none'"},
    )


def make_launcher_app(
    settings: OperatorSettings,
    *,
    ledger: Ledger | None = None,
    faults: Faults | None = None,
    player: str = "player-1",
    game_url: str | None = None,
) -> web.Application:
    """The reference wallet app with the operator site's routes added."""
    ledger = ledger if ledger is not None else Ledger()
    app = make_app(ledger, faults or Faults(), dict(settings.outbound_secrets))
    frame_origins = sorted(
        {origin_of(settings.platform_url)} | ({origin_of(game_url)} if game_url else set())
    )

    def player_of(request: web.Request) -> str | None:
        value = request.query.get("player", player)
        return value if PLAYER_ID.match(value) else None

    async def page(request: web.Request) -> web.StreamResponse:
        who = player_of(request)
        if who is None:
            return _problem(400, "Bad player id", "a player id is 1 to 128 printable characters")
        choice = parse_choice(request.query.get("game"))
        if choice is None:
            return _problem(400, "Bad game", "a game is upgrader or box-N (N a box id)")
        boxes = await offered_boxes(request.app[CLIENT_KEY], settings)
        title = (
            "Upgrader"
            if choice.box_id is None
            else next((box.name for box in boxes if box.box_id == choice.box_id), "Boxes")
        )
        balance = ledger.balance(settings.operator_id, who, settings.base_currency)
        launch_query = {"player": who, **choice.query()}
        for name, pattern in (("currency", CURRENCY), ("locale", LOCALE)):
            value = request.query.get(name)
            if value and pattern.match(value):
                launch_query[name] = value
        text = PAGE.format(
            title=html.escape(title),
            games=choice_form(
                who,
                choice,
                boxes,
                {k: v for k, v in launch_query.items() if k not in ("player", "game")},
            ),
            player=html.escape(who),
            origins=html.escape(" ".join(frame_origins)),
            balance=html.escape(
                f"{format_minor(balance, settings.exponent)} {settings.base_currency}"
            ),
            launch=html.escape("/demo/launch?" + urlencode(launch_query)),
        )
        return web.Response(
            text=text, content_type="text/html", headers=_page_headers(frame_origins)
        )

    async def launch(request: web.Request) -> web.StreamResponse:
        who = player_of(request)
        if who is None:
            return _problem(400, "Bad player id", "a player id is 1 to 128 printable characters")
        choice = parse_choice(request.query.get("game"))
        if choice is None:
            return _problem(400, "Bad game", "a game is upgrader or box-N (N a box id)")
        try:
            answer = await mint_launch(request.app[CLIENT_KEY], settings, who, choice)
        except PlatformRefused as refused:
            log.warning("launch for %s refused: %s %s", who, refused.status, refused.code)
            return _problem(
                502,
                "The game could not be launched",
                f"The platform refused the launch: {refused.code} ({refused.message}).",
            )
        except (aiohttp.ClientError, TimeoutError) as exc:
            log.warning("launch for %s: platform unreachable (%s)", who, type(exc).__name__)
            return _problem(
                502,
                "The game could not be launched",
                f"The platform at {settings.platform_url} could not be reached.",
            )
        url = rebase(answer["launchUrl"], game_url)
        extra = {
            name: request.query[name]
            for name, pattern in (("currency", CURRENCY), ("locale", LOCALE))
            if pattern.match(request.query.get(name, ""))
        }
        if extra:
            url += ("&" if urlsplit(url).query else "?") + urlencode(extra)
        log.info("launched %s for %s/%s", choice.value, settings.operator_id, who)
        raise web.HTTPFound(
            url, headers={"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}
        )

    async def balance(request: web.Request) -> web.StreamResponse:
        who = player_of(request)
        if who is None:
            return web.json_response({"error": "bad player id"}, status=400)
        minor = ledger.balance(settings.operator_id, who, settings.base_currency)
        return web.json_response(
            {
                "player": who,
                "balanceMinor": minor,
                "currency": settings.base_currency,
                "display": f"{format_minor(minor, settings.exponent)} {settings.base_currency}",
            },
            headers={"Cache-Control": "no-store"},
        )

    async def status(request: web.Request) -> web.StreamResponse:
        try:
            health = await call_platform(request.app[CLIENT_KEY], settings, "GET", HEALTH_PATH)
        except PlatformRefused as refused:
            body = {"platform": "refused", "code": refused.code}
            return web.json_response(body, status=503)
        except (aiohttp.ClientError, TimeoutError):
            return web.json_response({"platform": "unreachable"}, status=503)
        return web.json_response(
            {"platform": health.get("status"), "operatorId": settings.operator_id}
        )

    assets = {
        "site.css": (SITE_CSS, "text/css"),
        "site.js": (SITE_JS, "text/javascript"),
    }

    async def asset(request: web.Request) -> web.StreamResponse:
        found = assets.get(request.match_info["name"])
        if found is None:
            raise web.HTTPNotFound()
        text, content_type = found
        return web.Response(
            text=text,
            content_type=content_type,
            headers={"X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache"},
        )

    async def client_context(app: web.Application) -> Any:
        timeout = aiohttp.ClientTimeout(total=10)
        async with aiohttp.ClientSession(timeout=timeout) as client:
            app[CLIENT_KEY] = client
            yield

    app.cleanup_ctx.append(client_context)
    app.router.add_get("/", page)
    app.router.add_get("/demo", page)
    app.router.add_get("/demo/launch", launch)
    app.router.add_get("/demo/balance", balance)
    app.router.add_get("/demo/status", status)
    app.router.add_get("/demo/assets/{name}", asset)
    return app


# --------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m ops.reference_operator.launcher",
        description="Reference operator site: wallet, webhooks and a page embedding the game.",
    )
    parser.add_argument(
        "--config",
        default="ops/demo/config.toml",
        help="the platform's TOML config: operator, key and secrets are read from it",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument(
        "--platform-url", default=None, help="where to call the platform (default: base_url)"
    )
    parser.add_argument(
        "--game-url",
        default=None,
        help="send players to this origin instead of the launchUrl's (a platform whose "
        "base_url is not where browsers reach it)",
    )
    parser.add_argument("--operator", default=None, help="operator id (default: the first)")
    parser.add_argument("--key-id", default=None, help="key id (default: the first not revoked)")
    parser.add_argument("--player", default="player-1", help="the demo player")
    parser.add_argument(
        "--fund-minor",
        type=int,
        default=100_000,
        help="fund the demo player with this many minor units of the base currency",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        settings = settings_from_config(
            args.config,
            operator_id=args.operator,
            key_id=args.key_id,
            platform_url=args.platform_url,
        )
    except SettingsError as exc:
        parser.error(str(exc))
    if not PLAYER_ID.match(args.player):
        parser.error("--player: 1 to 128 printable ASCII characters")
    ledger = Ledger()
    if args.fund_minor:
        ledger.fund(settings.operator_id, args.player, settings.base_currency, args.fund_minor)
    app = make_launcher_app(settings, ledger=ledger, player=args.player, game_url=args.game_url)
    log.info(
        "operator site on http://%s:%d/ for operator %s (player %s funded %s %s), platform %s",
        args.host,
        args.port,
        settings.operator_id,
        args.player,
        format_minor(args.fund_minor, settings.exponent),
        settings.base_currency,
        settings.platform_url,
    )
    web.run_app(app, host=args.host, port=args.port, print=None, access_log=None)


if __name__ == "__main__":
    main()

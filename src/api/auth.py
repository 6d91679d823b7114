"""Guards: the HMAC envelope for /api/s2s/*, bearer sessions for /api/play/*.

The S2S guard verifies over the raw body bytes as received (Litestar caches them, so the
handler then decodes the same bytes) and over the request path exactly as it came on the
wire (ASGI ``raw_path``: percent-encoding, doubled or trailing slashes are not normalised
away before verifying, the way the reference wallet verifies the platform's calls), and
leaves the operator id on ``request.state``. An envelope header sent twice is refused:
which copy counts would otherwise depend on the parser.

Each guard also does the rest of a request's admission, so that a route runs one guard
(Litestar copies the route handler for every guard it calls): the rate-limit hit of the
key or session, chained with the player's play on play routes (``opt=COUNTS_PLAYS``) in
one statement on the event loop (application/rate_limits.py), and the strict decoding of
the body, whose refusal is answered after the key's or session's verdict, as before.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from typing import Any

import msgspec
from litestar import Request
from litestar.connection import ASGIConnection
from litestar.handlers.base import BaseRouteHandler

from application.errors import PlatformError, validation_error
from application.platform import Platform
from application.rate_limits import Hit, NoConnection
from application.sessions import PlayerSession
from application.sql import StoreUnavailable
from application.store_calls import STORE_DEADLINE_SECONDS, in_store
from domain.signing import (
    HEADER_KEY_ID,
    HEADER_SIGNATURE,
    HEADER_TIMESTAMP,
    AuthFailure,
    verify_inbound,
)

log = logging.getLogger("upgrader.api")

_MESSAGES = {
    AuthFailure.MISSING_HEADERS: "X-Key-Id, X-Timestamp and X-Signature are required",
    AuthFailure.INVALID_SIGNATURE: "signature does not verify",
    AuthFailure.TIMESTAMP_SKEW: "X-Timestamp is more than 300 seconds from server time",
}


_ENVELOPE = {name.lower().encode() for name in (HEADER_KEY_ID, HEADER_TIMESTAMP, HEADER_SIGNATURE)}


def platform_of(connection: ASGIConnection) -> Platform:
    return connection.app.state.platform


async def s2s_guard(connection: ASGIConnection, route_handler: BaseRouteHandler) -> None:
    platform = platform_of(connection)
    request: Request = Request(connection.scope, connection.receive)
    body = await request.body()
    headers = connection.headers
    outcome = _repeated_envelope_header(connection) or verify_inbound(
        platform.directory.keyring,
        headers.get(HEADER_KEY_ID),
        headers.get(HEADER_TIMESTAMP),
        headers.get(HEADER_SIGNATURE),
        connection.scope["method"],
        _wire_path(connection),
        body,
        int(platform.clock.now()),
    )
    if isinstance(outcome, AuthFailure):
        raise PlatformError(outcome.value, 401, _MESSAGES[outcome])
    connection.state.operator_id = outcome.operator_id
    connection.state.key_id = outcome.key_id
    limits = platform.directory.operators[outcome.operator_id].config.limits
    key_hit = (f"key:{outcome.key_id}", limits.requests_per_second_per_key, "requests for this key")
    await _count_then_check_body(connection, route_handler, body, outcome.operator_id, key_hit)


async def _count_then_check_body(
    connection: ASGIConnection,
    route_handler: BaseRouteHandler,
    body: bytes,
    operator_id: str,
    first: Hit,
    player: str | None = None,
) -> None:
    """Count ``first`` (the key or the session) and, on a play route with a valid body,
    the player's play in the same chain (one statement); then refuse an invalid body.

    The order of the answers is the one of counting one after another: over the first
    limit is 429 and counts nothing more; an invalid body is 422 and counts no play.
    """
    value, problem = _strict_decode(route_handler, body)
    hits = [first]
    if problem is None and route_handler.opt.get(PLAYS_OPT):
        who = player if player is not None else value.player_external_id
        hits.append(plays_hit(platform_of(connection), operator_id, who))
    await count_hits(platform_of(connection), hits)
    if problem is not None:
        raise problem
    connection.state.body_checked = True


PLAYS_OPT = "counts_plays"  # route opt: the guard counts the player's play


def plays_hit(platform: Platform, operator_id: str, player: str) -> Hit:
    """Plays per player per second (operator setting), across every API process."""
    limit = platform.directory.operators[operator_id].config.limits.plays_per_second_per_player
    return (f"plays:{len(operator_id)}:{operator_id}:{player}", limit, "plays for this player")


async def count_hits(platform: Platform, hits: list[Hit]) -> None:
    """Count a chain of rate-limit hits: in process memory (application/process_limits.py,
    the default), or in the store (application/rate_limits.py) under the store deadline,
    on the event loop on PostgreSQL, else in one store call."""
    limiter = platform.limiter
    if limiter.in_memory:  # counted here, on the event loop: nothing to wait for
        limiter.hit_chain(hits)
        return
    hits = [hit for hit in hits if hit[1] > 0]
    if not hits:
        return
    if not limiter.on_loop:
        await in_store(limiter.hit_chain, hits)
        return
    try:
        async with asyncio.timeout(STORE_DEADLINE_SECONDS):  # anyio's fail_after: 3 % CPU
            await limiter.count(hits)
    except NoConnection as exc:  # nothing counted: count through the store's pool
        log.warning("rate-limit connection refused (%s); counting through the pool", exc)
        await in_store(limiter.hit_chain, hits)
        return
    except TimeoutError:
        reason = "a rate-limit count exceeded its deadline"
    except StoreUnavailable as exc:
        reason = str(exc)
    else:
        return
    log.warning("rate-limit count failed: %s", reason)
    await in_store(_unavailable, reason)  # the probe and breaker of every store call


def _unavailable(reason: str) -> None:
    raise StoreUnavailable(reason)


def _wire_path(connection: ASGIConnection) -> str:
    """The request path as sent (no query); the decoded ``path`` when the server gives none."""
    raw = connection.scope.get("raw_path")
    if raw is None:
        return connection.scope["path"]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return "\x00undecodable-path"  # verifies against no signature


def _repeated_envelope_header(connection: ASGIConnection) -> AuthFailure | None:
    """An envelope header sent more than once: INVALID_SIGNATURE."""
    seen = [name for name, _ in connection.scope["headers"] if name.lower() in _ENVELOPE]
    if len(seen) != len(set(seen)):
        return AuthFailure.INVALID_SIGNATURE
    return None


def bearer_token(connection: ASGIConnection) -> str | None:
    header = connection.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


async def player_guard(connection: ASGIConnection, route_handler: BaseRouteHandler) -> None:
    platform = platform_of(connection)
    token = bearer_token(connection)
    session: PlayerSession = await in_store(platform.sessions.authenticate, token)
    connection.state.session = session
    connection.state.operator_id = session.operator_id
    limits = platform.directory.operators[session.operator_id].config.limits
    bucket = f"session:{hashlib.sha256((token or '').encode()).hexdigest()[:32]}"
    session_hit = (bucket, limits.requests_per_second_per_session, "requests for this session")
    body = b""
    if route_handler.parsed_data_field is not None:
        try:
            body = await Request(connection.scope, connection.receive).body()
        except Exception:  # e.g. 413: the session's hit still counts, as it always did
            await count_hits(platform, [session_hit])
            raise
    await _count_then_check_body(
        connection,
        route_handler,
        body,
        session.operator_id,
        session_hit,
        player=session.player_external_id,
    )


_DECODERS: dict[Any, msgspec.json.Decoder] = {}


def _strict_decode(
    route_handler: BaseRouteHandler, body: bytes
) -> tuple[Any, PlatformError | None]:
    """The body decoded strictly against the route's declared struct (None without one),
    or the VALIDATION_ERROR to answer."""
    field = route_handler.parsed_data_field
    if field is None:
        return None, None
    decoder = _DECODERS.get(field.annotation)
    if decoder is None:
        decoder = _DECODERS[field.annotation] = msgspec.json.Decoder(field.annotation)
    try:
        return decoder.decode(body), None
    except msgspec.ValidationError as exc:
        message = str(exc)
        where = message.rsplit(" - at `$.", 1)
        text = f"{where[1].rstrip('`')}: {where[0]}" if len(where) == 2 else message
        return None, validation_error(text)
    except msgspec.DecodeError as exc:
        return None, validation_error(f"malformed request: {exc}")


async def strict_body(connection: ASGIConnection, route_handler: BaseRouteHandler) -> None:
    """Decode the JSON body strictly (after authentication, before Litestar's lax parse).

    Litestar converts bodies with ``strict=False``, which would take ``"1000"`` or
    ``1000.0`` for an integer; the interface wants such input refused as
    VALIDATION_ERROR, so the raw bytes are decoded here against the declared struct.
    The authenticating guards already do it (before counting a play); routes without
    one (session init) get it here.
    """
    if route_handler.parsed_data_field is None or getattr(connection.state, "body_checked", False):
        return
    body = await Request(connection.scope, connection.receive).body()
    _, problem = _strict_decode(route_handler, body)
    if problem is not None:
        raise problem

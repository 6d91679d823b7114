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
one statement on the event loop (application/access/rate_limits.py), and the strict reading of
the query and the body (``api.strict_input``), whose refusal is answered after the key's
or session's verdict, as before.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from typing import Any

from litestar.connection import ASGIConnection
from litestar.handlers.base import BaseRouteHandler

from api.strict_input import check_query, decode_body, hand_to_litestar, read_body
from application.access.rate_limits import Hit, NoConnection
from application.access.sessions import PlayerSession
from application.errors import PlatformError
from application.platform import Platform
from application.store.calls import STORE_DEADLINE_SECONDS, in_store
from application.store.sql import StoreUnavailable
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
    body = await read_body(connection)
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
        raise PlatformError(outcome.value, _MESSAGES[outcome])
    connection.state.operator_id = outcome.operator_id
    connection.state.key_id = outcome.key_id
    limits = platform.directory.operators[outcome.operator_id].config.limits
    key_hit = (f"key:{outcome.key_id}", limits.requests_per_second_per_key, "requests for this key")
    await _count_then_check_input(connection, route_handler, body, outcome.operator_id, key_hit)


async def _count_then_check_input(
    connection: ASGIConnection,
    route_handler: BaseRouteHandler,
    body: bytes,
    operator_id: str,
    first: Hit,
    player: str | None = None,
) -> None:
    """Count ``first`` (the key or the session) and, on a play route with a valid body,
    the player's play in the same chain (one statement); then refuse an invalid query or
    body.

    The order of the answers is the one of counting one after another: over the first
    limit is 429 and counts nothing more; invalid input is 422 and counts no play.
    """
    value, problem = _strict_input(connection, route_handler, body)
    hits = [first]
    if problem is None and route_handler.opt.get(PLAYS_OPT):
        who = player if player is not None else value.player_external_id
        hits.append(plays_hit(platform_of(connection), operator_id, who))
    await count_hits(platform_of(connection), hits)
    if problem is not None:
        raise problem
    connection.state.input_checked = True


PLAYS_OPT = "counts_plays"  # route opt: the guard counts the player's play


def plays_hit(platform: Platform, operator_id: str, player: str) -> Hit:
    """Plays per player per second (operator setting), across every API process."""
    limit = platform.directory.operators[operator_id].config.limits.plays_per_second_per_player
    return (f"plays:{len(operator_id)}:{operator_id}:{player}", limit, "plays for this player")


async def count_hits(platform: Platform, hits: list[Hit]) -> None:
    """Count a chain of rate-limit hits: in process memory (application/access/process_limits.py,
    the default), or in the store (application/access/rate_limits.py) under the store deadline,
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
            body = await read_body(connection)
        except Exception:  # e.g. 413: the session's hit still counts, as it always did
            await count_hits(platform, [session_hit])
            raise
    await _count_then_check_input(
        connection,
        route_handler,
        body,
        session.operator_id,
        session_hit,
        player=session.player_external_id,
    )


def _strict_input(
    connection: ASGIConnection, route_handler: BaseRouteHandler, body: bytes
) -> tuple[Any, PlatformError | None]:
    """The body decoded strictly (None when the route takes none, and then handed to
    Litestar), or the VALIDATION_ERROR of the query or the body."""
    problem = check_query(connection, route_handler)
    field = route_handler.parsed_data_field
    if problem is not None or field is None:
        return None, problem
    value, problem = decode_body(field.annotation, body)
    if problem is None:
        hand_to_litestar(connection, value)
    return value, problem


async def strict_body(connection: ASGIConnection, route_handler: BaseRouteHandler) -> None:
    """The strict reading of the query and body (``api.strict_input``) for the routes
    without an authenticating guard (session init); the guards above do it themselves
    (before counting a play)."""
    if getattr(connection.state, "input_checked", False):
        return
    body = await read_body(connection) if route_handler.parsed_data_field is not None else b""
    _, problem = _strict_input(connection, route_handler, body)
    if problem is not None:
        raise problem

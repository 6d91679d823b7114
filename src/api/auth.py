"""Guards: the HMAC envelope for /api/s2s/*, bearer sessions for /api/play/*.

The S2S guard verifies over the raw body bytes as received (Litestar caches them, so the
handler then decodes the same bytes) and over the request path exactly as it came on the
wire (ASGI ``raw_path``: percent-encoding, doubled or trailing slashes are not normalised
away before verifying, the way the reference wallet verifies the platform's calls), and
leaves the operator id on ``request.state``. An envelope header sent twice is refused:
which copy counts would otherwise depend on the parser.
"""

from __future__ import annotations

import hashlib

import msgspec
from litestar import Request
from litestar.connection import ASGIConnection
from litestar.handlers.base import BaseRouteHandler

from application.errors import PlatformError, validation_error
from application.platform import Platform
from application.sessions import PlayerSession
from application.store_calls import in_store
from domain.signing import (
    HEADER_KEY_ID,
    HEADER_SIGNATURE,
    HEADER_TIMESTAMP,
    AuthFailure,
    verify_inbound,
)

_MESSAGES = {
    AuthFailure.MISSING_HEADERS: "X-Key-Id, X-Timestamp and X-Signature are required",
    AuthFailure.INVALID_SIGNATURE: "signature does not verify",
    AuthFailure.TIMESTAMP_SKEW: "X-Timestamp is more than 300 seconds from server time",
}


_ENVELOPE = {name.lower().encode() for name in (HEADER_KEY_ID, HEADER_TIMESTAMP, HEADER_SIGNATURE)}


def platform_of(connection: ASGIConnection) -> Platform:
    return connection.app.state.platform


async def s2s_guard(connection: ASGIConnection, _: BaseRouteHandler) -> None:
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
    await in_store(
        platform.limiter.hit,
        f"key:{outcome.key_id}",
        limits.requests_per_second_per_key,
        "requests for this key",
    )


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


async def player_guard(connection: ASGIConnection, _: BaseRouteHandler) -> None:
    platform = platform_of(connection)
    token = bearer_token(connection)
    session: PlayerSession = await in_store(platform.sessions.authenticate, token)
    connection.state.session = session
    connection.state.operator_id = session.operator_id
    limits = platform.directory.operators[session.operator_id].config.limits
    bucket = f"session:{hashlib.sha256((token or '').encode()).hexdigest()[:32]}"
    await in_store(
        platform.limiter.hit,
        bucket,
        limits.requests_per_second_per_session,
        "requests for this session",
    )


async def strict_body(connection: ASGIConnection, route_handler: BaseRouteHandler) -> None:
    """Decode the JSON body strictly (after authentication, before Litestar's lax parse).

    Litestar converts bodies with ``strict=False``, which would take ``"1000"`` or
    ``1000.0`` for an integer; the interface wants such input refused as
    VALIDATION_ERROR, so the raw bytes are decoded here against the declared struct.
    """
    field = route_handler.parsed_data_field
    if field is None:
        return
    body = await Request(connection.scope, connection.receive).body()
    try:
        msgspec.json.decode(body, type=field.annotation)
    except msgspec.ValidationError as exc:
        message = str(exc)
        where = message.rsplit(" - at `$.", 1)
        text = f"{where[1].rstrip('`')}: {where[0]}" if len(where) == 2 else message
        raise validation_error(text) from None
    except msgspec.DecodeError as exc:
        raise validation_error(f"malformed request: {exc}") from None

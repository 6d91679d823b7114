"""The one place that turns exceptions into the interface's error body (interface 2.8).

Every answer that is not a success is ``{"error": {"code", "message"}}`` (plus the
documented extras, e.g. a voided round). Nothing reaches the client as a stack trace.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

import msgspec
from litestar import MediaType, Request, Response
from litestar.exceptions import (
    HTTPException,
    MethodNotAllowedException,
    NotFoundException,
    ValidationException,
)
from litestar.openapi import ResponseSpec
from msgspec import Meta

from api.strict_input import ClientVanished
from application.errors import PlatformError, WalletRefusal, outcome_unknown
from application.games.upgrader.views import RoundWire
from application.store.calls import StoreOutcomeUnknown
from application.store.sql import StoreUnavailable

log = logging.getLogger("upgrader.api")


class ErrorDetail(msgspec.Struct, frozen=True):
    """What was refused and why."""

    code: Annotated[
        str, Meta(description="the error code: what to do depends on it (see each status)")
    ]
    message: Annotated[str, Meta(description="words for a person; may change, do not parse")]


class ErrorBody(msgspec.Struct, frozen=True, rename="camel"):
    """The error body of every refusal; some codes add fields (see interface 2.8)."""

    error: ErrorDetail
    round: Annotated[
        RoundWire | None,
        Meta(description="on a refused debit only: the voided round {publicId, status}"),
    ] = None
    balance_after_minor: Annotated[
        int | None,
        Meta(
            description="on a wallet's refusal of a debit or a cash-back only: the balance "
            "the wallet reported (or read with wallet.balance), null when unknown"
        ),
    ] = None
    current_box_version_id: Annotated[
        int | None,
        Meta(
            description="on BOX_VERSION_CHANGED only: the box's version offered now, the one "
            "to open (null when the box has no active version)"
        ),
    ] = None


# What Litestar documents on every route; ``api.openapi_doc`` replaces it in the document by
# each operation's own statuses and codes (``api.openapi_guide``).
ERROR_RESPONSES = {
    status: ResponseSpec(data_container=ErrorBody, description=description)
    for status, description in {
        401: "signature or session refused (MISSING_HEADERS, INVALID_SIGNATURE, "
        "TIMESTAMP_SKEW, SESSION_INVALID, LAUNCH_TOKEN_INVALID)",
        403: "not allowed (GAME_DISABLED, UPGRADER_MODE_DISABLED, PLAYER_BLOCKED, ...)",
        404: "NOT_FOUND",
        409: "IDEMPOTENCY_CONFLICT or ACTION_IN_PROGRESS",
        413: "PAYLOAD_TOO_LARGE",
        429: "RATE_LIMITED (see Retry-After)",
        422: "VALIDATION_ERROR or a documented business refusal",
        503: "SERVICE_UNAVAILABLE, WALLET_UNAVAILABLE or OVERLOADED (see Retry-After): "
        "nothing happened (no money moved, "
        "nothing settled; an uncertain debit is rolled back), safe to treat as failed. "
        "OUTCOME_UNKNOWN: the action may have happened (e.g. the wallet accepted the debit "
        "and the round is still being recorded, or a cash-back credit is being confirmed "
        "with the wallet, its items held); retry with the same clientActionId and the same "
        "body to learn the outcome",
    }.items()
}


# The HTTP status of every error code (interface 2.8): the one place it is chosen. The
# application raises ``PlatformError(code, message)``; a wallet's own refusal code that is
# not one of these is echoed with the status its refusal carries (decisions §4: 422).
STATUS_OF_CODE: dict[str, int] = {
    "BAD_REQUEST": 400,
    "MISSING_HEADERS": 401,
    "INVALID_SIGNATURE": 401,
    "TIMESTAMP_SKEW": 401,
    "SESSION_INVALID": 401,
    "LAUNCH_TOKEN_INVALID": 401,
    "GAME_DISABLED": 403,
    "UPGRADER_MODE_DISABLED": 403,
    "CATALOG_ACCESS_DENIED": 403,
    "PLAYER_BLOCKED": 403,
    "NOT_FOUND": 404,
    "BOX_NOT_FOUND": 404,
    "METHOD_NOT_ALLOWED": 405,
    "IDEMPOTENCY_CONFLICT": 409,
    "ACTION_IN_PROGRESS": 409,
    "SHIPMENT_ALREADY_DISPATCHED": 409,
    "BOX_VERSION_CHANGED": 409,
    "PAYLOAD_TOO_LARGE": 413,
    "VALIDATION_ERROR": 422,
    "UNSUPPORTED_CURRENCY": 422,
    "LAUNCH_TARGET_INVALID": 422,
    "UPGRADER_CHANCE_INVALID": 422,
    "UPGRADER_WAGER_OUT_OF_RANGE": 422,
    "UPGRADER_PRIZE_OUT_OF_RANGE": 422,
    "UPGRADER_ITEM_NOT_OWNED": 422,
    "ITEM_NOT_AVAILABLE": 422,
    "ITEM_NOT_CASHABLE": 422,
    "ITEM_NOT_SHIPPABLE": 422,
    "BOX_UNAVAILABLE": 422,
    "INSUFFICIENT_FUNDS": 422,
    "WALLET_REFUSED": 422,
    "RATE_LIMITED": 429,
    "INTERNAL_ERROR": 500,
    "SERVICE_UNAVAILABLE": 503,
    "WALLET_UNAVAILABLE": 503,
    "OUTCOME_UNKNOWN": 503,
    "OVERLOADED": 503,
}


# A wallet's own refusal code, echoed (decisions §4): 403 for a blocked player, else 422,
# whatever the code (it may spell one of ours).
WALLET_REFUSAL_STATUS = {"PLAYER_BLOCKED": 403}


def status_of(exc: PlatformError) -> int:
    """The status of an application error: its code's (a wallet's refusal: the wallet
    rule's)."""
    if isinstance(exc, WalletRefusal):
        return WALLET_REFUSAL_STATUS.get(exc.code, 422)
    return STATUS_OF_CODE[exc.code]


def answer(code: str, message: str, **extra: Any) -> Response:
    """The error body of ``code`` with the status of the code."""
    return error_response(code, STATUS_OF_CODE[code], message, **extra)


def error_response(code: str, status: int, message: str, **extra: Any) -> Response:
    content = {"error": {"code": code, "message": message}, **extra}
    return Response(content=content, status_code=status, media_type=MediaType.JSON)


def platform_error(_: Request, exc: PlatformError) -> Response:
    extra = dict(exc.extra)
    retry_after = extra.pop("retry_after", None)
    response = error_response(exc.code, status_of(exc), exc.message, **extra)
    if retry_after is not None:
        response.headers["Retry-After"] = str(retry_after)
    return response


def _wire_name(request: Request, key: str) -> str:
    """The name the client sent (a query alias such as ``wagerMinor``), not the Python one."""
    try:
        parameter = request.route_handler.parsed_fn_signature.parameters.get(key)
    except Exception:  # no route (e.g. a 404 path): keep the key
        return key
    alias = getattr(getattr(parameter, "kwarg_definition", None), "name", None)
    return alias or key


def validation_failed(request: Request, exc: ValidationException) -> Response:
    problems = exc.extra if isinstance(exc.extra, list) else []
    parts = []
    for problem in problems:
        if isinstance(problem, dict):
            key = problem.get("key")
            message = str(problem.get("message"))
            parts.append(f"{_wire_name(request, key)}: {message}" if key else message)
    if not parts and exc.detail and exc.detail.startswith("Missing required"):
        parts.append(exc.detail.split(" for path ", 1)[0])
    return answer("VALIDATION_ERROR", "; ".join(parts) or "malformed request")


def http_error(_: Request, exc: HTTPException) -> Response:
    if isinstance(exc, NotFoundException):
        return answer("NOT_FOUND", "no such route or resource")
    if isinstance(exc, MethodNotAllowedException):
        response = answer("METHOD_NOT_ALLOWED", "method not allowed on this route")
        response.headers.update(exc.headers or {})  # Allow: the route's methods
        return response
    if exc.status_code == 413:
        return answer("PAYLOAD_TOO_LARGE", "request body too large")
    if exc.status_code == 400:
        return answer("VALIDATION_ERROR", f"malformed request: {exc.detail}")
    if exc.status_code >= 500:
        return internal_error(_, exc)
    return error_response("REQUEST_REFUSED", exc.status_code, str(exc.detail))


def client_vanished(request: Request, exc: ClientVanished) -> Response:
    """Not an error of ours: the client is gone, nothing ran, and nobody reads this."""
    log.debug("client vanished before sending its whole body (%s)", request.url.path)
    return answer("BAD_REQUEST", "the client closed the connection before sending the whole body")


def store_unavailable(_: Request, exc: StoreUnavailable) -> Response:
    cause = exc.__cause__
    log.warning("store unavailable: %s", type(cause).__name__ if cause else exc)
    return answer("SERVICE_UNAVAILABLE", "the platform's store is unavailable")


def store_outcome_unknown(_: Request, exc: StoreOutcomeUnknown) -> Response:
    """A write abandoned at its deadline after it began (the actions name theirs)."""
    log.warning("store call abandoned after it began: %s", exc)
    error = outcome_unknown("the action may have been recorded")
    return answer(error.code, error.message)


def internal_error(request: Request, exc: Exception) -> Response:
    log.error(
        "unhandled %s on %s %s", type(exc).__name__, request.method, request.url.path, exc_info=exc
    )
    return answer("INTERNAL_ERROR", "internal error")


def store_operational(request: Request, exc: Exception) -> Response:
    """eventsourcing's OperationalError/InterfaceError: the database went away."""
    return store_unavailable(request, StoreUnavailable(type(exc).__name__))


EXCEPTION_HANDLERS: dict[Any, Any] = {
    PlatformError: platform_error,
    ValidationException: validation_failed,
    HTTPException: http_error,
    StoreUnavailable: store_unavailable,
    StoreOutcomeUnknown: store_outcome_unknown,
    ClientVanished: client_vanished,
    Exception: internal_error,
}


def _register_eventsourcing() -> None:
    from eventsourcing.persistence import InterfaceError, OperationalError

    EXCEPTION_HANDLERS[OperationalError] = store_operational
    EXCEPTION_HANDLERS[InterfaceError] = store_operational


_register_eventsourcing()

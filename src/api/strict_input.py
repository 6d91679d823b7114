"""Strict input: the one place where a request's query string and body become values.

The guards (``api.auth``) call ``read_body``, ``check_query`` and ``decode_body`` for
every route, before Litestar's own (lenient) conversion runs, so that a request is read
exactly one way or refused with 422 ``VALIDATION_ERROR`` naming what is wrong:

- **Query integers** (``wagerMinor``, ``chanceBps``, ``limit``, each ``stakeItemIds``):
  the canonical decimal spelling only, ``0`` or ``-?[1-9][0-9]*`` in ASCII digits, within
  int64 (-2^63 .. 2^63-1). Leading zeros, ``-0``, a ``+`` sign, white space, exponents,
  decimal points, ``_`` separators, hex and non-ASCII digits are refused (Litestar alone
  would read ``1e3`` or ``1000.0`` as 1000).
- **Repeated query parameters**: a parameter that takes one value and is sent twice
  (``playerExternalId=a&playerExternalId=b``) is refused, instead of the last one winning;
  list parameters (``stakeItemIds``) repeat by design.
- **Bodies**: decoded by msgspec against the route's declared struct with ``strict``
  types, and refused when not UTF-8, nested deeper than ``MAX_DEPTH`` (checked before
  decoding, so no recursion limit is ever reached), or holding an object key twice at any
  depth (``{"wagerMinor":100000,"wagerMinor":1000}``: a signed body that two JSON parsers
  would read differently). The decoded struct is handed to Litestar as the request's JSON,
  so the handler gets exactly the value checked here (and the body is parsed once). Any
  ``Content-Type`` is read as JSON.
- **A vanished client** (it announced more body bytes than it sent, then closed the
  connection): ``ClientVanished``, answered quietly (nobody is listening, nothing ran).
- **A path with a NUL character** (``/api/s2s/rounds/%00``, ``/game/assets/a%00.js``):
  404 ``NOT_FOUND`` on every route (``refuse_nul_paths``, app middleware), since no
  resource is named so and neither PostgreSQL text nor a file name can hold one.

Cost on the play path: the depth and duplicate checks are a few ``bytes.count`` calls for
a flat body without escapes (every body the game app and a typical operator send); only
nested objects, escapes or a repeated field name take the exact (slower) scan.
"""

from __future__ import annotations

import json
import re
import types
from collections.abc import Sequence
from itertools import accumulate
from typing import Annotated, Any, Union, get_args, get_origin

import msgspec
from litestar import Request
from litestar.connection import ASGIConnection
from litestar.exceptions import InternalServerException, NotFoundException
from litestar.handlers.base import BaseRouteHandler
from litestar.types import ASGIApp, Receive, Scope, Send
from litestar.utils.scope.state import ScopeState

from application.errors import PlatformError, validation_error

MAX_DEPTH = 32  # objects and arrays nested in one body, the outermost counting 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_CANONICAL_INT = re.compile(r"0|-?[1-9][0-9]{0,18}")
_INT_MESSAGE = "not an integer (ASCII digits, an optional '-', no leading zeros, within int64)"


class ClientVanished(Exception):
    """The client closed the connection before sending the body it announced."""


async def read_body(connection: ASGIConnection) -> bytes:
    """The request's body (cached for the handler); ``ClientVanished`` if the client hung
    up before sending all of it (Litestar reports that as an internal error)."""
    vanished = False

    async def receive() -> Any:
        nonlocal vanished
        message = await connection.receive()
        vanished = message["type"] == "http.disconnect"
        return message

    try:
        return await Request(connection.scope, receive).body()
    except InternalServerException:
        if vanished:
            raise ClientVanished from None
        raise


def refuse_nul_paths(app: ASGIApp) -> ASGIApp:
    """Middleware: a request path with a NUL character is 404 ``NOT_FOUND``."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if "\x00" in scope["path"]:
            raise NotFoundException()
        await app(scope, receive, send)

    return middleware


# --- query parameters ---------------------------------------------------------------

_QUERY_RULES: dict[Any, dict[str, tuple[bool, bool]]] = {}


def _int_valued(annotation: Any) -> bool:
    """Whether a query parameter's values are integers (``int``, ``int | None``,
    ``list[int]``, ...)."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _int_valued(get_args(annotation)[0])
    if origin in (Union, types.UnionType, list, tuple, set, frozenset, Sequence):
        return any(_int_valued(arg) for arg in get_args(annotation) if arg is not type(None))
    return isinstance(annotation, type) and issubclass(annotation, int) and annotation is not bool


def _query_rules(
    connection: ASGIConnection, route_handler: BaseRouteHandler
) -> dict[str, tuple[bool, bool]]:
    """The route's query parameters by wire name: (repeatable, integer-valued), as
    Litestar itself reads the handler's signature; worked out once per handler."""
    key = route_handler.fn
    rules = _QUERY_RULES.get(key)
    if rules is None:
        path_parameters = dict.fromkeys(connection.scope.get("path_params") or {})
        model = route_handler.create_kwargs_model(path_parameters=path_parameters)  # type: ignore[arg-type]
        fields = route_handler.parsed_fn_signature.parameters
        rules = _QUERY_RULES[key] = {
            param.field_alias: (param.is_sequence, _int_valued(fields[param.field_name].annotation))
            for param in model.expected_query_params
        }
    return rules


def is_int64(text: str) -> bool:
    """``text`` is an integer in its canonical decimal spelling, within int64."""
    return _CANONICAL_INT.fullmatch(text) is not None and INT64_MIN <= int(text) <= INT64_MAX


def check_query(
    connection: ASGIConnection, route_handler: BaseRouteHandler
) -> PlatformError | None:
    """The VALIDATION_ERROR for a repeated single-valued or a non-canonical integer query
    parameter of this route, or None. Parameters the route does not take are ignored."""
    if not connection.scope.get("query_string"):
        return None
    rules = _query_rules(connection, route_handler)
    if not rules:
        return None
    seen: set[str] = set()
    for name, value in connection.query_params.multi_items():
        rule = rules.get(name)
        if rule is None:
            continue
        repeatable, integer = rule
        if not repeatable:
            if name in seen:
                return validation_error(f"{name}: given more than once (one value expected)")
            seen.add(name)
        if integer and not is_int64(value):
            return validation_error(f"{name}: {_INT_MESSAGE}")
    return None


# --- bodies ---------------------------------------------------------------------------

# JSON strings (escapes included), removed before counting brackets
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = [0] * 256
_STEP[ord("[")] = _STEP[ord("{")] = 1
_STEP[ord("]")] = _STEP[ord("}")] = -1


def _depth(body: bytes) -> int:
    """How deep objects and arrays nest in ``body`` (outside strings)."""
    brackets = _STRING.sub(b"", body).translate(None, _NOT_BRACKETS)
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


class _Duplicate(Exception):
    pass


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> None:
    if len(pairs) > 1 and len({key for key, _ in pairs}) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Duplicate(key)
            seen.add(key)


def _duplicate_key(body: bytes, objects: int, field_names: tuple[bytes, ...] | None) -> str | None:
    """An object key that occurs twice in one object of ``body`` (valid JSON with
    ``objects`` opening braces), or None.

    Fast path: a body with one object, no backslash (so every key is spelled literally),
    whose declared fields' quoted names each occur at most once, cannot repeat a key (an
    undeclared key was refused by the typed decode already). Anything else is scanned
    exactly with the standard library's parser (numbers are not converted)."""
    if objects == 1 and field_names is not None and b"\\" not in body:
        for name in field_names:
            if body.count(name) > 1:
                break
        else:
            return None
    try:
        json.loads(
            body.decode("utf-8"),
            object_pairs_hook=_refuse_duplicates,
            parse_int=len,
            parse_float=len,
        )
    except _Duplicate as duplicate:
        return str(duplicate.args[0])
    return None


_DECODERS: dict[Any, tuple[msgspec.json.Decoder, tuple[bytes, ...] | None]] = {}


def _decoder(annotation: Any) -> tuple[msgspec.json.Decoder, tuple[bytes, ...] | None]:
    found = _DECODERS.get(annotation)
    if found is None:
        names = None
        if isinstance(annotation, type) and issubclass(annotation, msgspec.Struct):
            names = tuple(
                f'"{field.encode_name}"'.encode() for field in msgspec.structs.fields(annotation)
            )
        found = _DECODERS[annotation] = (msgspec.json.Decoder(annotation), names)
    return found


def decode_body(annotation: Any, body: bytes) -> tuple[Any, PlatformError | None]:
    """``body`` decoded strictly as ``annotation``, or the VALIDATION_ERROR to answer."""
    decoder, field_names = _decoder(annotation)
    objects = body.count(b"{")
    # fewer brackets than MAX_DEPTH cannot nest deeper: no scan
    if objects + body.count(b"[") > MAX_DEPTH and _depth(body) > MAX_DEPTH:
        return None, validation_error(
            f"malformed request: JSON nested more than {MAX_DEPTH} levels deep"
        )
    try:
        value = decoder.decode(body)
    except msgspec.ValidationError as exc:
        message = str(exc)
        where = message.rsplit(" - at `$.", 1)
        text = f"{where[1].rstrip('`')}: {where[0]}" if len(where) == 2 else message
        return None, validation_error(text)
    except msgspec.DecodeError as exc:
        return None, validation_error(f"malformed request: {exc}")
    except UnicodeDecodeError:
        return None, validation_error("malformed request: the body is not valid UTF-8")
    duplicate = _duplicate_key(body, objects, field_names) if objects else None
    if duplicate is not None:
        return None, validation_error(
            f"{duplicate}: duplicate key (a key may occur once per object)"
        )
    return value, None


def hand_to_litestar(connection: ASGIConnection, value: Any) -> None:
    """Litestar reads the handler's ``data`` from the request's cached JSON and converts
    it to the declared type; a value of that type passes through unchanged. So the
    handler gets the struct decoded here, and the body is not parsed a second time."""
    ScopeState.from_scope(connection.scope).json = value

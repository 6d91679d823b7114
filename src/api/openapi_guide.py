"""The words of the platform API's OpenAPI document: what an integrator reads.

``api.openapi_doc`` applies them to the document Litestar derives from the routes:

- ``OPERATIONS``: each operation's summary, description and the error codes it can
  answer, keyed by method and path below ``/api/s2s`` or ``/api/play`` (one entry serves
  both APIs where they share the route; the S2S and player words differ only in who the
  player is). The codes the envelope adds (signature, session, rate limit, body size,
  store) are added by ``errors_of`` from the API the route is on;
- ``ERROR_CODES``: each code's meaning; its HTTP status is ``api.errors.STATUS_OF_CODE``'s
  (``status_of``; ``tests/integration/test_openapi_guide.py`` scans the sources so the
  statuses agree with the code that raises them). An operation's documented responses
  are the statuses of its codes, each listing its codes (not the same eight everywhere);
- ``PARAMETERS``: query and path parameters by wire name;
- the HMAC scheme, the overview (``info.description``) and the ``round_settled``
  webhook.

The examples come from real answers: ``api/openapi_examples.json``, written by
``tests/support/openapi_examples.py`` from a run of the real app against the reference
wallet (see there); ``tests/integration/test_openapi_guide.py`` proves the file current.
"""

from __future__ import annotations

from litestar.openapi.spec import SecurityScheme

from api.errors import STATUS_OF_CODE
from api.openapi_operations import (
    API_CODES,
    GUARDED_CODES,
    NO_ENVELOPE,
    OPERATIONS,
    PLAYER_CODES,
    S2S_CODES,
    WALLET_CODE,
)
from domain.signing import MAX_SKEW_SECONDS, sign

# --- error codes ---------------------------------------------------------------------------


ERROR_CODES: dict[str, str] = {
    "MISSING_HEADERS": "X-Key-Id, X-Timestamp or X-Signature is missing",
    "INVALID_SIGNATURE": (
        "the signature does not verify (unknown or revoked key, another secret, body or "
        "path; an envelope header sent twice)"
    ),
    "TIMESTAMP_SKEW": f"X-Timestamp is more than {MAX_SKEW_SECONDS} s from server time",
    "SESSION_INVALID": "the bearer session token is missing, expired or logged out",
    "LAUNCH_TOKEN_INVALID": "the launch token is invalid, expired or already used",
    "GAME_DISABLED": "the game is not enabled for this operator",
    "UPGRADER_MODE_DISABLED": "this Upgrader mode (balance or items) is switched off",
    "CATALOG_ACCESS_DENIED": "this key has no catalogue access",
    "PLAYER_BLOCKED": (
        "the wallet refused: the player is blocked (the operator's own code, passed on)"
    ),
    "NOT_FOUND": (
        "nothing at this path: no such round of this operator, or a path id that is not a number"
    ),
    "BOX_NOT_FOUND": "no such box or box version (a launch: no box offered under that id)",
    "BOX_VERSION_CHANGED": (
        "the box version is not the one offered now; the body's currentBoxVersionId names "
        "the version to open (null when the box has no active version)"
    ),
    "BOX_UNAVAILABLE": "an item of the box version is no longer active or fulfillable",
    "IDEMPOTENCY_CONFLICT": "this clientActionId was used with a different body",
    "ACTION_IN_PROGRESS": (
        "this clientActionId is being carried out by another request; retry shortly"
    ),
    "PAYLOAD_TOO_LARGE": "the body is larger than max_body_bytes (64 KiB by default)",
    "VALIDATION_ERROR": (
        "malformed input: a field or parameter missing, of the wrong type or out of its "
        "range, an unknown body field, a duplicate key; the message names the field"
    ),
    "LAUNCH_TARGET_INVALID": (
        'an Upgrader launch takes an empty target, a box launch {"boxId": <integer>}'
    ),
    "UNSUPPORTED_CURRENCY": "the currency is not configured for this operator",
    "UPGRADER_CHANCE_INVALID": "the chance is not one of config.chancePresetsBps",
    "UPGRADER_WAGER_OUT_OF_RANGE": (
        "the wager (or the stake's value) is outside minWagerMinor..maxWagerMinor"
    ),
    "UPGRADER_PRIZE_OUT_OF_RANGE": (
        "targetItemId is not an eligible prize in the band for this stake and chance"
    ),
    "UPGRADER_ITEM_NOT_OWNED": "a staked item is not this player's or no longer unresolved",
    "ITEM_NOT_AVAILABLE": "an item is not this player's or not unresolved",
    "ITEM_NOT_CASHABLE": "an item has no cash-back",
    "ITEM_NOT_SHIPPABLE": "an item cannot be shipped (not fulfillable)",
    "INSUFFICIENT_FUNDS": (
        "the wallet refused (its code, passed on); nothing moved. A refused debit's body "
        "also has the voided round and balanceAfterMinor"
    ),
    WALLET_CODE: (
        "the wallet refused with its own code (^[A-Z][A-Z0-9_]{0,63}$), passed on as the "
        "code; another spelling is shown as WALLET_REFUSED"
    ),
    "RATE_LIMITED": "too many requests for this key, session or player; see Retry-After",
    "OVERLOADED": (
        "nothing happened (answered before the request was read); send it again after Retry-After"
    ),
    "SERVICE_UNAVAILABLE": "nothing happened (the store is unavailable); safe to treat as failed",
    "WALLET_UNAVAILABLE": (
        "the wallet did not answer in time or out of contract; nothing is kept (an "
        "uncertain debit is rolled back); safe to treat as failed"
    ),
    "OUTCOME_UNKNOWN": (
        "the action may have happened: retry with the same clientActionId and body to "
        "learn the outcome; do not treat as failed"
    ),
}


def status_of(code: str) -> int:
    """The HTTP status a code is answered with: ``api.errors.STATUS_OF_CODE``, the one
    place statuses are chosen (a wallet's own code: 422, decisions 4)."""
    return STATUS_OF_CODE.get(code, 422)


STATUS_WORDS = {
    401: "Not authenticated",
    403: "Not allowed",
    404: "Not found",
    409: "Conflict with an earlier or concurrent copy of the action",
    413: "Body too large",
    422: "Refused: the request or the business rules",
    429: "Rate limited (see the Retry-After header)",
    503: "Not done now (see Retry-After where given); which 503 says whether anything happened",
}


def split_path(path: str) -> tuple[str, str]:
    """("s2s" | "play", the path below /api/s2s or /api/play)."""
    for api in ("s2s", "play"):
        prefix = f"/api/{api}"
        if path.startswith(prefix + "/"):
            return api, path[len(prefix) :]
    raise KeyError(path)


def operation_key(method: str, path: str) -> tuple[str, str]:
    api, below = split_path(path)
    return api, f"{method.upper()} {below}"


def errors_of(method: str, path: str, *, reads_body: bool) -> list[str]:
    """The error codes one operation can answer, in a stable order."""
    api, key = operation_key(method, path)
    codes = list(OPERATIONS[key]["codes"]) + API_CODES.get((api, key), [])
    if key not in NO_ENVELOPE:
        if api == "s2s":
            codes = S2S_CODES + codes
        else:
            codes = PLAYER_CODES + (["PAYLOAD_TOO_LARGE"] if reads_body else []) + codes
        codes += GUARDED_CODES
    elif "SERVICE_UNAVAILABLE" not in codes:
        codes.append("SERVICE_UNAVAILABLE")
    seen: list[str] = []
    for code in codes:
        if code not in seen:
            seen.append(code)
    return sorted(seen, key=status_of)


def responses_of(codes: list[str]) -> dict[int, str]:
    """Each status the codes answer, with the codes' meanings (Markdown)."""
    by_status: dict[int, list[str]] = {}
    for code in codes:
        by_status.setdefault(status_of(code), []).append(code)
    return {
        status: STATUS_WORDS[status]
        + ":\n\n"
        + "\n".join(
            f"- {code if code == WALLET_CODE else f'`{code}`'}: {ERROR_CODES[code]}"
            for code in listed
        )
        for status, listed in sorted(by_status.items())
    }


# --- parameters ----------------------------------------------------------------------------

PARAMETERS: dict[str, str] = {
    "playerExternalId": "the operator's own id of the player (printable ASCII, 1-128)",
    "wagerMinor": "the wager, in minor units of `currency`",
    "chanceBps": "the win chance in basis points, one of config.chancePresetsBps",
    "currency": "ISO 4217 code, one of the operator's currencies; default: its base currency",
    "locale": "the language of item names (BCP 47, e.g. en, de-AT); the best copy is served",
    "limit": "page size, 1-100 (default 20)",
    "cursor": "nextCursor of the previous page; absent for the first (newest) page",
    "state": "only items in this state",
    "stakeItemIds": "an inventoryItemId to stake; repeat the parameter for each item",
    "stakeItemIds[]": "the same as stakeItemIds (the bracketed spelling)",
    "public_id": "the round's publicId (r_ and 32 hex digits)",
    "box_id": "the box's id",
    "box_version_id": "the box version's id",
}

# --- signing -------------------------------------------------------------------------------

CANONICAL = (
    "`X-Signature` is the lowercase hex HMAC-SHA256, keyed with the key's secret, of four "
    "lines joined by `\\n`: the `X-Timestamp` value, the upper-case method, the request "
    "path exactly as sent on the wire (not decoded or normalised; no scheme, host or query "
    "string), and the lowercase hex SHA-256 of the exact body bytes (of the empty string "
    "when there is no body). The query string is not signed: use TLS."
)

_VECTOR = ("change-me-inbound", "1767225600", "POST", "/api/s2s/launches")
_VECTOR_BODY = '{"playerExternalId":"player-1","gameKey":"upgrader","target":{}}'
WORKED_EXAMPLE = (
    f"Worked example: secret `{_VECTOR[0]}`, X-Timestamp `{_VECTOR[1]}`, "
    f"`{_VECTOR[2]} {_VECTOR[3]}` with the body `{_VECTOR_BODY}` gives X-Signature "
    f"`{sign(*_VECTOR, _VECTOR_BODY.encode())}`."
)

SECURITY_SCHEMES: dict[str, SecurityScheme] = {
    "hmac": SecurityScheme(
        type="apiKey",
        name="X-Signature",
        security_scheme_in="header",
        description="The HMAC envelope of every `/api/s2s/*` call: three headers, all "
        "required (with `hmacKeyId` and `hmacTimestamp`). " + CANONICAL + " A missing header "
        f"is 401 `MISSING_HEADERS`, a wrong signature 401 `INVALID_SIGNATURE`, a timestamp "
        f"more than {MAX_SKEW_SECONDS} s from server time 401 `TIMESTAMP_SKEW`. " + WORKED_EXAMPLE,
    ),
    "hmacKeyId": SecurityScheme(
        type="apiKey",
        name="X-Key-Id",
        security_scheme_in="header",
        description="The id of the operator key whose secret signed the request (a key can "
        "be revoked; several keys may be live while you rotate).",
    ),
    "hmacTimestamp": SecurityScheme(
        type="apiKey",
        name="X-Timestamp",
        security_scheme_in="header",
        description="Unix seconds when the request was signed, as decimal digits; within "
        f"±{MAX_SKEW_SECONDS} s of the platform's clock.",
    ),
    "outboundHmac": SecurityScheme(
        type="apiKey",
        name="X-Signature",
        security_scheme_in="header",
        description="Calls from the platform to you (the round_settled webhook, wallet calls): "
        "the same canonical string keyed with your `outbound_secret`, with `X-Timestamp` and "
        "`X-Signature` and no `X-Key-Id`. Refuse (4xx) what does not verify or is more than "
        f"{MAX_SKEW_SECONDS} s off your clock.",
    ),
    "bearer": SecurityScheme(
        type="http",
        scheme="bearer",
        description="`Authorization: Bearer {sessionToken}`: the session token from "
        "`POST /api/play/session/init`. It expires after `idleExpirySeconds` without a "
        "request, and at logout.",
    ),
}
S2S_SECURITY = [{"hmac": [], "hmacKeyId": [], "hmacTimestamp": []}]

OVERVIEW = f"""\
The platform's API, for an operator's backend (`/api/s2s/*`, signed) and for the game
in the player's browser or your own frontend (`/api/play/*`, a bearer session).

**Signing (S2S).** Every `/api/s2s/*` request carries `X-Key-Id`, `X-Timestamp` (Unix
seconds, within ±{MAX_SKEW_SECONDS} s) and `X-Signature`. {CANONICAL} Calls from the
platform to you (wallet calls, the `round_settled` webhook below) are signed the same way
with your `outbound_secret`, without `X-Key-Id`. Worked example and code in Python,
curl, JavaScript and Java: the README's "Signing a request".

**Launching a player.** `POST /api/s2s/launches` gives a launch URL; the game page
redeems its token at `POST /api/play/session/init` for a session token, the bearer of
the player API. A backend can play for its players over S2S alone, without a session.

**Money.** Amounts are integers in minor units (suffix `Minor`), chances and fees in
basis points (suffix `Bps`, 10000 = 100 %). Your wallet holds the money: the platform
calls it (`wallet.debit`, `wallet.credit`, `wallet.rollback`, `wallet.balance`; the
wallet contract is `/api/schema/wallet-openapi.json`).

**Actions and retries.** Every state-changing call carries your `clientActionId`; a copy
(same id, same body) answers the original answer byte for byte and does nothing again,
so the one safe reaction to any doubt is to send the same request again. The same id
with another body is 409 `IDEMPOTENCY_CONFLICT`.

**Errors.** Every refusal is `{{"error": {{"code", "message"}}}}` with the status its code
has; each operation lists the codes it can answer. A 503 says whether anything happened:
`OUTCOME_UNKNOWN` may have (retry to learn), every other 503 did nothing. Malformed input
(unknown fields, duplicate keys, non-integer numbers, a body over 64 KiB) is refused, never
half-applied. 429 and `OVERLOADED` carry `Retry-After`.

The examples are real answers of this platform (recorded by a test against the
reference wallet)."""

# --- webhooks ------------------------------------------------------------------------------

WEBHOOK_DESCRIPTION = """\
Sent to the operator's `webhook_url` for every settled round (voided rounds send
nothing), in settle order per player, once or more: de-duplicate by `id`, which is
derived from the round and stays the same across retries, crashes and rebuilds.
`data.round` and `data.facts` equal the play answer's: an Upgrader round's `data` is
`{round, wonItem, stake, facts}` (`stake` null in balance mode), a box round's `{round,
wonItems, facts}` (`round.game` is "boxes"). Signed like wallet calls: `X-Timestamp`
and `X-Signature` (HMAC-SHA256 with your `outbound_secret` over
`timestamp\\nPOST\\n{path of webhook_url}\\n{sha256 hex of the body}`), no `X-Key-Id`.
Answer any 2xx once you have stored it; anything else (or no answer within the wallet
timeout) is retried, backing off 1 s doubling to 10 min, and dead-lettered after 72 h
(`upgrader outbox dead`, `upgrader outbox redeliver ID`)."""

WEBHOOK_HEADERS = [
    {
        "name": "X-Timestamp",
        "in": "header",
        "required": True,
        "description": f"Unix seconds when the delivery was signed; refuse more than "
        f"{MAX_SKEW_SECONDS} s of skew.",
        "schema": {"type": "string", "pattern": "^[0-9]{1,15}$"},
    },
    {
        "name": "X-Signature",
        "in": "header",
        "required": True,
        "description": "lowercase hex HMAC-SHA256 with your outbound_secret over "
        "`timestamp\\nPOST\\n{path of webhook_url}\\n{sha256 hex of the body}`",
        "schema": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
    },
]

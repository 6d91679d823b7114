"""The wallet contract as code: what the platform sends to an operator's wallet and what it
accepts back (interface 2.9, 5.1, 6; decisions §4).

These structs are the single source of ``docs/wallet-openapi.json`` (``openapi.py``
builds it from their JSON Schema) and of the answer checks ``upgrader wallet-check`` runs.
The platform's own reading of an answer is more forgiving in places (``client.py``: an
accepted answer without a balance is still accepted); the contract is what a wallet must
send, so this module is the stricter of the two.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

from application.wallet.client import INT64_MAX, MAX_ANSWER_BYTES

BALANCE = "wallet.balance"
DEBIT = "wallet.debit"
CREDIT = "wallet.credit"
ROLLBACK = "wallet.rollback"
REQUEST_TYPES = (BALANCE, DEBIT, CREDIT, ROLLBACK)
MONEY_TYPES = (DEBIT, CREDIT, ROLLBACK)

TIMEOUT_SECONDS = 10  # the default wallet_timeout_seconds
SESSION_INIT_BALANCE_SECONDS = 1  # how long a session start waits for wallet.balance
ERROR_CODE_PATTERN = r"^[A-Z][A-Z0-9_]{0,63}$"
ROUND_ID_PATTERN = r"^r_[0-9a-f]{32}$"

Amount = Annotated[
    int,
    Meta(
        ge=1,
        le=INT64_MAX,
        description="Amount in minor units of `currency` (cents for EUR): a JSON integer, "
        "never a float or a string.",
        examples=[500],
    ),
]
Balance = Annotated[
    int,
    Meta(
        ge=0,
        le=INT64_MAX,
        description="A balance in minor units: a JSON integer in 0 .. 2^63-1. A float "
        "(`100.0`), a string, a bool, a negative number or one beyond int64 is not a balance.",
        examples=[99500],
    ),
]
OperatorId = Annotated[
    str,
    Meta(
        min_length=1,
        description="Your operator id in the platform's configuration; it tells a wallet "
        "serving several operators which outbound secret signed the call.",
        examples=["demo"],
    ),
]
RequestedAt = Annotated[
    str,
    Meta(
        pattern=r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$",
        description="When the platform made this request: ISO 8601 UTC, milliseconds, `Z`. "
        "A re-sent request carries a new value: never use it for idempotency.",
        examples=["2026-01-01T00:00:00.000Z"],
    ),
]
PlayerId = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=128,
        description="Your own player id, as your backend named it in `POST /api/s2s/launches`.",
        examples=["player-1"],
    ),
]
Currency = Annotated[
    str,
    Meta(
        pattern=r"^[A-Z]{3}$",
        description="ISO 4217 code: your base currency or another one you configured.",
        examples=["EUR"],
    ),
]
RoundId = Annotated[
    str,
    Meta(
        pattern=ROUND_ID_PATTERN,
        description="The round's public id, as in the platform's answers and webhooks.",
        examples=["r_0f6cbbd31f3f5d6e9c3b2a1d4e5f6a7b"],
    ),
]
IdempotencyKey = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=128,
        description="The transaction's identity; the `Idempotency-Key` header carries the "
        "same value. Today `{publicId}:{attempt}` (a debit `r_<32 hex>:1`, a cash-back "
        "credit `c_<32 hex>:1`), a rollback `{debit key}:rollback`; treat it as opaque. "
        "The same key again is the same transaction: answer what you answered the first "
        "time and move nothing.",
        examples=["r_0f6cbbd31f3f5d6e9c3b2a1d4e5f6a7b:1"],
    ),
]
ErrorCode = Annotated[
    str,
    Meta(
        pattern=ERROR_CODE_PATTERN,
        description="Your own refusal code. `PLAYER_BLOCKED` answers the player 403; every "
        "other code (`INSUFFICIENT_FUNDS`, `LIMIT_REACHED`, ...) 422 with your code. A code "
        "not matching the pattern is not shown to the player: 422 `WALLET_REFUSED`.",
        examples=["INSUFFICIENT_FUNDS"],
    ),
]


class _Request(Struct, kw_only=True, tag_field="type"):
    operatorId: OperatorId
    requestedAt: RequestedAt
    playerExternalId: PlayerId
    currency: Currency


class BalanceRequest(_Request, tag=BALANCE):
    """`wallet.balance`: the player's balance in `currency`. Sent when a session starts (the
    platform waits 1 s for it, then starts the session without a balance), on
    `GET /api/play/balance`, and after a refusal that carried no balance. No
    `Idempotency-Key`: it moves nothing."""


class DebitRequest(_Request, tag=DEBIT):
    """`wallet.debit`: take the wager of a balance-mode round, sent before the roll. Accept
    it (money moved), refuse it (nothing moved; the round is voided) or, if you cannot
    tell, answer nothing: the platform then owes you a `wallet.rollback` of this key."""

    amountMinor: Amount
    idempotencyKey: IdempotencyKey
    roundId: RoundId
    reason: Annotated[
        Literal["upgrader.wager"], Meta(description="Why the money moves: a round's wager.")
    ]


class CreditRequest(_Request, tag=CREDIT):
    """`wallet.credit`: pay the player. A cash-back (`reason: cashout`) names the
    inventory items it pays for; a cancel credit (`reason: cancel`, decisions 11: a
    cancelled round's bet, key `{roundId}:cancel:{attempt}`) names the round. An
    unanswered credit is re-sent with the same key until you answer; a refused cancel
    credit is tried again only by a new cancel, with the next key."""

    amountMinor: Amount
    idempotencyKey: IdempotencyKey
    reason: Annotated[
        Literal["cashout", "cancel"],
        Meta(description="`cashout`: items cashed back; `cancel`: a cancelled round's stake."),
    ]
    inventoryItemIds: (
        Annotated[
            list[Annotated[int, Meta(ge=1, le=2**53)]],
            Meta(
                min_length=1,
                max_length=20,
                description="With `reason: cashout`: the inventory items paid for.",
                examples=[[4503599627370497]],
            ),
        ]
        | UnsetType
    ) = UNSET
    roundId: RoundId | UnsetType = UNSET


class RollbackRequest(_Request, tag=ROLLBACK):
    """`wallet.rollback`: undo the debit `originalIdempotencyKey`, sent when a debit's
    answer was lost (timeout, connection failure, 5xx, unreadable answer). Reverse that
    debit once; if you never saw it, accept, move nothing and remember the key: a debit
    with that key arriving later must be refused. Re-sent with the same key (backoff 1 s
    doubling to 60 s) until accepted; after 24 h a person is asked to look."""

    amountMinor: Amount
    idempotencyKey: IdempotencyKey
    originalIdempotencyKey: Annotated[
        str,
        Meta(
            min_length=1,
            max_length=128,
            description="The `idempotencyKey` of the debit to undo.",
            examples=["r_0f6cbbd31f3f5d6e9c3b2a1d4e5f6a7b:1"],
        ),
    ]
    roundId: RoundId


WalletRequest = BalanceRequest | DebitRequest | CreditRequest | RollbackRequest
REQUEST_STRUCTS: dict[str, type[Struct]] = {
    BALANCE: BalanceRequest,
    DEBIT: DebitRequest,
    CREDIT: CreditRequest,
    ROLLBACK: RollbackRequest,
}


class BalanceAnswer(Struct, kw_only=True):
    """The answer to `wallet.balance` (HTTP 200). Unknown fields are ignored."""

    balanceMinor: Balance
    currency: Annotated[str, Meta(description="The currency asked for.", examples=["EUR"])]


class AcceptedAnswer(Struct, kw_only=True):
    """A money move you accepted (HTTP 200): the money moved, or had already moved under
    this key. Unknown fields are ignored."""

    accepted: Annotated[Literal[True], Meta(description="`true`: the money moved.")]
    balanceAfterMinor: Balance
    providerTxnRef: Annotated[
        str,
        Meta(
            min_length=1,
            max_length=256,
            description="Your transaction id, kept with the round for reconciliation.",
            examples=["ref-wallet-00000042"],
        ),
    ]


class RefusedAnswer(Struct, kw_only=True):
    """A money move you refused (HTTP 200): nothing moved, and nothing will under this
    key. The round is voided with your code; it is not retried. Unknown fields are
    ignored."""

    accepted: Annotated[Literal[False], Meta(description="`false`: nothing moved.")]
    errorCode: ErrorCode
    balanceAfterMinor: Balance | UnsetType = UNSET
    balanceMinor: Balance | UnsetType = UNSET


class SignatureError(Struct, kw_only=True):
    """Why the call was refused."""

    code: Annotated[
        str,
        Meta(
            description="`MISSING_HEADERS`, `INVALID_SIGNATURE` or `TIMESTAMP_SKEW`",
            examples=["INVALID_SIGNATURE"],
        ),
    ]
    message: Annotated[str, Meta(description="Words for a person.")] | UnsetType = UNSET


class SignatureRefusal(Struct, kw_only=True):
    """What the reference wallet answers (HTTP 401) to a call whose signature does not
    verify. Any 4xx will do: the platform never sends one, so it only sees this when its
    outbound secret differs from yours."""

    error: SignatureError


ANSWER_STRUCTS: tuple[type[Struct], ...] = (
    BalanceAnswer,
    AcceptedAnswer,
    RefusedAnswer,
    SignatureRefusal,
)


def request_problem(body: bytes) -> str | None:
    """None when ``body`` is a wallet request of the contract, else what is wrong."""
    try:
        msgspec.json.decode(body, type=WalletRequest)
    except msgspec.ValidationError as exc:
        return str(exc)
    except msgspec.DecodeError:
        return "not JSON"
    return None


def answer_problem(request_type: str, raw: bytes) -> str | None:
    """None when ``raw`` is a contract answer (HTTP 2xx) to a ``request_type`` call, else
    what is wrong with it, in words an operator can act on."""
    if len(raw) > MAX_ANSWER_BYTES:
        return f"the answer is {len(raw)} bytes, more than {MAX_ANSWER_BYTES}"
    try:
        decoded: Any = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return "the answer is not JSON"
    if not isinstance(decoded, dict):
        return "the answer is not a JSON object"
    if request_type == BALANCE:
        answer_type: type[Struct] = BalanceAnswer
    elif type(decoded.get("accepted")) is not bool:
        return "`accepted` must be true or false"
    else:
        answer_type = AcceptedAnswer if decoded["accepted"] else RefusedAnswer
    try:
        msgspec.json.decode(raw, type=answer_type)
    except msgspec.ValidationError as exc:
        return str(exc).replace("`$.", "`")
    return None

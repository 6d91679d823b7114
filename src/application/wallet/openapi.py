"""``docs/wallet-openapi.json``: the wallet contract as an OpenAPI 3.1 document.

Built from the structs of ``contract.py`` (their JSON Schema, by msgspec) and the
words below, so the document cannot drift from what ``upgrader wallet-check`` enforces.
``tests/integration/test_wallet_contract.py`` checks that the checked-in file is what this
module builds, that it is valid OpenAPI, and that every request the platform sends and
every answer the reference wallet gives validate against it. Regenerate it with::

    .venv/bin/python -m application.wallet.openapi > docs/wallet-openapi.json
"""

from __future__ import annotations

import json
import sys
from typing import Any

import msgspec

from application.wallet.client import MAX_ANSWER_BYTES
from application.wallet.contract import (
    ANSWER_STRUCTS,
    BALANCE,
    CREDIT,
    DEBIT,
    ERROR_CODE_PATTERN,
    REQUEST_STRUCTS,
    ROLLBACK,
    SESSION_INIT_BALANCE_SECONDS,
    TIMEOUT_SECONDS,
    WalletRequest,
)
from domain.signing import MAX_SKEW_SECONDS

REF = "#/components/schemas/{name}"

OUTCOMES = "\n".join(
    f"| {answer} | {action} |"
    for answer, action in [
        ("your answer", "what the platform does"),
        ("---", "---"),
        (
            "200 `{accepted: true, balanceAfterMinor, providerTxnRef}`",
            "the money moved: a debit's round is played, a credit is done, a rollback is "
            "acknowledged",
        ),
        (
            "200 `{accepted: false, errorCode}`",
            "nothing moved: a debit's round is voided and the player gets your code "
            f"(`PLAYER_BLOCKED` 403, any other code 422; a code not matching "
            f"`{ERROR_CODE_PATTERN}` is shown as `WALLET_REFUSED`); a refused cash-back "
            "releases its items. Not retried",
        ),
        (
            f"no answer within {TIMEOUT_SECONDS} s (the operator's `wallet_timeout_seconds`), "
            "a connection failure, any non-2xx status, a body that is not the JSON above or "
            f"larger than {MAX_ANSWER_BYTES} bytes, a balance that is not an integer in "
            "0 .. 2^63-1",
            "**uncertain**: a debit answers the player 503 `WALLET_UNAVAILABLE` and is rolled "
            "back (`wallet.rollback`, re-sent with backoff 1 s doubling to 60 s until "
            "accepted, escalated to a person after 24 h); a credit is re-sent with the same "
            "key until answered; so is a rollback",
        ),
    ]
)

OVERVIEW = f"""\
The wallet is **your** endpoint: the platform calls it to read balances and to move money.
Every call is one `POST` of a JSON body to the `wallet_url` you configured, told apart by
its `type`: `wallet.balance`, `wallet.debit`, `wallet.credit`, `wallet.rollback` (the
`webhooks` below show each type with its own answer). Check your implementation with
`upgrader wallet-check URL` before going live.

**Signing.** Each call carries `X-Timestamp` (Unix seconds) and `X-Signature`: the
lowercase hex HMAC-SHA256, keyed with the operator's `outbound_secret`, of the four lines
`timestamp`, `POST`, the path part of `wallet_url`, and the lowercase hex SHA-256 of the
exact body bytes, joined by `\\n`. There is no `X-Key-Id` (one outbound secret per
operator; the body's `operatorId` names the operator). Refuse a call whose signature
does not verify or whose timestamp is more than {MAX_SKEW_SECONDS} s from your clock,
with a 4xx (401 recommended) and move nothing.

**Idempotency.** Money moves carry `Idempotency-Key`, equal to the body's
`idempotencyKey`: the key is the transaction. The same key again (a re-send after a lost
answer) must get the first answer and move nothing. A debit's key is
`{{publicId}}:{{attempt}}`: a player's retry after an uncertain debit is a new attempt with
the next key, never the same key with another amount.

**Rollbacks and tombstones.** A `wallet.rollback` names a debit by
`originalIdempotencyKey`. Reverse that debit once (a repeat moves nothing). A rollback of a
debit you never saw must be accepted, move nothing, and be remembered: when that debit
arrives later (it was still in flight), refuse it.

**Answers and what the platform does with them.**

{OUTCOMES}

A refusal's balance is optional (`balanceAfterMinor` or `balanceMinor`); without one the
platform reads it with `wallet.balance`. A session start waits
{SESSION_INIT_BALANCE_SECONDS} s for `wallet.balance` and then starts without a balance.
Unknown fields in an answer are ignored; so should you ignore request fields you do not
know (new optional ones may be added).
"""

SIGNING = (
    "HMAC-SHA256 (lowercase hex) keyed with the operator's `outbound_secret` over "
    "`{X-Timestamp}\\nPOST\\n{path of wallet_url}\\n{sha256 hex of the body}`. Sent with "
    f"`X-Timestamp` (Unix seconds; refuse more than {MAX_SKEW_SECONDS} s of skew). No "
    "`X-Key-Id`."
)

HEADERS: dict[str, dict[str, Any]] = {
    "X-Timestamp": {
        "name": "X-Timestamp",
        "in": "header",
        "required": True,
        "description": f"Unix seconds when the call was signed; within ±{MAX_SKEW_SECONDS} s "
        "of your clock, else refuse.",
        "schema": {"type": "string", "pattern": "^[0-9]{1,15}$", "examples": ["1767225600"]},
    },
    "X-Signature": {
        "name": "X-Signature",
        "in": "header",
        "required": True,
        "description": SIGNING,
        "schema": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
    },
    "Idempotency-Key": {
        "name": "Idempotency-Key",
        "in": "header",
        "required": False,
        "description": "On `wallet.debit`, `wallet.credit` and `wallet.rollback`: equal to the "
        "body's `idempotencyKey`. Absent on `wallet.balance`.",
        "schema": {"type": "string", "minLength": 1, "maxLength": 128},
    },
}

EXAMPLE_KEY = "r_0f6cbbd31f3f5d6e9c3b2a1d4e5f6a7b:1"
EXAMPLE_ROUND = "r_0f6cbbd31f3f5d6e9c3b2a1d4e5f6a7b"
_COMMON = {"operatorId": "demo", "requestedAt": "2026-01-01T00:00:00.000Z"}
REQUEST_EXAMPLES: dict[str, dict[str, Any]] = {
    BALANCE: {"type": BALANCE, **_COMMON, "playerExternalId": "player-1", "currency": "EUR"},
    DEBIT: {
        "type": DEBIT,
        **_COMMON,
        "playerExternalId": "player-1",
        "amountMinor": 500,
        "currency": "EUR",
        "idempotencyKey": EXAMPLE_KEY,
        "roundId": EXAMPLE_ROUND,
        "reason": "upgrader.wager",
    },
    CREDIT: {
        "type": CREDIT,
        **_COMMON,
        "playerExternalId": "player-1",
        "amountMinor": 1350,
        "currency": "EUR",
        "idempotencyKey": "c_5b1e0d9a7c3f4e2d8b6a9c0e1f2d3a4b:1",
        "reason": "cashout",
        "inventoryItemIds": [4503599627370497],
    },
    ROLLBACK: {
        "type": ROLLBACK,
        **_COMMON,
        "playerExternalId": "player-1",
        "amountMinor": 500,
        "currency": "EUR",
        "idempotencyKey": f"{EXAMPLE_KEY}:rollback",
        "originalIdempotencyKey": EXAMPLE_KEY,
        "roundId": EXAMPLE_ROUND,
    },
}
ANSWER_EXAMPLES: dict[str, dict[str, Any]] = {
    "balance": {"balanceMinor": 99500, "currency": "EUR"},
    "accepted": {
        "accepted": True,
        "balanceAfterMinor": 99500,
        "providerTxnRef": "ref-wallet-00000042",
    },
    "refused": {"accepted": False, "errorCode": "INSUFFICIENT_FUNDS"},
    "blocked": {"accepted": False, "errorCode": "PLAYER_BLOCKED"},
    "tombstone": {"accepted": False, "errorCode": "ROLLED_BACK"},
}

UNCERTAIN = (
    "Anything other than a 2xx with a contract body is **uncertain**: a debit is rolled "
    "back (and the player answered 503 `WALLET_UNAVAILABLE`), a credit or a rollback is "
    f"re-sent with the same key. So is no answer within {TIMEOUT_SECONDS} s or one larger "
    f"than {MAX_ANSWER_BYTES} bytes."
)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _schemas() -> dict[str, Any]:
    _, schemas = msgspec.json.schema_components([WalletRequest, *ANSWER_STRUCTS], ref_template=REF)
    for name, schema in schemas.items():
        if "description" in schema:
            schema["description"] = _one_line(schema["description"])
        if name in {s.__name__ for s in REQUEST_STRUCTS.values()}:
            schema["properties"]["type"]["description"] = "The kind of call."
    for schema in schemas.values():  # a field that is a reference: its target's words
        for spec in schema.get("properties", {}).values():
            if "$ref" in spec and "description" not in spec:
                spec["description"] = schemas[spec["$ref"].rsplit("/", 1)[1]]["description"]
    schemas["MoneyAnswer"] = {
        "description": "The answer to `wallet.debit`, `wallet.credit` and `wallet.rollback`: "
        "accepted or refused, told apart by `accepted`.",
        "oneOf": [{"$ref": REF.format(name=n)} for n in ("AcceptedAnswer", "RefusedAnswer")],
    }
    schemas["WalletRequest"] = {
        "description": "One wallet call; `type` says which.",
        "oneOf": [{"$ref": REF.format(name=s.__name__)} for s in REQUEST_STRUCTS.values()],
        "discriminator": {
            "propertyName": "type",
            "mapping": {t: REF.format(name=s.__name__) for t, s in REQUEST_STRUCTS.items()},
        },
    }
    schemas["WalletAnswer"] = {
        "description": "`BalanceAnswer` to `wallet.balance`, `MoneyAnswer` to the money moves.",
        "anyOf": [{"$ref": REF.format(name=n)} for n in ("BalanceAnswer", "MoneyAnswer")],
    }
    return dict(sorted(schemas.items()))


def _ref(name: str) -> dict[str, str]:
    return {"$ref": REF.format(name=name)}


def _examples(names: list[str]) -> dict[str, Any]:
    return {name: {"value": ANSWER_EXAMPLES[name]} for name in names}


def _refusal_response() -> dict[str, Any]:
    return {
        "description": "The signature or timestamp did not verify: refuse with a 4xx and move "
        "nothing (the platform then treats the call as uncertain, as for any non-2xx).",
        "content": {"application/json": {"schema": _ref("SignatureRefusal")}},
    }


def _operation(request_type: str | None) -> dict[str, Any]:
    """The POST to ``wallet_url`` for one request type, or (None) for all of them."""
    money = request_type in (DEBIT, CREDIT, ROLLBACK)
    headers = [_ref_param("X-Timestamp"), _ref_param("X-Signature")]
    if request_type is None or money:
        headers.append(_ref_param("Idempotency-Key"))
    if request_type is None:
        request_schema = _ref("WalletRequest")
        request_examples = {t: {"value": v} for t, v in REQUEST_EXAMPLES.items()}
        answer_schema = _ref("WalletAnswer")
        answer_examples = _examples(list(ANSWER_EXAMPLES))
        summary = "One wallet call (any type)"
        description = "All four types arrive here; the `webhooks` show each with its answer."
    else:
        struct = REQUEST_STRUCTS[request_type]
        request_schema = _ref(struct.__name__)
        request_examples = {request_type: {"value": REQUEST_EXAMPLES[request_type]}}
        answer_schema = _ref("MoneyAnswer" if money else "BalanceAnswer")
        names = {
            BALANCE: ["balance"],
            DEBIT: ["accepted", "refused", "blocked", "tombstone"],
            CREDIT: ["accepted"],
            ROLLBACK: ["accepted"],
        }[request_type]
        answer_examples = _examples(names)
        summary = request_type
        description = _one_line(struct.__doc__ or "")
    operation: dict[str, Any] = {
        "operationId": "walletCall" if request_type is None else request_type.replace(".", "_"),
        "summary": summary,
        "description": description,
        "security": [{"outboundHmac": []}],
        "parameters": headers,
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": request_schema, "examples": request_examples}
            },
        },
        "responses": {
            "200": {
                "description": "Your answer, as JSON of at most "
                f"{MAX_ANSWER_BYTES} bytes, within {TIMEOUT_SECONDS} s.",
                "content": {
                    "application/json": {"schema": answer_schema, "examples": answer_examples}
                },
            },
            "401": _refusal_response(),
            "default": {"description": UNCERTAIN},
        },
        "x-timeout-seconds": TIMEOUT_SECONDS,
        "x-max-answer-bytes": MAX_ANSWER_BYTES,
    }
    return operation


def _ref_param(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/parameters/{name}"}


def openapi_document() -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Upgrader wallet contract (the operator's endpoint)",
            "version": "1",
            "description": OVERVIEW,
        },
        "servers": [
            {
                "url": "http://127.0.0.1:8001",
                "description": "Your wallet_url's origin (here the reference operator of "
                "`make run`, whose wallet is at /wallet).",
            }
        ],
        "paths": {
            "/wallet": {
                "summary": "The path of your wallet_url (the reference wallet's is /wallet)",
                "post": _operation(None),
            }
        },
        "webhooks": {t: {"post": _operation(t)} for t in REQUEST_STRUCTS},
        "components": {
            "schemas": _schemas(),
            "parameters": HEADERS,
            "securitySchemes": {
                "outboundHmac": {
                    "type": "apiKey",
                    "in": "header",
                    "name": "X-Signature",
                    "description": SIGNING,
                }
            },
        },
    }


def document_text() -> str:
    """The document as it is checked in: JSON, two-space indent, a final newline."""
    return json.dumps(openapi_document(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    sys.stdout.write(document_text())

"""``docs/wallet-openapi.json``, the wallet contract: valid OpenAPI 3.1, every field
described, its examples valid, and true: every request the platform's ``WalletClient``
sent and every answer the reference wallet gave in a real run (plays, a refusal, a
cash-back, an uncertain debit and its rollback, and a ``wallet-check`` run) validate
against its schemas. Real store, real wallet on loopback, real HTTP."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate as validate_openapi

from application.clock import ManualClock
from application.wallet.openapi import document_text
from entrypoints.cli import main
from ops.reference_operator.wallet import ReceivedRequest, ThreadedWalletServer
from tests.support.items import PLAIN, ItemsEnv, launch_session, post, win_items
from tests.support.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
DOCUMENT = ROOT / "docs" / "wallet-openapi.json"
TYPE_SCHEMAS = {
    "wallet.balance": ("BalanceRequest", "BalanceAnswer"),
    "wallet.debit": ("DebitRequest", "MoneyAnswer"),
    "wallet.credit": ("CreditRequest", "MoneyAnswer"),
    "wallet.rollback": ("RollbackRequest", "MoneyAnswer"),
}


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return json.loads(DOCUMENT.read_text(encoding="utf-8"))


def schema_validator(document: dict[str, Any], name: str) -> Draft202012Validator:
    """A JSON Schema 2020-12 validator of one component, its references resolved."""
    root = {"$ref": f"#/components/schemas/{name}", "components": document["components"]}
    return Draft202012Validator(root)


def errors(document: dict[str, Any], name: str, value: Any) -> list[str]:
    return [e.message for e in schema_validator(document, name).iter_errors(value)]


def test_the_checked_in_document_is_the_one_the_code_builds() -> None:
    assert DOCUMENT.read_text(encoding="utf-8") == document_text(), (
        "regenerate: .venv/bin/python -m application.wallet.openapi > docs/wallet-openapi.json"
    )


def test_it_is_valid_openapi_3_1(document: dict[str, Any]) -> None:
    assert document["openapi"] == "3.1.0"
    validate_openapi(document)  # raises on any error
    assert set(document["webhooks"]) == set(TYPE_SCHEMAS)
    assert document["paths"]["/wallet"]["post"]["x-timeout-seconds"] == 10
    assert document["paths"]["/wallet"]["post"]["x-max-answer-bytes"] == 65536


def test_every_schema_field_and_header_is_described(document: dict[str, Any]) -> None:
    undescribed = []
    for name, schema in document["components"]["schemas"].items():
        if not schema.get("description"):
            undescribed.append(name)
        for field, spec in schema.get("properties", {}).items():
            if not spec.get("description"):
                undescribed.append(f"{name}.{field}")
    for name, parameter in document["components"]["parameters"].items():
        if not parameter.get("description"):
            undescribed.append(name)
    assert undescribed == []
    overview = document["info"]["description"]
    for words in ("X-Timestamp", "outbound_secret", "Idempotency-Key", "`PLAYER_BLOCKED` 403"):
        assert words in overview
    assert (
        "No `X-Key-Id`" in document["components"]["securitySchemes"]["outboundHmac"]["description"]
    )


def test_every_example_validates_against_its_schema(document: dict[str, Any]) -> None:
    operations = [document["paths"]["/wallet"]["post"]] + [
        item["post"] for item in document["webhooks"].values()
    ]
    checked = 0
    for operation in operations:
        media = operation["requestBody"]["content"]["application/json"]
        answer = operation["responses"]["200"]["content"]["application/json"]
        for part in (media, answer):
            name = part["schema"]["$ref"].rsplit("/", 1)[1]
            for example in part["examples"].values():
                assert errors(document, name, example["value"]) == [], (name, example)
                checked += 1
    for schema in document["components"]["schemas"].values():
        for spec in schema.get("properties", {}).values():
            for value in spec.get("examples", []):
                assert list(Draft202012Validator(spec).iter_errors(value)) == [], spec
                checked += 1
    assert checked >= 40


def test_out_of_contract_answers_do_not_validate(document: dict[str, Any]) -> None:
    # A float is out of contract too (the schemas' descriptions say so, wallet-check and
    # the platform refuse it), but JSON Schema counts 100.0 as an integer: not tested here.
    for bad in (100.5, -5, 2**70, "100", True):
        assert errors(document, "BalanceAnswer", {"balanceMinor": bad, "currency": "EUR"})
        accepted = {"accepted": True, "balanceAfterMinor": bad, "providerTxnRef": "t"}
        assert errors(document, "MoneyAnswer", accepted)
    assert errors(document, "MoneyAnswer", {"accepted": False, "errorCode": "not a code"})
    assert errors(document, "MoneyAnswer", {"accepted": False})
    assert errors(document, "MoneyAnswer", {"accepted": "yes", "errorCode": "NO"})
    # unknown fields are ignored, a refusal may carry a balance
    refusal = {"accepted": False, "errorCode": "LIMIT_REACHED", "balanceMinor": 5, "x": 1}
    assert errors(document, "MoneyAnswer", refusal) == []


# -- the real run ----------------------------------------------------------------------


@pytest.fixture
def env(database_url: str, clock: ManualClock, wallet: ThreadedWalletServer) -> Iterator[ItemsEnv]:
    items_env = ItemsEnv(database_url, clock, wallet)
    items_env.start()
    try:
        yield items_env
    finally:
        items_env.stop()


def assert_sent_in_contract(document: dict[str, Any], request: ReceivedRequest) -> None:
    """One request as the wallet received it: body, headers and (if any) the answer."""
    assert request.type is not None
    request_schema, answer_schema = TYPE_SCHEMAS[request.type]
    body = json.loads(request.raw)
    assert errors(document, request_schema, body) == [], body
    known = document["components"]["schemas"][request_schema]["properties"]
    assert set(body) <= set(known), set(body) - set(known)  # nothing undocumented sent
    headers = request.headers
    assert re.fullmatch(r"[0-9]{1,15}", headers["X-Timestamp"])
    assert re.fullmatch(r"[0-9a-f]{64}", headers["X-Signature"])
    if request.type == "wallet.balance":
        assert "Idempotency-Key" not in headers
    else:
        assert headers["Idempotency-Key"] == body["idempotencyKey"]
    if request.http_status == 200:
        assert errors(document, answer_schema, request.answer) == [], request.answer


def test_what_the_platform_sends_and_the_reference_wallet_answers_is_in_the_document(
    document: dict[str, Any], env: ItemsEnv, wallet: ThreadedWalletServer
) -> None:
    launch_session(env.api, "contract-1")  # a balance read
    (item,) = win_items(env, "contract-1", PLAIN, 1, "win")  # accepted debits
    cashout = {"playerExternalId": "contract-1", "clientActionId": "c-1"}
    response = post(env.api, "/api/s2s/cashout", {**cashout, "inventoryItemIds": [item]})
    assert response.status_code == 200, response.text  # an accepted credit
    (kept,) = win_items(env, "contract-1", PLAIN, 1, "again")
    public_id = next(
        i["roundPublicId"]
        for i in env.api.s2s(
            "GET", "/api/s2s/inventory", params={"playerExternalId": "contract-1"}
        ).json()["items"]
        if i["inventoryItemId"] == kept
    )
    cancel = {"playerExternalId": "contract-1", "clientActionId": "k-1"}
    cancelled = post(env.api, f"/api/s2s/rounds/{public_id}/cancel", cancel)
    assert cancelled.status_code == 200, cancelled.text  # a cancel credit (decisions 11)
    play = {"clientActionId": "p", "wagerMinor": 1000, "chanceBps": 5000, "targetItemId": 7}
    refused = post(env.api, "/api/s2s/upgrader/play", {"playerExternalId": "poor", **play})
    assert refused.json()["error"]["code"] == "INSUFFICIENT_FUNDS"  # a refusal + a read
    wallet.faults.configure(only_types={"wallet.debit"}, status_5xx=503, times=1)
    wallet.ledger.fund("op-a", "unlucky", "EUR", 1000)
    uncertain = post(env.api, "/api/s2s/upgrader/play", {"playerExternalId": "unlucky", **play})
    assert uncertain.status_code == 503
    wait_until(
        lambda: [r for r in wallet.ledger.requests_of("wallet.rollback") if r.http_status],
        timeout=15,
        what="the rollback of the uncertain debit",
    )
    requests = wallet.ledger.requests
    for request in requests:
        assert_sent_in_contract(document, request)
    seen = {(r.type, (r.answer or {}).get("accepted")) for r in requests}
    assert seen >= {
        ("wallet.balance", None),
        ("wallet.debit", True),
        ("wallet.debit", False),
        ("wallet.credit", True),
        ("wallet.rollback", True),
    }
    reasons = {r.body["reason"] for r in requests if r.type == "wallet.credit"}
    assert reasons == {"cashout", "cancel"}


def test_what_wallet_check_sends_and_the_reference_wallet_answers_is_in_the_document(
    document: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    with ThreadedWalletServer({"demo": "s3cret"}) as wallet:
        wallet.ledger.block("demo", "blocked")
        argv = ["wallet-check", wallet.url, "--secret", "s3cret", "--operator", "demo"]
        assert main([*argv, "--blocked-player", "blocked"]) == 0, capsys.readouterr().out
        for request in wallet.ledger.requests:
            assert_sent_in_contract(document, request)
        codes = {(r.answer or {}).get("errorCode") for r in wallet.ledger.requests}
        assert codes >= {"ROLLED_BACK", "INSUFFICIENT_FUNDS", "PLAYER_BLOCKED"}
        refusal = httpx.post(wallet.url, content=b"{}", timeout=5)
    assert refusal.status_code == 401
    assert errors(document, "SignatureRefusal", refusal.json()) == []

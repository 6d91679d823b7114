"""The platform API's OpenAPI document as an integration guide (issue 20, item 1).

The document served at ``/api/schema/openapi.json``: valid OpenAPI 3.1; no operation,
parameter, response, schema or field without words; per operation exactly the error
statuses of the codes it can answer (``api.openapi_guide``), not one list for all; the
HMAC envelope as three security schemes required together; a ``round_settled`` webhook;
and examples that are real answers: each validates against its schema (JSON Schema
2020-12, by ``jsonschema``, the validator ``openapi-spec-validator`` is built on), each
refusal's code is one its operation lists, and a fresh run of the recording scenario
(``tests/support/openapi_examples.py``: the real app over HTTP against the reference
wallet on loopback, on SQLite and PostgreSQL) answers the same shapes as the checked-in
examples, its every answer and webhook valid too.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate as validate_openapi

from api.errors import STATUS_OF_CODE
from api.openapi_doc import EXAMPLES
from api.openapi_guide import ERROR_CODES, OPERATIONS, WALLET_CODE, errors_of, status_of
from application.platform import Platform
from application.wallet.refusals import WALLET_CODE as WALLET_CODE_PATTERN
from application.wallet.refusals import wallet_refusal
from domain.signing import AuthFailure
from entrypoints.app import create_app
from entrypoints.openapi_document import document_text
from ops.reference_operator.wallet import ThreadedWalletServer
from tests.support.config import make_config
from tests.support.live import Api, LiveServer
from tests.support.openapi_examples import collect

SCHEMA_PATH = "/api/schema/openapi.json"
DOCUMENT = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"
SOURCES = Path(__file__).resolve().parents[2] / "src"
METHODS = {"get", "post", "put", "patch", "delete"}


@pytest.fixture(scope="module")
def document(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The document as served (one platform for the checks that read it)."""
    store = tmp_path_factory.mktemp("openapi") / "store.db"
    platform = Platform(make_config(f"sqlite:///{store}"))
    platform.record_configuration()
    try:
        with LiveServer(create_app(platform)) as live:
            response = httpx.get(live.url + SCHEMA_PATH, timeout=30)
    finally:
        platform.close()
    assert response.status_code == 200
    return response.json()


def test_docs_openapi_json_is_the_document_the_platform_serves(
    document: dict[str, Any],
) -> None:
    """Checked in for reading without a platform; built from the demo config, served here
    from the tests' one: the document depends on no configuration."""
    assert DOCUMENT.read_text(encoding="utf-8") == document_text(), (
        "regenerate: .venv/bin/python -m entrypoints.openapi_document > docs/openapi.json"
    )
    assert json.loads(DOCUMENT.read_text(encoding="utf-8")) == document


def operations(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        f"{method.upper()} {path}": operation
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in METHODS
    }


def errors(document: dict[str, Any], schema: dict[str, Any], value: Any) -> list[str]:
    """Why ``value`` does not validate against ``schema`` (its references resolved)."""
    validator = Draft202012Validator({**schema, "components": document["components"]})
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(value)]


def response_schema(operation: dict[str, Any], status: str) -> dict[str, Any]:
    return operation["responses"][status]["content"]["application/json"]["schema"]


def body_schema(operation: dict[str, Any]) -> dict[str, Any]:
    return operation["requestBody"]["content"]["application/json"]["schema"]


def code_is_listed(operation: dict[str, Any], status: str, body: dict[str, Any]) -> bool:
    """The refusal's code is one the operation lists under that status."""
    code = body["error"]["code"]
    listed = [c for c in operation["x-error-codes"] if str(status_of(c)) == status]
    if code in listed:
        return True
    wallet_statuses = {str(status_of(c)) for c in (WALLET_CODE, "PLAYER_BLOCKED")}
    return (
        "INSUFFICIENT_FUNDS" in operation["x-error-codes"]
        and status in wallet_statuses
        and WALLET_CODE_PATTERN.fullmatch(code) is not None
    )


def test_it_is_valid_openapi_3_1_with_the_round_settled_webhook(
    document: dict[str, Any],
) -> None:
    assert document["openapi"] == "3.1.0"
    validate_openapi(document)  # raises on any error
    assert list(document["webhooks"]) == ["round_settled"]
    hook = document["webhooks"]["round_settled"]["post"]
    assert body_schema(hook) == {  # an Upgrader round's body, or a box round's
        "oneOf": [
            {"$ref": "#/components/schemas/RoundSettledWebhook"},
            {"$ref": "#/components/schemas/BoxRoundSettledWebhook"},
        ]
    }
    assert [p["name"] for p in hook["parameters"]] == ["X-Timestamp", "X-Signature"]
    assert hook["security"] == [{"outboundHmac": []}]
    for words in ("de-duplicate by `id`", "outbound_secret", "72 h"):
        assert words in hook["description"]
    overview = document["info"]["description"]
    for words in ("X-Key-Id", "X-Timestamp", "X-Signature", "clientActionId", "OUTCOME_UNKNOWN"):
        assert words in overview


def test_no_operation_parameter_response_schema_or_field_lacks_words(
    document: dict[str, Any],
) -> None:
    undescribed: list[str] = []
    ops = operations(document)
    hook = document["webhooks"]["round_settled"]["post"]
    for label, operation in [*ops.items(), ("webhook round_settled", hook)]:
        for part in ("summary", "description", "operationId"):
            if not operation.get(part):
                undescribed.append(f"{label} {part}")
        for parameter in operation.get("parameters", []):
            if not parameter.get("description"):
                undescribed.append(f"{label} parameter {parameter['name']}")
        if "requestBody" in operation and not operation["requestBody"].get("description"):
            undescribed.append(f"{label} requestBody")
        for status, response in operation["responses"].items():
            if not response.get("description"):
                undescribed.append(f"{label} {status}")
    for name, schema in document["components"]["schemas"].items():
        if not schema.get("description"):
            undescribed.append(name)
        for field, spec in schema.get("properties", {}).items():
            if not spec.get("description"):
                undescribed.append(f"{name}.{field}")
    for name, scheme in document["components"]["securitySchemes"].items():
        if not scheme.get("description"):
            undescribed.append(f"security {name}")
    assert undescribed == []
    ids = Counter(operation["operationId"] for operation in ops.values())
    assert [i for i, n in ids.items() if n > 1] == []
    assert len(ops) == 31
    assert len({key.split(" ", 1)[0] + " " + key.split("/", 3)[3] for key in ops}) == len(
        OPERATIONS
    )


def test_each_operation_lists_the_statuses_of_the_codes_it_can_answer(
    document: dict[str, Any],
) -> None:
    ops = operations(document)
    statuses: dict[str, list[str]] = {}
    for label, operation in ops.items():
        method, path = label.split(" ", 1)
        codes = errors_of(method, path, reads_body="requestBody" in operation)
        assert operation["x-error-codes"] == [c for c in codes if c != WALLET_CODE], label
        expected = sorted({str(status_of(c)) for c in codes})
        statuses[label] = sorted(s for s in operation["responses"] if s != "200")
        assert statuses[label] == expected, label
        for status in expected:  # each status names its codes
            listed = [c for c in codes if str(status_of(c)) == status]
            described = operation["responses"][status]["description"]
            assert all((c if c == WALLET_CODE else f"`{c}`") in described for c in listed)
            assert response_schema(operation, status) == {"$ref": "#/components/schemas/ErrorBody"}
    assert statuses["GET /api/s2s/health"] == ["401", "413", "429", "503"]
    assert statuses["POST /api/play/session/init"] == ["401", "403", "404", "413", "422", "503"]
    assert statuses["POST /api/play/session/logout"] == ["401", "429", "503"]
    assert statuses["GET /api/play/fairness"] == ["401", "429", "503"]
    assert statuses["GET /api/s2s/rounds/{public_id}"] == ["401", "404", "413", "429", "503"]
    assert statuses["POST /api/s2s/upgrader/play"] == [
        *["401", "403", "409", "413", "422", "429", "503"]
    ]
    assert len({tuple(s) for s in statuses.values()}) == 13  # not the same list everywhere
    assert ops["POST /api/s2s/upgrader/play"]["x-error-codes"][:3] == [
        *["MISSING_HEADERS", "INVALID_SIGNATURE", "TIMESTAMP_SKEW"]
    ]
    assert "PLAYER_BLOCKED" in ops["POST /api/play/cashout"]["x-error-codes"]
    assert "CATALOG_ACCESS_DENIED" in ops["GET /api/s2s/boxes"]["x-error-codes"]
    assert "CATALOG_ACCESS_DENIED" not in ops["GET /api/play/boxes"]["x-error-codes"]
    used = {c for operation in ops.values() for c in operation["x-error-codes"]}
    assert set(ERROR_CODES) - used == {WALLET_CODE}  # no code documented for nothing
    for label in ("POST /api/s2s/upgrader/play", "GET /api/play/balance"):
        assert "Retry-After" in ops[label]["responses"]["503"]["headers"]


# every literal code the sources answer with: raised (``PlatformError("CODE", ...)``) or
# answered directly (``error_response``/``answer``); its status comes from the one table
RAISED = re.compile(r'(?:PlatformError|error_response|answer)\(\s*"([A-Z][A-Z_]+)"')
# ... and the domain's refusal codes (``domain/upgrader_checks.py``), raised as they are
REFUSAL_CODE = re.compile(r'^[A-Z_]+ = "([A-Z][A-Z_]+)"$', re.M)
# Codes the sources answer that no operation documents, on purpose: another method on the
# path (405), the internal error (500, never meant), the 400 to a client that hung up
# before its body (nobody reads it; malformed HTTP is answered by the server, README
# "Errors"), and a command-line refusal (``upgrader shipping shipped``), not an API answer.
UNDOCUMENTED = {"METHOD_NOT_ALLOWED", "INTERNAL_ERROR", "BAD_REQUEST"}
CLI_ONLY = {"SHIPMENT_ALREADY_DISPATCHED"}
# Litestar's own refusals that no other handler maps keep their status (api/errors.py)
OWN_STATUS = {"REQUEST_REFUSED"}


def test_the_statuses_are_those_the_code_answers_with() -> None:
    """Every code the sources raise or answer is in ``api.errors.STATUS_OF_CODE`` (the one
    place statuses are chosen, which the document reads) and is documented (but the few
    above); the envelope's codes are 401, the wallet's 403/422."""
    raised = {
        code
        for path in SOURCES.rglob("*.py")
        for code in RAISED.findall(path.read_text(encoding="utf-8"))
        if code not in OWN_STATUS
    } | set(REFUSAL_CODE.findall((SOURCES / "domain" / "upgrader_checks.py").read_text()))
    assert sorted(raised - set(STATUS_OF_CODE)) == []
    assert {c: status_of(c) for c in raised if c in ERROR_CODES} == {
        c: STATUS_OF_CODE[c] for c in raised if c in ERROR_CODES
    }
    assert raised - set(ERROR_CODES) == UNDOCUMENTED | CLI_ONLY
    assert {status_of(f.value) for f in AuthFailure} == {401}
    assert wallet_refusal("PLAYER_BLOCKED", "debit")[:2] == ("PLAYER_BLOCKED", 403)
    assert wallet_refusal("INSUFFICIENT_FUNDS", "debit")[:2] == ("INSUFFICIENT_FUNDS", 422)
    assert wallet_refusal("LIMIT_REACHED", "credit")[1] == status_of(WALLET_CODE) == 422
    assert status_of("PLAYER_BLOCKED") == 403 and status_of("INSUFFICIENT_FUNDS") == 422
    assert len(raised) == 30  # the scan finds every raise site


def test_the_hmac_envelope_is_three_headers_required_together(
    document: dict[str, Any],
) -> None:
    schemes = document["components"]["securitySchemes"]
    headers = {
        name: (scheme["in"], scheme["name"])
        for name, scheme in schemes.items()
        if scheme["type"] == "apiKey"
    }
    assert headers == {
        "hmac": ("header", "X-Signature"),
        "hmacKeyId": ("header", "X-Key-Id"),
        "hmacTimestamp": ("header", "X-Timestamp"),
        "outboundHmac": ("header", "X-Signature"),  # the webhook's (and wallet calls')
    }
    for words in ("HMAC-SHA256", "SHA-256 of the exact body bytes", "upper-case method", "\\n"):
        assert words in schemes["hmac"]["description"]
    # the pinned vector of tests/unit/test_signing.py and the README
    signature = "72e96aa1d3f3051ea7182b8625e9afa810af11bfb3ffc98e6451af0b29286254"
    assert f"gives X-Signature `{signature}`" in schemes["hmac"]["description"]
    for label, operation in operations(document).items():
        expected = (
            [{"hmac": [], "hmacKeyId": [], "hmacTimestamp": []}]
            if label.split(" ")[1].startswith("/api/s2s/")
            else [{"bearer": []}]
        )
        if label == "POST /api/play/session/init":
            assert "security" not in operation  # the launch token is the credential
        else:
            assert operation["security"] == expected, label


def test_every_example_is_valid_against_its_schema(document: dict[str, Any]) -> None:
    checked = Counter()
    problems: list[str] = []
    for label, operation in operations(document).items():
        assert operation["responses"]["200"]["content"]["application/json"].get("examples"), (
            f"{label} has no example answer"
        )
        for parameter in operation.get("parameters", []):
            if "example" in parameter:
                found = errors(document, parameter["schema"], parameter["example"])
                problems += [f"{label} {parameter['name']}: {e}" for e in found]
                checked["parameters"] += 1
        if "requestBody" in operation:
            media = operation["requestBody"]["content"]["application/json"]
            assert media.get("examples"), f"{label} has no example body"
            for name, example in media["examples"].items():
                found = errors(document, body_schema(operation), example["value"])
                problems += [f"{label} body {name}: {e}" for e in found]
                checked["bodies"] += 1
        for status, response in operation["responses"].items():
            for name, example in (
                response["content"]["application/json"].get("examples", {}).items()
            ):
                found = errors(document, response_schema(operation, status), example["value"])
                problems += [f"{label} {status} {name}: {e}" for e in found]
                if status != "200" and not code_is_listed(operation, status, example["value"]):
                    problems.append(f"{label} {status} {name}: code not listed")
                checked["answers"] += 1
    hook = document["webhooks"]["round_settled"]["post"]
    for name, example in hook["requestBody"]["content"]["application/json"]["examples"].items():
        problems += [
            f"webhook {name}: {e}" for e in errors(document, body_schema(hook), example["value"])
        ]
        checked["webhooks"] += 1
    assert problems == []
    assert checked == {"parameters": 33, "bodies": 25, "answers": 51, "webhooks": 2}


def shape(value: Any) -> Any:
    """The JSON types of ``value``, recursively; a list by the set of its items' shapes."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in sorted(value.items())}
    if isinstance(value, list):
        return sorted({json.dumps(shape(item), sort_keys=True) for item in value})
    if value is None:
        return None
    return {bool: "boolean", int: "integer", str: "string", float: "number"}[type(value)]


def same_shape(recorded: Any, fresh: Any, where: str) -> list[str]:
    """Where the shapes differ; a null on either side matches anything (a field that is
    null in one run and set in the other, e.g. ``wonItem`` of an items play's loss)."""
    if recorded is None or fresh is None:
        return []
    if isinstance(recorded, dict) and isinstance(fresh, dict):
        if set(recorded) != set(fresh):
            return [f"{where}: fields {sorted(set(recorded) ^ set(fresh))}"]
        return [
            p for key in recorded for p in same_shape(recorded[key], fresh[key], where + "." + key)
        ]
    if isinstance(recorded, list) and isinstance(fresh, list):
        if not recorded or not fresh:
            return [] if recorded == fresh else [f"{where}: empty in one run only"]

        # every item shape of one run matches some item shape of the other
        def matches(a: str, pool: list[str]) -> bool:
            return any(not same_shape(json.loads(a), json.loads(b), where) for b in pool)

        if all(matches(a, fresh) for a in recorded) and all(matches(b, recorded) for b in fresh):
            return []
        return [f"{where}: list items differ"]
    return [] if recorded == fresh else [f"{where}: {recorded} != {fresh}"]


def test_the_examples_are_real_answers_and_still_current(
    api: Api, wallet: ThreadedWalletServer
) -> None:
    """Play the recording scenario again (on each store) and compare with the checked-in
    examples: the same operations, statuses and names, the same shapes, and every answer,
    body and webhook of today valid against the document."""
    fresh = collect(api, wallet)
    document = api.http.get(SCHEMA_PATH).json()
    recorded = json.loads(EXAMPLES.read_text(encoding="utf-8"))
    assert set(fresh["operations"]) == set(recorded["operations"]) == set(operations(document))
    ops = operations(document)
    problems: list[str] = []
    for label, example in fresh["operations"].items():
        was = recorded["operations"][label]
        assert set(example) == set(was), label
        for status, named in example["responses"].items():
            assert set(named) == set(was["responses"][status]), (label, status)
            for name, answer in named.items():
                where = f"{label} {status} {name}"
                problems += same_shape(shape(was["responses"][status][name]), shape(answer), where)
                schema = response_schema(ops[label], status)
                problems += [f"{where}: {e}" for e in errors(document, schema, answer)]
                if status != "200" and not code_is_listed(ops[label], status, answer):
                    problems.append(f"{where}: code {answer['error']['code']} not listed")
        for name, body in example.get("requestBody", {}).items():
            problems += [
                f"{label} body {name}: {e}" for e in errors(document, body_schema(ops[label]), body)
            ]
    hook_schema = body_schema(document["webhooks"]["round_settled"]["post"])
    for name, body in fresh["webhooks"]["round_settled"].items():
        was = recorded["webhooks"]["round_settled"][name]
        problems += same_shape(shape(was), shape(body), f"webhook {name}")
        problems += [f"webhook {name}: {e}" for e in errors(document, hook_schema, body)]
    assert problems == []

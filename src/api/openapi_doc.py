"""Make the generated OpenAPI document say exactly what the API accepts and answers, in
words an integrator can work from.

Litestar derives the document from the handlers, but for msgspec structs it drops what
the wire structs enforce below the top level (``forbid_unknown_fields``, constraints on
list items and on dict keys and sizes), and it documents a 400 body of its own that this
API never sends (``api.errors`` answers every malformed request 422 ``VALIDATION_ERROR``
with the error body). So, once the app is built:

- every component that is one of the wire structs is replaced by msgspec's own JSON Schema
  of that struct (the same rules ``strict_body`` and the response encoder apply, with the
  structs' docstrings and field descriptions), with references rewritten into
  ``#/components/schemas/``; a field that is another struct gets that struct's words;
- each operation gets its summary, description and operationId from ``api.openapi_guide``,
  and as error responses exactly the statuses of the codes it can answer, each listing
  them (Litestar's 400 and the shared list of eight are dropped);
- parameters get their descriptions, and integer query parameters ``format: int64``
  (``api.strict_input`` refuses any other spelling or range);
- the examples (``api/openapi_examples.json``, real answers recorded by a test) go on the
  parameters, request bodies and responses;
- the HMAC envelope's three headers are security schemes required together, the overview
  is ``info.description``, and ``webhooks`` documents ``round_settled`` (its body is one
  of two: an Upgrader round's or a box round's).

The same document is checked in as ``docs/openapi.json`` (for reading without a running
platform); regenerate it with
``.venv/bin/python -m entrypoints.openapi_document > docs/openapi.json``.

The schemathesis run (``tests/integration/test_schemathesis.py``) checks the result
against the live API; ``tests/integration/test_openapi_guide.py`` checks the words and the
examples.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import msgspec
from litestar import Litestar
from litestar._openapi.plugin import OpenAPIPlugin

from api.errors import ErrorBody, ErrorDetail
from api.openapi_guide import (
    OVERVIEW,
    PARAMETERS,
    S2S_SECURITY,
    WEBHOOK_DESCRIPTION,
    WEBHOOK_HEADERS,
    errors_of,
    operation_key,
    responses_of,
)
from api.openapi_operations import OPERATIONS, PLAYER_WHO, S2S_WHO, WALLET_CODE
from application.games.boxes.answers import BoxesAnswer
from application.games.boxes.round_answers import BoxRoundSettledWebhook
from application.games.upgrader.views import RoundSettledWebhook
from application.wire import Wire

REF_TEMPLATE = "#/components/schemas/{name}"
DEMO_CONFIG = Path(__file__).resolve().parents[2] / "ops" / "demo" / "config.toml"
EXAMPLES = Path(__file__).resolve().parent / "openapi_examples.json"
RETRY_AFTER = {
    "Retry-After": {
        "description": "seconds to wait before sending the request again (on RATE_LIMITED "
        "and OVERLOADED)",
        "required": False,
        "schema": {"type": "string", "pattern": "^[0-9]+$"},
    }
}


def _wire_structs() -> list[type]:
    found: list[type] = []
    pending = [Wire]
    while pending:
        for sub in pending.pop().__subclasses__():
            if sub not in found:
                found.append(sub)
                pending.append(sub)
    return [*found, ErrorBody, ErrorDetail, BoxesAnswer]


@cache
def examples() -> dict[str, Any]:
    """The recorded examples; none when the file is missing or empty (while it is being
    regenerated: the generator builds the app too)."""
    try:
        return json.loads(EXAMPLES.read_text(encoding="utf-8") or "{}")
    except FileNotFoundError:
        return {}


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _exact_schemas() -> dict[str, Any]:
    _, exact = msgspec.json.schema_components(_wire_structs(), ref_template=REF_TEMPLATE)
    for schema in exact.values():
        if "description" in schema:
            schema["description"] = _one_line(schema["description"])
    for schema in exact.values():  # a field that is a reference: its target's words
        for spec in schema.get("properties", {}).values():
            if "$ref" in spec and "description" not in spec:
                spec["description"] = exact[spec["$ref"].rsplit("/", 1)[1]]["description"]
            for member in spec.get("anyOf", []):  # an optional field: its type's words
                if "description" in member and "description" not in spec:
                    spec["description"] = member["description"]
    return exact


def _operation_id(api: str, path: str) -> str:
    """``s2sUpgraderPlay``, ``playerRoundsByPublicId``: stable names for generated clients."""
    words = ["s2s" if api == "s2s" else "player"]
    for segment in path.strip("/").split("/")[2:]:
        name = segment.strip("{}")
        parts = [p for p in re.split(r"[-_]", name) if p]
        camel = "".join(p[:1].upper() + p[1:] for p in parts)
        words.append(("By" + camel) if segment.startswith("{") else camel)
    return "".join(words)


def _media_examples(named: dict[str, Any]) -> dict[str, Any]:
    return {name: {"value": value} for name, value in named.items()}


def _words_of(schema: dict[str, Any], schemas: dict[str, Any]) -> str:
    """A body's words: those of the component it refers to."""
    name = schema.get("$ref", "").rsplit("/", 1)[-1]
    return schemas.get(name, {}).get("description") or schema.get("description", "")


def _finish_operation(
    method: str,
    path: str,
    operation: dict[str, Any],
    twins: set[str],
    recorded: dict,
    schemas: dict[str, Any],
) -> None:
    api, key = operation_key(method, path)
    guide = OPERATIONS[key]
    operation["summary"] = guide["summary"]
    description = guide["description"]
    if key in twins:
        description += " " + (S2S_WHO if api == "s2s" else PLAYER_WHO)
    operation["description"] = description
    operation["operationId"] = _operation_id(api, path)
    if api == "s2s":
        operation["security"] = S2S_SECURITY
    example = recorded.get(f"{method.upper()} {path}", {})
    for parameter in operation.get("parameters", []):
        parameter["description"] = PARAMETERS[parameter["name"]]
        if parameter.get("in") == "query":
            _int64(parameter.get("schema", {}))
        if parameter["name"] in example.get("parameters", {}):
            parameter["example"] = example["parameters"][parameter["name"]]
    body = operation.get("requestBody")
    if body is not None:
        media = body["content"]["application/json"]
        body["description"] = _words_of(media["schema"], schemas)
        if "requestBody" in example:
            media["examples"] = _media_examples(example["requestBody"])
    responses = operation["responses"]
    recorded_responses = example.get("responses", {})
    ok = responses["200"]
    ok["description"] = "OK: " + _words_of(ok["content"]["application/json"]["schema"], schemas)
    if "200" in recorded_responses:
        ok["content"]["application/json"]["examples"] = _media_examples(recorded_responses["200"])
    for status in [s for s in responses if s != "200"]:
        del responses[status]
    codes = errors_of(method, path, reads_body=body is not None)
    operation["x-error-codes"] = [code for code in codes if code != WALLET_CODE]
    for status, words in responses_of(codes).items():
        media: dict[str, Any] = {"schema": {"$ref": REF_TEMPLATE.format(name="ErrorBody")}}
        if str(status) in recorded_responses:
            media["examples"] = _media_examples(recorded_responses[str(status)])
        response: dict[str, Any] = {"description": words, "content": {"application/json": media}}
        if status in (429, 503):
            response["headers"] = RETRY_AFTER
        responses[str(status)] = response


def _webhooks(recorded: dict[str, Any]) -> dict[str, Any]:
    # one body per kind of round (msgspec cannot put two untagged structs in a union)
    bodies = [RoundSettledWebhook.__name__, BoxRoundSettledWebhook.__name__]
    media: dict[str, Any] = {
        "schema": {"oneOf": [{"$ref": REF_TEMPLATE.format(name=name)} for name in bodies]}
    }
    if "round_settled" in recorded:
        media["examples"] = _media_examples(recorded["round_settled"])
    return {
        "round_settled": {
            "post": {
                "operationId": "roundSettledWebhook",
                "summary": "A round settled (to your webhook_url)",
                "description": WEBHOOK_DESCRIPTION,
                "security": [{"outboundHmac": []}],
                "parameters": WEBHOOK_HEADERS,
                "requestBody": {
                    "description": "the settled round, as the play answered it",
                    "required": True,
                    "content": {"application/json": media},
                },
                "responses": {
                    "2XX": {"description": "stored: the delivery is done"},
                    "default": {
                        "description": "not stored (any other status, or no answer in "
                        "time): delivered again later with the same id"
                    },
                },
            }
        }
    }


def finish_openapi(app: Litestar) -> dict[str, Any]:
    """Correct the app's (cached) OpenAPI document in place; returns it."""
    document = app.plugins.get(OpenAPIPlugin).provide_openapi_schema()
    components = document.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    exact = _exact_schemas()
    for name in list(schemas):
        if name in exact:
            schemas[name] = exact[name]
    for name in _referenced([RoundSettledWebhook.__name__, BoxRoundSettledWebhook.__name__], exact):
        schemas[name] = exact[name]
    document["info"]["description"] = OVERVIEW
    recorded = examples()
    paths = document.get("paths", {})
    keys = [operation_key(m, p) for p, item in paths.items() for m in item if m != "parameters"]
    twins = {key for api, key in keys if ("s2s", key) in keys and ("play", key) in keys}
    for path, path_item in paths.items():
        for method, operation in path_item.items():
            if isinstance(operation, dict):
                _finish_operation(
                    method, path, operation, twins, recorded.get("operations", {}), schemas
                )
    document["webhooks"] = _webhooks(recorded.get("webhooks", {}))
    components["schemas"] = dict(sorted(schemas.items()))
    return document


def _referenced(names: list[str], exact: dict[str, Any]) -> list[str]:
    """``names`` and every component they reach."""
    found: list[str] = []
    pending = list(names)
    while pending:
        name = pending.pop()
        if name in found:
            continue
        found.append(name)
        pending.extend(re.findall(r'"#/components/schemas/([^"]+)"', json.dumps(exact[name])))
    return found


def _int64(schema: dict[str, Any]) -> None:
    """``format: int64`` on every integer in a query parameter's schema."""
    if schema.get("type") == "integer":
        schema.setdefault("format", "int64")
    for inner in [schema.get("items"), *schema.get("oneOf", [])]:
        if isinstance(inner, dict):
            _int64(inner)

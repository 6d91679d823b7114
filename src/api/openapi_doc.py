"""Make the generated OpenAPI document say exactly what the API accepts and answers.

Litestar derives the document from the handlers, but for msgspec structs it drops what
the wire structs enforce below the top level (``forbid_unknown_fields``, constraints on
list items and on dict keys and sizes), and it documents a 400 body of its own that this
API never sends (``api.errors`` answers every malformed request 422 ``VALIDATION_ERROR``
with the error body). So, once the app is built:

- every component that is one of the wire structs is replaced by msgspec's own JSON Schema
  of that struct (the same rules ``strict_body`` and the response encoder apply), with
  references rewritten into ``#/components/schemas/``;
- the 400 responses are removed;
- integer query parameters say ``format: int64`` (``api.strict_input`` refuses any other
  spelling or range).

The schemathesis run (``tests/integration/test_schemathesis.py``) checks the result
against the live API.
"""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Litestar
from litestar._openapi.plugin import OpenAPIPlugin

from api.errors import ErrorBody, ErrorDetail
from api.schemas import Wire

REF_TEMPLATE = "#/components/schemas/{name}"


def _wire_structs() -> list[type]:
    found: list[type] = []
    pending = [Wire]
    while pending:
        for sub in pending.pop().__subclasses__():
            if sub not in found:
                found.append(sub)
                pending.append(sub)
    return [*found, ErrorBody, ErrorDetail]


def finish_openapi(app: Litestar) -> dict[str, Any]:
    """Correct the app's (cached) OpenAPI document in place; returns it."""
    document = app.plugins.get(OpenAPIPlugin).provide_openapi_schema()
    schemas = document.get("components", {}).get("schemas", {})
    _, exact = msgspec.json.schema_components(_wire_structs(), ref_template=REF_TEMPLATE)
    for name in list(schemas):
        if name in exact:
            schemas[name] = exact[name]
    for path_item in document.get("paths", {}).values():
        for operation in path_item.values():
            if isinstance(operation, dict):
                operation.get("responses", {}).pop("400", None)
                for parameter in operation.get("parameters", []):
                    if parameter.get("in") == "query":
                        _int64(parameter.get("schema", {}))
    return document


def _int64(schema: dict[str, Any]) -> None:
    """``format: int64`` on every integer in a query parameter's schema."""
    if schema.get("type") == "integer":
        schema.setdefault("format", "int64")
    for inner in [schema.get("items"), *schema.get("oneOf", [])]:
        if isinstance(inner, dict):
            _int64(inner)

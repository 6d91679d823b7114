"""The wire's struct base: what the application answers and the API accepts, typed once.

A ``Wire`` struct is camelCase on the wire, frozen, and refuses unknown fields when
decoded. Its docstring and each field's ``words(...)`` are what the OpenAPI document says
about it (``api.openapi_doc``; ``tests/integration/test_openapi_guide.py`` refuses a field
without words). The answer views the application renders (a game's ``views.py``,
``inventory/views.py``) and the API's request bodies (``api/schemas*.py``) are all Wire
structs: the routes return the application's views as they are, so each shape is written
once.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta


def words(text: str) -> Meta:
    """A field's description in the OpenAPI document."""
    return Meta(description=text)


CurrencyOut = Annotated[str, words("ISO 4217 code of the currency the amounts are in")]


class Wire(msgspec.Struct, rename="camel", frozen=True, forbid_unknown_fields=True, kw_only=True):
    pass

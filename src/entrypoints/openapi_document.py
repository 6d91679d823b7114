"""``python -m entrypoints.openapi_document > docs/openapi.json``: the platform's OpenAPI
document as it serves it, for the checked-in copy (``tests/integration/test_openapi_guide.py``
checks the copy is current)."""

from __future__ import annotations

import json
import sys
import tempfile

from litestar._openapi.plugin import OpenAPIPlugin

from api.openapi_doc import DEMO_CONFIG
from application.config.load import load_config
from application.platform import Platform
from entrypoints.app import create_app


def document_text() -> str:
    """The document as the platform serves it (it depends on no configuration: built here
    with the demo's over a throwaway store), as checked in: JSON, two-space indent."""
    with tempfile.TemporaryDirectory() as folder:
        env = {"UPGRADER_DATABASE_URL": f"sqlite:///{folder}/store.db"}
        platform = Platform(load_config(DEMO_CONFIG, env=env))
        try:
            app = create_app(platform, workers=False)
            document = app.plugins.get(OpenAPIPlugin).provide_openapi_schema()
        finally:
            platform.close()
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    sys.stdout.write(document_text())

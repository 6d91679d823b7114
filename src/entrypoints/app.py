"""The app over a platform: the Litestar app (``api/app.py``) served by a ``Runtime``."""

from __future__ import annotations

from collections.abc import Iterable

from litestar import Litestar

from api.app import build_app
from application.platform import Platform
from entrypoints.runtime import Runtime


def create_app(
    platform: Platform, *, workers: bool | Iterable[str] = True, extra_routes: list | None = None
) -> Litestar:
    """The app over ``platform``; ``workers`` runs projections and the reconciler in-process."""
    return build_app(platform, Runtime(platform, workers=workers), extra_routes=extra_routes)

"""Record the configured box versions as events; refuse a change to a recorded one.

Called by ``record_config`` at start-up (in the same save as the other configuration
events). A version not yet recorded is appended with its price, table and ``oddsHash``; a
recorded one must keep its price and table exactly (else start-up stops with one line
naming the key: "publish a new box_version_id"); a changed ``active`` flag, name or image
is appended as its own event. A recorded version must stay in the file: inactive versions
stay readable and verifiable forever (decisions §10), so dropping one stops start-up too
(``active = false`` retires it). An unchanged file appends nothing.
"""

from __future__ import annotations

from typing import Any

from eventsourcing.application import AggregateNotFoundError, Application

from application.config.boxes import box_version
from application.config.shape import BoxConfig, Config, ConfigError
from domain.box_history import BoxCatalogRecord

NEW_VERSION = "a recorded version never changes: publish a new box_version_id"


def recorded_box_catalog(app: Application) -> BoxCatalogRecord | None:
    try:
        return app.repository.get(BoxCatalogRecord.create_id())
    except AggregateNotFoundError:
        return None


def box_catalog_changes(app: Application, config: Config) -> list[BoxCatalogRecord]:
    """The box catalogue record with the events that bring it to ``config`` (or nothing).

    ConfigError (one line naming the key) when the file changes or drops a recorded version.
    """
    record = recorded_box_catalog(app)
    if record is None:
        if not config.catalog.boxes:
            return []
        record = BoxCatalogRecord()
    for index, box in enumerate(config.catalog.boxes):
        _sync_version(record, f"catalog.boxes[{index}]", box)
    listed = {(box.box_id, box.box_version_id) for box in config.catalog.boxes}
    missing = sorted(set(record.versions) - listed)
    if missing:
        box_id, box_version_id = missing[0]
        raise ConfigError(
            f"catalog.boxes: box {box_id} version {box_version_id} is recorded but no longer "
            "in the file; a recorded version stays listed (active = false retires it)"
        )
    return [record] if record.pending_events else []


def _sync_version(record: BoxCatalogRecord, at: str, box: BoxConfig) -> None:
    key = (box.box_id, box.box_version_id)
    table = [[entry.item_id, entry.weight] for entry in box.items]
    recorded: dict[str, Any] | None = record.versions.get(key)
    if recorded is None:
        record.record_version(
            box_id=box.box_id,
            box_version_id=box.box_version_id,
            price_minor=box.price_minor,
            items=table,
            odds_hash=box_version(box).odds_hash,
            name=dict(box.name),
            image_url=box.image_url,
            active=box.active,
        )
        return
    which = f"box {box.box_id} version {box.box_version_id}"
    if recorded["price_minor"] != box.price_minor:
        raise ConfigError(
            f"{at}.price_minor: {which} was recorded with price_minor "
            f"{recorded['price_minor']}, the file says {box.price_minor}; {NEW_VERSION}"
        )
    if recorded["items"] != table:
        raise ConfigError(
            f"{at}.items: {which} was recorded with another table (items, weights or their "
            f"order); {NEW_VERSION}"
        )
    if recorded["active"] != box.active:
        record.change_active(box.box_id, box.box_version_id, box.active)
    if (recorded["name"], recorded["image_url"]) != (box.name, box.image_url):
        record.change_display(box.box_id, box.box_version_id, dict(box.name), box.image_url)

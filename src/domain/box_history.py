"""What the box catalogue said, and when: every box version as configuration events.

One aggregate, ``BoxCatalogRecord``, holds every recorded version (decisions §10), so
start-up can tell a new version from a changed or a missing one. A version's price,
table and ``odds_hash`` are recorded once (``VersionRecorded``) and never change; its
``active`` flag (``VersionActiveChanged``) and its name and image
(``VersionDisplayChanged``) may. The topics are explicit: the class and module names may
change, the stored topics must not (events are a stored format: never rename a topic or
a field).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from domain.config_history import NAMESPACE

_T = "domain.box_history:BoxCatalogRecord"


class BoxCatalogRecord(Aggregate):
    TOPIC = _T

    class Created(Aggregate.Created):
        TOPIC = f"{_T}.Created"  # never stored: ``Started`` is this aggregate's first event

    @staticmethod
    def create_id() -> UUID:
        return uuid5(NAMESPACE, "box-catalog")

    @event("Started", topic=f"{_T}.Started")
    def __init__(self) -> None:
        self.versions: dict[tuple[int, int], dict[str, Any]] = {}

    @event("VersionRecorded", topic=f"{_T}.VersionRecorded")
    def record_version(
        self,
        box_id: int,
        box_version_id: int,
        price_minor: int,
        items: list[list[int]],
        odds_hash: str,
        name: dict[str, str],
        image_url: str | None,
        active: bool,
    ) -> None:
        self.versions[(box_id, box_version_id)] = {
            "price_minor": price_minor,
            "items": items,
            "odds_hash": odds_hash,
            "name": name,
            "image_url": image_url,
            "active": active,
        }

    @event("VersionActiveChanged", topic=f"{_T}.VersionActiveChanged")
    def change_active(self, box_id: int, box_version_id: int, active: bool) -> None:
        self.versions[(box_id, box_version_id)]["active"] = active

    @event("VersionDisplayChanged", topic=f"{_T}.VersionDisplayChanged")
    def change_display(
        self, box_id: int, box_version_id: int, name: dict[str, str], image_url: str | None
    ) -> None:
        entry = self.versions[(box_id, box_version_id)]
        entry["name"] = name
        entry["image_url"] = image_url

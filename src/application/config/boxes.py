"""The boxes part of the configuration file: its rules and its domain objects.

``[[catalog.boxes]]`` entries are box versions (decisions §10); each finding below is one
line naming the key, and start-up stops on the first. Beyond the decisions text: ids are
1..2^53-1 (exact in JavaScript), a price is at least 1 minor unit (``rtpBps`` divides by
it), a table lists an item at most once (each row of the catalogue answer is one item).
``[operators.boxes] max_boxes_per_round`` is 1..100.
"""

from __future__ import annotations

from collections.abc import Iterator

from application.config.shape import BoxConfig, Config, OperatorConfig
from domain.boxes import MAX_TOTAL_TICKETS, BoxCatalog, BoxEntry, BoxVersion

MAX_ID = 2**53 - 1
MAX_BOXES_PER_ROUND = 100


def boxes_settings_problems(where: str, operator: OperatorConfig) -> Iterator[str]:
    count = operator.boxes.max_boxes_per_round
    if not 1 <= count <= MAX_BOXES_PER_ROUND:
        yield f"{where}.boxes.max_boxes_per_round: must be within 1..{MAX_BOXES_PER_ROUND}"


def box_problems(config: Config) -> Iterator[str]:
    item_ids = {item.item_id for item in config.catalog.items}
    seen: set[tuple[int, int]] = set()
    for index, box in enumerate(config.catalog.boxes):
        at = f"catalog.boxes[{index}]"
        for name in ("box_id", "box_version_id"):
            if not 1 <= getattr(box, name) <= MAX_ID:
                yield f"{at}.{name}: must be within 1..{MAX_ID}"
        key = (box.box_id, box.box_version_id)
        if key in seen:
            yield f"{at}.box_version_id: box {key[0]} version {key[1]} is listed twice"
        seen.add(key)
        if not box.name or not all(box.name.values()):
            yield f"{at}.name: a box needs a non-empty name"
        if not 1 <= box.price_minor <= MAX_ID:
            yield f"{at}.price_minor: must be within 1..{MAX_ID}"
        yield from _table_problems(at, box, item_ids)


def _table_problems(at: str, box: BoxConfig, item_ids: set[int]) -> Iterator[str]:
    if not box.items:
        yield f"{at}.items: a box needs at least one item"
    listed: set[int] = set()
    for index, entry in enumerate(box.items):
        where = f"{at}.items[{index}]"
        if entry.item_id not in item_ids:
            yield f"{where}.item_id: no catalogue item {entry.item_id}"
        if entry.item_id in listed:
            yield f"{where}.item_id: item {entry.item_id} is listed twice in this box"
        listed.add(entry.item_id)
        if entry.weight < 1:
            yield f"{where}.weight: must be an integer >= 1"
    total = sum(entry.weight for entry in box.items)
    if total > MAX_TOTAL_TICKETS:
        yield (
            f"{at}.items: the weights add up to {total} tickets, above the "
            f"{MAX_TOTAL_TICKETS} (2^31) a box may hold"
        )


def box_version(box: BoxConfig) -> BoxVersion:
    """A validated ``[[catalog.boxes]]`` entry as the domain's box version."""
    return BoxVersion(
        box_id=box.box_id,
        box_version_id=box.box_version_id,
        price_minor=box.price_minor,
        entries=tuple(BoxEntry(entry.item_id, entry.weight) for entry in box.items),
        names=tuple(sorted(box.name.items())),
        image_url=box.image_url,
        active=box.active,
    )


def box_catalog(config: Config) -> BoxCatalog:
    return BoxCatalog(box_version(box) for box in config.catalog.boxes)

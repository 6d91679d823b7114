"""Box versions are recorded as configuration events and never change (decisions §10),
on SQLite and PostgreSQL: a changed price or table, or a dropped version, stops start-up
with one line naming the key, and nothing is appended."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from application.clock import ManualClock
from application.config.load import load_config
from application.config.shape import ConfigError
from application.platform import Platform
from domain.box_history import BoxCatalogRecord
from tests.support.config import make_config, raw_config
from tests.support.live import free_port

ROOT = Path(__file__).resolve().parents[2]
T = "domain.box_history:BoxCatalogRecord"
NEW_VERSION = "a recorded version never changes: publish a new box_version_id"


def _start(database_url: str, raw: dict | None = None) -> Platform:
    return Platform(make_config(database_url, raw), clock=ManualClock())


def _events(platform: Platform) -> int:
    return platform.events.recorder.max_notification_id() or 0


def _topics_after(platform: Platform, position: int) -> list[str]:
    return [n.topic for n in platform.events.recorder.select_notifications(position + 1, 100)]


def _recorded_once(database_url: str) -> int:
    first = _start(database_url)
    first.record_configuration()
    total = _events(first)
    first.close()
    return total


def test_versions_are_recorded_once_and_an_unchanged_restart_appends_nothing(
    database_url: str,
) -> None:
    first = _start(database_url)
    first.record_configuration()
    topics = _topics_after(first, 0)
    assert topics.count(f"{T}.Started") == 1 and topics.count(f"{T}.VersionRecorded") == 1
    total = _events(first)
    first.close()
    again = _start(database_url)
    assert again.record_configuration() == 0
    assert _events(again) == total
    record = again.events.repository.get(BoxCatalogRecord.create_id())
    assert record.versions == {
        (7, 3): {
            "price_minor": 300,
            "items": [[1, 1]],
            "odds_hash": again.directory.boxes.version(7, 3).odds_hash,
            "name": {"en": "Box"},
            "image_url": None,
            "active": True,
        }
    }
    again.close()


def test_active_name_image_and_new_versions_are_each_one_event(database_url: str) -> None:
    before = _recorded_once(database_url)
    raw = raw_config(database_url)
    box = raw["catalog"]["boxes"][0]
    box["active"] = False
    box["name"] = {"en": "Box", "de": "Kiste"}
    raw["catalog"]["boxes"].append({**box, "box_version_id": 4, "active": True, "price_minor": 350})
    second = _start(database_url, raw)
    assert second.record_configuration() == 3
    assert _topics_after(second, before) == [
        f"{T}.VersionActiveChanged",
        f"{T}.VersionDisplayChanged",
        f"{T}.VersionRecorded",
    ]
    record = second.events.repository.get(BoxCatalogRecord.create_id())
    assert record.versions[(7, 3)]["active"] is False
    assert record.versions[(7, 3)]["name"] == {"en": "Box", "de": "Kiste"}
    assert record.versions[(7, 4)]["price_minor"] == 350
    assert second.directory.boxes.offered(7).box_version_id == 4
    second.close()
    third = _start(database_url, raw)
    assert third.record_configuration() == 0
    third.close()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda box: box.__setitem__("price_minor", 301),
            "catalog.boxes[0].price_minor: box 7 version 3 was recorded with price_minor 300, "
            f"the file says 301; {NEW_VERSION}",
        ),
        (
            lambda box: box["items"][0].__setitem__("weight", 2),
            "catalog.boxes[0].items: box 7 version 3 was recorded with another table (items, "
            f"weights or their order); {NEW_VERSION}",
        ),
        (
            lambda box: box["items"].append({"item_id": 2, "weight": 1}),
            "catalog.boxes[0].items: box 7 version 3 was recorded with another table (items, "
            f"weights or their order); {NEW_VERSION}",
        ),
    ],
)
def test_a_changed_recorded_version_stops_start_up(database_url: str, change, message) -> None:
    before = _recorded_once(database_url)
    raw = raw_config(database_url)
    change(raw["catalog"]["boxes"][0])
    raw["catalog"]["items"][0]["value_minor"] = 777  # another change, not applied either
    second = _start(database_url, raw)
    with pytest.raises(ConfigError) as caught:
        second.record_configuration()
    assert str(caught.value) == message
    assert _events(second) == before
    second.close()


def test_reordering_a_table_is_a_change(database_url: str) -> None:
    raw = raw_config(database_url)
    raw["catalog"]["boxes"][0]["items"] = [{"item_id": 1, "weight": 1}, {"item_id": 2, "weight": 3}]
    first = _start(database_url, raw)
    first.record_configuration()
    first.close()
    raw["catalog"]["boxes"][0]["items"].reverse()
    second = _start(database_url, raw)
    with pytest.raises(ConfigError, match=r"^catalog\.boxes\[0\]\.items: box 7 version 3 was"):
        second.record_configuration()
    second.close()


def test_a_dropped_recorded_version_stops_start_up(database_url: str) -> None:
    before = _recorded_once(database_url)
    raw = raw_config(database_url)
    raw["catalog"]["boxes"] = []
    second = _start(database_url, raw)
    with pytest.raises(ConfigError) as caught:
        second.record_configuration()
    assert str(caught.value) == (
        "catalog.boxes: box 7 version 3 is recorded but no longer in the file; a recorded "
        "version stays listed (active = false retires it)"
    )
    assert _events(second) == before
    second.close()


def test_upgrader_serve_exits_2_naming_the_key(database_url: str, tmp_path: Path) -> None:
    """The real command: a changed table under a recorded version stops start-up."""
    text = (ROOT / "ops" / "demo" / "config.toml").read_text(encoding="utf-8")
    text = text.replace(
        'database_url = "sqlite:///var/upgrader.db"', f'database_url = "{database_url}"'
    )
    text = text.replace("port = 8000", f"port = {free_port()}")
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    platform = Platform(load_config(path, env={}))
    platform.record_configuration()
    box = load_config(path, env={}).catalog.boxes[0]
    platform.close()
    # the first item of the first box (box tables are the only such inline tables)
    entry = box.items[0]
    old = f"{{ item_id = {entry.item_id}, weight = {entry.weight} }}"
    new = f"{{ item_id = {entry.item_id}, weight = {entry.weight + 1} }}"
    changed = tmp_path / "changed.toml"
    changed.write_text(text.replace(old, new, 1), encoding="utf-8")
    assert load_config(changed, env={}).catalog.boxes[0].items[0].weight == entry.weight + 1
    result = subprocess.run(
        [sys.executable, "-m", "entrypoints.cli", "serve", "--config", str(changed)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"upgrader: configuration error: catalog.boxes[0].items: box {box.box_id} version "
        f"{box.box_version_id} was recorded with another table (items, weights or their "
        f"order); {NEW_VERSION}"
    ]

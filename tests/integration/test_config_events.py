"""Configuration changes are events: only differences are appended, on both stores."""

from __future__ import annotations

from application.clock import ManualClock
from application.platform import Platform
from domain.config_history import CatalogItemRecord, OperatorProfile
from tests.support.config import make_config, raw_config


def _count_events(platform: Platform) -> int:
    return platform.events.recorder.max_notification_id() or 0


def _start(database_url: str, raw: dict | None = None) -> Platform:
    return Platform(make_config(database_url, raw), clock=ManualClock())


def test_restart_with_the_same_file_appends_nothing(database_url: str) -> None:
    first = _start(database_url)
    appended = first.record_configuration()
    total = _count_events(first)
    first.close()
    # 3 operators: Registered + SettingsChanged + keys + rates; 13 items: Listed.
    assert appended == total
    again = _start(database_url)
    assert again.record_configuration() == 0
    assert _count_events(again) == total
    again.close()


def test_a_changed_rate_appends_exactly_one_event(database_url: str) -> None:
    first = _start(database_url)
    first.record_configuration()
    before = _count_events(first)
    first.close()
    raw = raw_config(database_url)
    raw["operators"][0]["currencies"][1]["rate"] = "1.2"
    second = _start(database_url, raw)
    assert second.record_configuration() == 1
    assert _count_events(second) == before + 1
    profile = second.events.repository.get(OperatorProfile.create_id("op-a"))
    assert profile.rates["USD"] == {"rate": "1.2", "exponent": 2}
    last = second.events.recorder.select_notifications(before + 1, 1)[0]
    assert last.topic.endswith("OperatorProfile.RateSet")
    second.close()


def test_price_key_and_setting_changes_are_each_recorded(database_url: str) -> None:
    first = _start(database_url)
    first.record_configuration()
    first.close()
    raw = raw_config(database_url)
    raw["catalog"]["items"][0]["value_minor"] = 777
    raw["operators"][0]["keys"][0]["revoked"] = True
    raw["operators"][1]["keys"].append({"key_id": "key-b2", "secret": "new-secret"})
    raw["operators"][0]["upgrader"]["house_edge_bps"] = 400
    second = _start(database_url, raw)
    assert second.record_configuration() == 4
    item = second.events.repository.get(CatalogItemRecord.create_id(1))
    assert item.item["value_minor"] == 777
    profile_a = second.events.repository.get(OperatorProfile.create_id("op-a"))
    assert profile_a.keys["key-a"]["revoked"] is True
    assert profile_a.settings["upgrader"]["house_edge_bps"] == 400
    profile_b = second.events.repository.get(OperatorProfile.create_id("op-b"))
    assert profile_b.keys["key-b2"]["revoked"] is False
    second.close()


def test_no_secret_is_stored_in_the_event_log(database_url: str) -> None:
    platform = _start(database_url)
    platform.record_configuration()
    stored = b"".join(n.state for n in platform.events.recorder.select_notifications(1, 1000))
    for secret in (b"secret-a-1", b"secret-a-0", b"outbound-a-secret", b"secret-b-1"):
        assert secret not in stored
    platform.close()

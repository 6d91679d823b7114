"""Old stores still load, project and audit: the golden event log (``tests/golden``).

``tests/golden/events.jsonl`` was recorded by ``python -m tests.golden.record`` before the
event classes got explicit topics (issue 16), and ``expected.json`` holds what that code
computed from it. On a fresh store of each kind the stored events are inserted exactly
as they were stored (through the store's recorder, not by replaying commands), then:

* the configuration in force at the end of the log is recorded again and appends
  nothing (what the settings, keys, rates and catalogue look like as events is frozen);
* every stored topic resolves to a class that still writes that same topic, and every
  aggregate replays from its events to the state the read models recorded;
* the projection worker's passes, and then ``upgrader projections rebuild`` of every
  projection, give every projection table row for row as recorded;
* ``upgrader audit`` passes with no violation and the recorded summary, the daily chain
  heads are the recorded ones, and ``--expect-head`` with them holds.

Never re-record these files to make this test pass: a NEW golden file is recorded beside
them when the format grows (see ``tests/golden/record.py``). The one edit made to
``expected.json`` since it was recorded: when rounds came to name their game (decisions
§10), ``"game":"upgrader"`` was inserted after ``"status":"settled"`` in each settled
round's view (``round_history.view``, the webhook bodies' ``data.round``), 66 lines, by a
script that changed nothing else; the events are as recorded.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from typing import Any
from uuid import UUID

import pytest
from eventsourcing.utils import get_topic, resolve_topic

from application.config.load import parse_config
from application.platform import Platform
from entrypoints.runtime import Runtime
from projections.runner import rebuild
from tests.golden.snapshot import (
    EXPECTED_FILE,
    audit_summary,
    chain_heads,
    dump_tables,
    load_log,
    run_cli,
    stored_events,
)


@pytest.fixture(scope="module")
def golden() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    return load_log(), json.loads(EXPECTED_FILE.read_text(encoding="utf-8"))


def _platform(database_url: str, expected: dict[str, Any]) -> Platform:
    raw = copy.deepcopy(expected["config"])
    raw["service"]["database_url"] = database_url
    return Platform(parse_config(raw, source="golden config", env={}))


def _assert_tables(platform: Platform, expected: dict[str, Any]) -> None:
    columns = {table: spec["columns"] for table, spec in expected["tables"].items()}
    tables = dump_tables(platform.db, columns)
    for table, spec in expected["tables"].items():
        assert tables[table] == spec, table


def _column(tables: dict[str, Any], table: str, key: str, value: str) -> dict[Any, Any]:
    """``{key: value}`` over a recorded table's rows."""
    columns = tables[table]["columns"]
    k, v = columns.index(key), columns.index(value)
    return {row[k]: row[v] for row in tables[table]["rows"]}


def _assert_aggregates(platform: Platform, rows: list[dict[str, Any]], tables: dict) -> None:
    """Each aggregate replays from the old events to its last version, and rounds and
    items to the status and state their recorded read models show."""
    last = {row["originator_id"]: row["originator_version"] for row in rows}
    rounds = _column(tables, "round_history", "round_id", "status")
    items = _column(tables, "inventory", "aggregate_id", "state")
    kinds: Counter[str] = Counter()
    for originator_id, version in last.items():
        aggregate = platform.events.repository.get(UUID(originator_id))
        assert aggregate.version == version, originator_id
        kind = type(aggregate).__name__
        kinds[kind] += 1
        if kind == "Round":
            assert aggregate.status == rounds[UUID(originator_id).hex], originator_id
        elif kind == "InventoryItem":
            assert aggregate.state == items[UUID(originator_id).hex], originator_id
    assert (kinds["Round"], kinds["InventoryItem"]) == (len(rounds), len(items))


def test_the_golden_log_loads_projects_and_audits(database_url: str, golden) -> None:
    rows, expected = golden
    assert len(rows) == expected["events"]
    assert dict(Counter(row["topic"] for row in rows)) == expected["topics"]
    for topic in expected["topics"]:
        assert get_topic(resolve_topic(topic)) == topic

    platform = _platform(database_url, expected)
    try:
        recorder = platform.events.recorder
        assert recorder.insert_events(stored_events(rows)) == [row["position"] for row in rows]
        assert platform.record_configuration() == 0
        assert recorder.max_notification_id() == len(rows)
        _assert_aggregates(platform, rows, expected["tables"])

        runtime = Runtime(platform, workers=())
        while runtime.runner.run_pass():  # the projection worker's passes
            pass
        _assert_tables(platform, expected)
        for name in runtime.runner.projections:  # ``upgrader projections rebuild``
            assert rebuild(runtime.runner, name) == len(rows)
        _assert_tables(platform, expected)
        assert chain_heads(platform.db) == expected["chainHeads"]
    finally:
        platform.close()

    code, audit = audit_summary(database_url)
    assert audit["violations"] == []
    assert code == 0
    assert {key: audit[key] for key in expected["audit"]} == expected["audit"]
    heads = expected["chainHeads"]
    assert len(heads) >= 2
    checks = [
        arg for h in heads.values() for arg in ("--expect-head", f"{h['position']}:{h['link']}")
    ]
    code, audit = audit_summary(database_url, *checks)
    assert (code, audit["chain"]["headsChecked"], audit["violations"]) == (0, len(heads), [])
    for day, head in heads.items():
        code, out = run_cli(
            "audit", "chain-head", "--day", day, "--database-url", database_url, "--json"
        )
        answer = json.loads(out.strip().splitlines()[-1])
        assert code == 0
        assert {k: answer[k] for k in ("position", "link", "events")} == head, day
        assert answer["stored"] == head and answer["matchesStored"] is True, day

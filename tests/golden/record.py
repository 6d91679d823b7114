"""Record a golden event log: ``python -m tests.golden.record [--scenario S] [--out DIR]``
(issue 16).

The stored events are a format that every later version must still load, project and
audit. This records a log with the code as it is, so that a test
(``tests/integration/test_golden_log.py``) can load it into a fresh store of each kind
after any refactor and find the same read models, audit figures and daily chain heads.

Run it only to make a NEW golden file (for example after the format grew): never
overwrite a committed one, since the old file is the proof that old stores still load.
``--out`` writes ``events.jsonl`` and ``expected.json`` into another folder (default: a
temporary folder, whose path is printed); copy them under ``tests/golden/`` with new
names and point a test at them. ``--scenario`` picks what is played: ``upgrader`` (the
default; ``events.jsonl`` and ``expected.json``, described below) or ``boxes``
(``events_boxes.jsonl`` and ``expected_boxes.json``: box rounds and cancels, recorded
after the first log was frozen; ``tests/golden/scenario_boxes.py`` says what it plays).
It never runs in ``make test`` (``tests/golden`` is not a test path and holds no
``test_*.py``).

How it records: a real ``Platform`` on a fresh SQLite store, served by uvicorn on
loopback with its background loops (projections, reconciler, webhook dispatcher), the
reference wallet on loopback, and real signed HTTP calls, as the integration tests do.
The clock is a ``ManualClock`` starting on 2026-03-02 09:00 UTC. The one deviation from
a production process: eventsourcing stamps each event with the wall clock
(``CanCreateTimestamp.create_timestamp``); here it reads the manual clock instead, so the
log spans fixed dates (three UTC days, hence three daily chain heads) whenever it is
recorded. ``upgrader shipping shipped`` is run as its function (``mark_shipped``) on the
recorder's platform, so the dispatch happens at the manual clock's time too.

The ``upgrader`` scenario (two operators; ``op-b`` is no-loss):
  day 1, first configuration: balance plays in EUR and USD (wins and losses), one over
  the player API; items plays staking won items; a debit refused INSUFFICIENT_FUNDS and
  one PLAYER_BLOCKED; an uncertain debit (wallet 503) rolled back by the reconciler and
  retried to success, one (wallet timeout, money moved and the answer lost) rolled back
  and never retried, and one whose rollback fails for 24 h (escalated); cash-backs
  accepted (EUR and USD), refused (items released) and uncertain (wallet 503) then
  re-sent by the reconciler to success; a shipping request; a mid-log seed rotation;
  day 2, a restart with a second configuration: a changed setting (fee), a new key and a
  revoked one, a changed rate and a new currency, a removed currency, a repriced item, a
  changed item and a new one; plays under it (the repriced item as target), an items
  play, a cash-back, a second shipping request;
  day 3: the first shipment marked shipped, then every player's seeds rotated, so every
  round's seed is revealed (the audit verifies them all).

The expected results are computed at recording time, after the live projections caught
up: the audit summary (without ``seconds``, the audit run's own duration), the daily
chain heads, and every projection table in full (no column depends on the wall clock
of the projection run: every time in them comes from the events). Operational tables
(``webhook_deliveries``, ``wallet_retries``, ``projection_tracking``) are not
projections of the log and are left out.
"""

from __future__ import annotations

import argparse
import copy
import json
import tempfile
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from eventsourcing import domain as es_domain
from eventsourcing.utils import get_topic

from application.clock import ManualClock
from application.config.load import parse_config
from application.inventory.shipping import mark_shipped
from application.platform import Platform
from entrypoints.app import create_app
from ops.reference_operator.wallet import ThreadedWalletServer
from projections.runner import tables_of
from tests.golden import scenario as upgrader_scenario
from tests.golden import scenario_boxes, snapshot
from tests.golden.scenario import OUTBOUND, Scenario
from tests.support.live import LiveServer

START = 1_772_442_000.0  # 2026-03-02T09:00:00Z
DAY = 24 * 3600


def follow_clock(clock: ManualClock) -> None:
    """Stamp events with the manual clock's time (see the module docstring)."""

    def create_timestamp() -> datetime:
        return datetime.fromtimestamp(clock.now(), UTC)

    es_domain.CanCreateTimestamp.create_timestamp = staticmethod(create_timestamp)  # type: ignore[method-assign]


# each scenario: its module (first_config, second_config), its calls, and its two files
SCENARIOS: dict[str, tuple[Any, type[Scenario], Path, Path]] = {
    "upgrader": (upgrader_scenario, Scenario, snapshot.EVENTS_FILE, snapshot.EXPECTED_FILE),
    "boxes": (
        scenario_boxes,
        scenario_boxes.BoxScenario,
        snapshot.BOXES_EVENTS_FILE,
        snapshot.BOXES_EXPECTED_FILE,
    ),
}


def record(directory: Path, name: str = "upgrader") -> dict[str, Any]:
    """Play the scenario ``name`` on a fresh store in ``directory``; returns what to
    export."""
    module, calls, _, _ = SCENARIOS[name]
    clock = ManualClock(start=START)
    follow_clock(clock)
    url = f"sqlite:///{directory}/golden.db"
    wallet = ThreadedWalletServer(dict(OUTBOUND)).start()
    scenario = calls(clock, wallet)
    try:
        raw = module.first_config(wallet.url)
        with _served(scenario, url, raw):
            scenario.day_one()
        raw = module.second_config(raw)
        with _served(scenario, url, raw):
            scenario.day_two()
            clock.advance(DAY)
            scenario.day_three(lambda sid: mark_shipped(scenario.platform, sid))
            scenario.settle_background()
        return _expected(url, raw)
    finally:
        wallet.stop()


class _served:
    """A platform on ``raw`` at ``url``, served on loopback for the scenario."""

    def __init__(self, scenario: Scenario, url: str, raw: dict[str, Any]) -> None:
        self.scenario = scenario
        self.config = parse_config(_with_url(raw, url), source="golden", env={})

    def __enter__(self) -> None:
        platform = Platform(self.config, clock=self.scenario.clock)
        appended = platform.record_configuration()
        assert appended > 0, "each configuration of the scenario changes something"
        self.live = LiveServer(create_app(platform)).__enter__()
        self.scenario.attach(platform, self.live)

    def __exit__(self, *exc: object) -> None:
        self.scenario.detach()
        self.live.__exit__(*exc)
        self.scenario.platform.close()


def _with_url(raw: dict[str, Any], url: str) -> dict[str, Any]:
    raw = copy.deepcopy(raw)
    raw["service"]["database_url"] = url
    return raw


def _expected(url: str, raw: dict[str, Any]) -> dict[str, Any]:
    """The projections caught up, then the tables, heads and audit of the store."""
    from entrypoints.runtime import Runtime

    platform = Platform(parse_config(_with_url(raw, url), source="golden", env={}))
    try:
        events = platform.events
        assert events.mapper.compressor is None and events.mapper.cipher is None
        runtime = Runtime(platform, workers=())
        runtime.runner.catch_up()
        tables = {}
        for projection in runtime.runner.projections.values():
            for table in tables_of(projection):
                with platform.db.transaction() as cur:
                    cur.execute(f"SELECT * FROM {table} LIMIT 0")  # noqa: S608 - our tables
                    tables[table] = [column[0] for column in cur.description]
        log = snapshot.read_log(events.recorder)
        assert [row["position"] for row in log] == list(range(1, len(log) + 1)), "gaps"
        expected = {
            "events": len(log),
            "chainHeads": snapshot.chain_heads(platform.db),
            "tables": snapshot.dump_tables(platform.db, tables),
            "topics": dict(sorted(Counter(row["topic"] for row in log).items())),
        }
    finally:
        platform.close()
    code, audit = snapshot.audit_summary(url)
    assert code == 0 and audit["violations"] == [], audit
    assert audit["fairnessCommitted"] == 0 and audit["fairnessVerified"] > 0, audit
    assert len(expected["chainHeads"]) >= 2, expected["chainHeads"]
    config = _with_url(raw, "")
    return {"log": log, "expected": {"audit": audit, **expected, "config": config}}


def _check_coverage(topics: dict[str, int], name: str) -> None:
    """Every event class of every aggregate the platform defines is in the log at least
    once (the library's unused default ``Created`` event aside); a later scenario's log
    together with the committed logs before it (it records what they lack)."""
    topics = dict(topics)
    for other, (_, _, _, expected) in SCENARIOS.items():
        if other == name:
            break
        topics.update(json.loads(expected.read_text(encoding="utf-8"))["topics"])
    missing = []
    pending = list(es_domain.Aggregate.__subclasses__())
    while pending:
        aggregate = pending.pop()
        pending.extend(aggregate.__subclasses__())
        if aggregate.__module__.startswith(("eventsourcing", "tests")):
            continue
        for name, value in vars(aggregate).items():
            if not isinstance(value, type) or name in ("Event", "Created"):
                continue
            if issubclass(value, es_domain.Aggregate.Event) and get_topic(value) not in topics:
                missing.append(get_topic(value))
    assert not missing, f"the scenario records no {sorted(missing)}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.golden.record", description=__doc__)
    parser.add_argument("--out", type=Path, help="folder for the two files (default: a new one)")
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), default="upgrader")
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="golden-"))
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as store:
        recorded = record(Path(store), args.scenario)
    _check_coverage(recorded["expected"]["topics"], args.scenario)
    _, _, events_file, expected_file = SCENARIOS[args.scenario]
    snapshot.write_log(out / events_file.name, recorded["log"])
    snapshot.write_expected(out / expected_file.name, recorded["expected"])
    print(f"recorded {recorded['expected']['events']} events into {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

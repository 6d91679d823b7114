"""The audit's fast paths give exactly what the slow ones give, over a real generated log.

The log is written by the replay bench's generator (``ops/bench/replay.py``: balance
rounds in EUR and USD, grants, seed rotations, the configuration events), on SQLite and
on PostgreSQL. Checked: the msgspec decoder against eventsourcing's mapper (every event,
same class and same attributes with the same types), the chain verifier's link against
``projections.hash_chain.notification_link``, and the audit's report with the fast
decoder against the report with the mapper alone.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime
from typing import Any
from uuid import UUID

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from application.audit.auditor import Auditor
from application.audit.chain import ChainVerifier
from application.audit.decode import EventDecoder
from application.platform import EventStore, Platform
from domain.hash_chain import GENESIS, notification_link
from ops.bench.replay import generate
from projections.hash_chain import HashChain
from projections.runner import ProjectionRunner
from tests.conftest import fresh_postgres_url

EVENTS = 12000


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def log(request: pytest.FixtureRequest, tmp_path_factory) -> Iterator[tuple[Platform, int]]:
    if request.param == "sqlite":
        urls: Iterator[str] = iter([f"sqlite:///{tmp_path_factory.mktemp('fast')}/bench.db"])
    else:
        urls = fresh_postgres_url()
    platform, rounds = generate(next(urls), EVENTS)
    ProjectionRunner(platform.events, platform.db, [HashChain(platform.events.recorder)]).catch_up()
    yield platform, rounds
    platform.close()
    for _ in urls:  # the PostgreSQL generator drops its schema when resumed
        pass


def notifications(events: EventStore) -> list[Any]:
    found: list[Any] = []
    while batch := events.recorder.select_notifications(len(found) + 1, 1000):
        found.extend(batch)
    return found


def typed(value: Any) -> Any:
    """A value with every nested type spelled out, so that 1 == 1.0 == True do not pass."""
    if isinstance(value, dict):
        return {key: typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [typed(item) for item in value]
    if isinstance(value, float) and math.isnan(value):
        return ("nan",)
    return (type(value).__name__, value)


def test_the_generated_log_is_deterministic(log: tuple[Platform, int]) -> None:
    platform, rounds = log
    stored = notifications(platform.events)
    assert (len(stored), rounds) == (12261, 2074)
    topics: dict[str, int] = {}
    for notification in stored:
        name = notification.topic.split(":")[1]
        topics[name] = topics.get(name, 0) + 1
    assert topics == {
        "CatalogItemRecord.Listed": 399,
        "InventoryItem.ItemGranted": 1421,
        "OperatorProfile.KeyAdded": 1,
        "OperatorProfile.RateSet": 2,
        "OperatorProfile.Registered": 1,
        "OperatorProfile.SettingsChanged": 1,
        "PlayerFairness.NonceUsed": 2074,
        "PlayerFairness.SeedPairStarted": 40,
        "PlayerFairness.SeedRotated": 26,
        "Round.DebitAttempted": 2074,
        "Round.Opened": 2074,
        "Round.RoundSettled": 2074,
        "Round.WagerDebited": 2074,
    }


def test_the_fast_decoder_gives_the_mappers_events(log: tuple[Platform, int]) -> None:
    platform, _ = log
    events = platform.events
    decoder = EventDecoder(events.mapper)
    assert decoder.enabled
    stored = notifications(events)
    for notification in stored:
        fast = decoder.decode(notification)
        slow = events.mapper.to_domain_event(notification)
        assert type(fast) is type(slow)
        assert typed(vars(fast)) == typed(vars(slow)), notification.id
        assert list(vars(fast)) == list(vars(slow))
        assert isinstance(fast.timestamp, datetime) and isinstance(fast.originator_id, UUID)
    assert (decoder.fast, decoder.slow) == (12261, 0)


def test_the_verifiers_link_is_the_projections_link(log: tuple[Platform, int]) -> None:
    platform, _ = log
    verifier = ChainVerifier(None)
    previous = GENESIS
    for notification in notifications(platform.events):
        link = notification_link(previous, notification)
        assert verifier._link(previous, notification) == link
        previous = link
    verifier = ChainVerifier(platform.db)
    for notification in notifications(platform.events):
        verifier.step(notification)
    verifier.finish()
    assert verifier.findings == []
    assert verifier.summary() == {
        "available": True,
        "chainEnd": 12261,
        "linksChecked": 12261,
        "unchained": 0,
        "headsChecked": 0,
        "head": previous.hex(),
    }


def test_the_audit_reports_the_same_with_the_mapper_alone(log: tuple[Platform, int]) -> None:
    platform, rounds = log
    fast = Auditor(platform.events, platform.db).run().as_json()
    auditor = Auditor(platform.events, platform.db, batch_size=700)
    auditor.decoder.enabled = False
    slow = auditor.run().as_json()
    assert auditor.decoder.slow == 12261
    for report in (fast, slow):
        del report["seconds"]
    assert fast == slow
    assert fast["ok"] is True
    assert (fast["eventsReplayed"], fast["roundsChecked"], fast["roundsSettled"]) == (
        12261,
        rounds,
        rounds,
    )
    assert (fast["fairnessVerified"], fast["fairnessCommitted"], fast["itemsChecked"]) == (
        1300,
        774,
        1421,
    )
    assert fast["chain"]["linksChecked"] == 12261


def _tampered(stored: list[Any]) -> list[Any]:
    """The log with changes of every kind the audit names (applied to copies, not the store)."""
    changed = list(stored)

    def find(topic_part: str, nth: int = 0) -> int:
        return [i for i, n in enumerate(changed) if topic_part in n.topic][nth]

    def edit(index: int, **fields: Any) -> None:
        state = json.loads(changed[index].state)
        for key, value in fields.items():
            if "." in key:
                outer, inner = key.split(".")
                state[outer][inner] = value
            else:
                state[key] = value
        changed[index] = replace(changed[index], state=json.dumps(state).encode())

    settled = find("RoundSettled", 5)
    edit(settled, **{"settlement.rolled_bps": 9999, "settlement.is_win": True})
    edit(find("Round.Opened", 7), **{"opening.chance_bps": 4321})
    edit(find("Round.Opened", 9), **{"opening.wager_minor": 1})
    edit(find("NonceUsed", 11), nonce=77)
    edit(find("ItemGranted", 3), grant={"oops": 1})
    nan = find("DebitAttempted", 13)  # NaN: msgspec refuses it, the mapper decodes it
    changed[nan] = replace(
        changed[nan],
        state=changed[nan].state.replace(b'"amount_minor":', b'"amount_minor":NaN,"x":'),
    )
    broken = find("WagerDebited", 17)
    changed[broken] = replace(changed[broken], state=b"{not json")
    del changed[find("RoundSettled", 20)]
    changed.insert(find("Round.Opened", 30), replace(changed[find("Round.Opened", 29)], id=0))
    return changed


def test_tampered_events_are_reported_the_same_with_the_mapper_alone(
    log: tuple[Platform, int],
) -> None:
    platform, _ = log
    tampered = _tampered(notifications(platform.events))
    reports, fallbacks = [], []
    for fast in (True, False):
        auditor = Auditor(platform.events, platform.db)
        auditor.decoder.enabled = fast
        for notification in tampered:
            auditor.step(notification)
        auditor.finish()
        report = auditor.report.as_json()
        del report["seconds"]
        reports.append(report)
        fallbacks.append(auditor.decoder.slow)
    assert reports[0] == reports[1]
    assert fallbacks == [2, 12261]  # the NaN and the broken document; every event
    kinds: dict[str, int] = {}
    for violation in reports[0]["violations"]:
        kinds[violation["kind"]] = kinds.get(violation["kind"], 0) + 1
    assert kinds == {
        "band": 2,
        "bet": 3,
        "chain_mismatch": 7,
        "chance": 1,
        "debit_missing": 1,
        "event_deleted": 1,
        "event_inserted": 1,
        "event_malformed": 1,
        "event_unreadable": 1,
        "fairness": 1,
        "grant": 2,
        "nonce": 3,
        "outcome": 2,
        "roll": 2,
        "round_state": 1,
        "target_out_of_band": 2,
        "version_gap": 1,
    }


# -- the decoder on documents no store of ours would write --------------------------------------


class _Stored:
    def __init__(self, state: bytes, topic: str) -> None:
        self.originator_id = UUID(int=7)
        self.originator_version = 3
        self.topic = topic
        self.state = state
        self.id = 1


_TOPIC = "domain.player_fairness:PlayerFairness.NonceUsed"
_mapper = EventStore(env={"PERSISTENCE_MODULE": "eventsourcing.popo"}).mapper


def _outcome(decode: Any, state: bytes) -> Any:
    try:
        event = decode(_Stored(state, _TOPIC))
    except Exception:
        return "raises"
    return (type(event), typed(vars(event)))


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.sampled_from(["_type_", "_data_", "uuid_hex", "datetime_iso", "decimal_str", "nope"]),
)
_keys = st.sampled_from(["_type_", "_data_", "timestamp", "nonce", "a", "\u00e9", "\\u005f"])
_documents = st.recursive(
    _scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=3)
)
_typed_objects = st.sampled_from(
    [
        {"_type_": "datetime_iso", "_data_": "2027-01-15T08:00:00+00:00"},
        {"_type_": "uuid_hex", "_data_": "0" * 31 + "7"},
        {"_type_": "decimal_str", "_data_": "1.50"},
        {"_type_": "unknown", "_data_": "x"},
        {"_type_": "uuid_hex", "_data_": "not hex"},
    ]
)


@settings(max_examples=400, deadline=None)
@given(
    body=st.dictionaries(_keys, _documents | _typed_objects, max_size=4),
    stamp=_typed_objects | _documents,
    spelling=st.sampled_from(["plain", "escaped", "spaced"]),
)
def test_the_decoder_agrees_with_the_mapper_on_any_document(
    body: dict[str, Any], stamp: Any, spelling: str
) -> None:
    text = json.dumps({**body, "timestamp": stamp}, ensure_ascii=spelling == "escaped")
    if spelling == "spaced":
        text = text.replace(":", " : ")
    state = text.encode("utf-8")
    decoder = EventDecoder(_mapper)
    assert _outcome(decoder.decode, state) == _outcome(_mapper.to_domain_event, state)


@pytest.mark.parametrize(
    "state",
    [
        b'{"nonce":NaN,"timestamp":{"_type_":"datetime_iso","_data_":"2027-01-15T08:00:00"}}',
        b'{"nonce":1e400,"timestamp":{"_type_":"datetime_iso","_data_":"2027-01-15T08:00:00"}}',
        b'{"nonce":"\\ud800","timestamp":{"_type_":"datetime_iso","_data_":"2027-01-15"}}',
        b'{"nonce":1,"timestamp":{"\\u005ftype_":"datetime_iso","_data_":"2027-01-15"}}',
        b'{"nonce":{"_type_":"uuid_hex","_data_":"00000000000000000000000000000007"},'
        b'"timestamp":{"_type_":"datetime_iso","_data_":"2027-01-15"}}',
        b'{"nonce":1,"timestamp":{"_type_":"nope","_data_":"2027-01-15"}}',
        b'{"_type_":"uuid_hex","_data_":"00000000000000000000000000000007"}',
        b'{"nonce":1,"timestamp":{"_type_":"datetime_iso","_data_":"2027-01-15"}} x',
        b"[1, 2]",
        b'{"nonce":1,"timestamp":{"_type_":"datetime_iso","_data_":"2027-01-15"},"nonce":2}',
        b'\xff{"nonce":1}',
    ],
)
def test_the_decoder_agrees_with_the_mapper_on_odd_documents(state: bytes) -> None:
    decoder = EventDecoder(_mapper)
    assert _outcome(decoder.decode, state) == _outcome(_mapper.to_domain_event, state)

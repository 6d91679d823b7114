"""The Upgrader round's typed records give back the stored dicts byte for byte."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from domain.upgrader_round import UpgraderOpening, UpgraderSettlement
from tests.golden.snapshot import load_log

RECORDS = {
    "Round.Opened": ("opening", UpgraderOpening),
    "Round.RoundSettled": ("settlement", UpgraderSettlement),
}


def _recorded() -> list[tuple[type, dict[str, Any]]]:
    found = []
    for event in load_log():
        for suffix, (field, cls) in RECORDS.items():
            if event["topic"].endswith(suffix):
                found.append((cls, json.loads(event["state"])[field]))
    return found


def test_the_golden_log_holds_openings_of_both_modes_and_settlements() -> None:
    recorded = _recorded()
    openings = [d for cls, d in recorded if cls is UpgraderOpening]
    assert (len(openings), len(recorded) - len(openings)) == (37, 33)
    assert sorted({d["mode"] for d in openings}) == ["balance", "items"]


def test_every_recorded_opening_and_settlement_round_trips_to_the_same_json() -> None:
    for cls, recorded in _recorded():
        text = json.dumps(recorded)
        assert json.dumps(cls.of(recorded).record()) == text
        assert json.dumps(cls.decode(text).record()) == text


def test_absent_optional_keys_stay_absent_and_read_as_their_defaults() -> None:
    _, opening = next((c, d) for c, d in _recorded() if c is UpgraderOpening)
    balance = {k: v for k, v in opening.items() if not k.startswith("stake")}
    typed = UpgraderOpening.of(balance)
    assert (typed.counted_stake_minor, typed.uncredited_stake) == (balance["wager_minor"], None)
    assert "stake" not in typed.record()
    _, settlement = next((c, d) for c, d in _recorded() if c is UpgraderSettlement)
    old = {k: v for k, v in settlement.items() if k not in ("algorithm_key", "stake_uncredited")}
    typed_settlement = UpgraderSettlement.of(old)
    assert (typed_settlement.algorithm, typed_settlement.uncredited_stake) == (
        "hmac_sha256_v1",
        None,
    )
    assert list(typed_settlement.record()) == list(old)


def test_a_record_missing_a_required_key_is_refused() -> None:
    _, opening = next((c, d) for c, d in _recorded() if c is UpgraderOpening)
    with pytest.raises(msgspec.ValidationError, match="public_id"):
        UpgraderOpening.of({k: v for k, v in opening.items() if k != "public_id"})

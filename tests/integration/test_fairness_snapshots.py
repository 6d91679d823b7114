"""A player's fairness aggregate is snapshotted every 50 versions, and reads agree with
a full replay of its events: the nonce sequence stays unbroken across snapshots."""

from __future__ import annotations

from application.fairness_service import SCHEMA, FairnessService
from application.platform import Platform, ensure_tables
from domain.ids import fairness_id


def test_fairness_reads_from_snapshots_agree_with_the_full_replay(platform: Platform) -> None:
    ensure_tables(platform.db, SCHEMA)
    fairness = FairnessService(platform)
    nonces = []
    for play in range(120):
        pair = fairness.load_or_begin("op-a", "snap-player")
        nonces.append(pair.use_nonce(f"round-{play}"))
        platform.events.save(pair)
    assert nonces == list(range(120))
    pid = fairness_id("op-a", "snap-player")
    # version 1 is SeedPairStarted, then one NonceUsed per play: 121 versions
    assert [s.originator_version for s in platform.events.snapshots.get(pid)] == [50, 100]
    from_snapshot = platform.events.repository.get(pid)
    replayed = platform.events.repository.get(pid, version=121)  # events only
    assert (from_snapshot.version, from_snapshot.nonce) == (121, 120)
    assert vars(from_snapshot) == vars(replayed)
    # the read after the last snapshot decodes the snapshot and 21 events, not 121
    assert len(list(platform.events.events.get(pid, gt=100))) == 21

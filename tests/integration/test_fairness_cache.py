"""A process keeps the fairness aggregates it has read and fast-forwards them with the
events recorded since. Two services (two processes) taking turns for one player must
each see the other's nonces: every read equals a full replay of the log."""

from __future__ import annotations

import pytest
from eventsourcing.persistence import IntegrityError

from application.platform import Platform, ensure_tables
from application.rounds.fairness import SCHEMA, FairnessService
from domain.ids import fairness_id


def test_cached_fairness_reads_follow_the_other_process_writes(platform: Platform) -> None:
    ensure_tables(platform.db, SCHEMA)
    one, two = FairnessService(platform), FairnessService(platform)
    nonces = []
    for play in range(30):
        service = (one, two, two)[play % 3]
        pair = service.load_or_begin("op-a", "cached-player")
        nonces.append(pair.use_nonce(f"round-{play}"))
        platform.events.save(pair)
    assert nonces == list(range(30))
    pid = fairness_id("op-a", "cached-player")
    replayed = platform.events.repository.get(pid)
    for service in (one, two):
        cached = service.load_or_begin("op-a", "cached-player")
        assert (cached.version, cached.nonce) == (31, 30)
        assert vars(cached) == vars(replayed)
    # a stale copy that conflicts is refused by the store, not silently merged
    stale = one.load_or_begin("op-a", "cached-player")
    fresh = two.load_or_begin("op-a", "cached-player")
    fresh.use_nonce("round-30")
    platform.events.save(fresh)
    stale.use_nonce("round-30-again")
    with pytest.raises(IntegrityError):
        platform.events.save(stale)
    assert one.load_or_begin("op-a", "cached-player").nonce == 31

"""A player's provably fair seed pairs (decisions §3).

The event log carries only the *hash* of the active server seed; the seed itself is
revealed in the ``SeedRotated`` event that ends its pair. Every roll with the pair is an
event here too, so two rounds of one player cannot take the same nonce: the second save
conflicts on this aggregate's version and retries with the next nonce.

Stored format: each event is stored under its explicit topic (``TOPIC``, ``@event(...,
topic=...)``), the string it had when topics were module paths. The classes and this
module may move; topics, event names and fields never change
(``tests/unit/test_event_topics.py`` pins the topics).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from domain.fairness import is_valid_client_seed, seed_hash
from domain.ids import fairness_id


class SeedMismatch(Exception):
    """The seed offered for reveal does not hash to the committed value."""


class PlayerFairness(Aggregate):
    TOPIC = "domain.player_fairness:PlayerFairness"

    class Created(Aggregate.Created):  # the library's default, unused: a topic all the same
        TOPIC = "domain.player_fairness:PlayerFairness.Created"

    @staticmethod
    def create_id(operator_id: str, player_external_id: str, **_: Any) -> UUID:
        return fairness_id(operator_id, player_external_id)

    @event("SeedPairStarted", topic="domain.player_fairness:PlayerFairness.SeedPairStarted")
    def __init__(
        self,
        operator_id: str,
        player_external_id: str,
        server_seed_hash: str,
        client_seed: str,
        at: float,
    ) -> None:
        self.operator_id = operator_id
        self.player_external_id = player_external_id
        self.server_seed_hash = server_seed_hash
        self.client_seed = client_seed
        self.nonce = 0
        self.revealed: list[dict[str, Any]] = []

    def use_nonce(self, round_public_id: str) -> int:
        """The nonce for one roll with the active pair (recorded as an event)."""
        nonce = self.nonce
        self._nonce_used(round_public_id=round_public_id, nonce=nonce)
        return nonce

    @event("NonceUsed", topic="domain.player_fairness:PlayerFairness.NonceUsed")
    def _nonce_used(self, round_public_id: str, nonce: int) -> None:
        self.nonce = nonce + 1

    def rotate(
        self, server_seed: str, next_server_seed_hash: str, next_client_seed: str, at: float
    ) -> dict[str, Any]:
        """Reveal the active seed and start the next pair; returns the revealed entry."""
        if seed_hash(server_seed) != self.server_seed_hash:
            raise SeedMismatch("the revealed seed does not match the committed hash")
        if not is_valid_client_seed(next_client_seed):
            raise ValueError("client seed must be 1 to 64 printable ASCII characters")
        self._seed_rotated(
            server_seed=server_seed,
            server_seed_hash=self.server_seed_hash,
            client_seed=self.client_seed,
            first_nonce=0,
            last_nonce=self.nonce - 1 if self.nonce else None,
            next_server_seed_hash=next_server_seed_hash,
            next_client_seed=next_client_seed,
            at=at,
        )
        return self.revealed[-1]

    @event("SeedRotated", topic="domain.player_fairness:PlayerFairness.SeedRotated")
    def _seed_rotated(
        self,
        server_seed: str,
        server_seed_hash: str,
        client_seed: str,
        first_nonce: int,
        last_nonce: int | None,
        next_server_seed_hash: str,
        next_client_seed: str,
        at: float,
    ) -> None:
        self.revealed.append(
            {
                "server_seed": server_seed,
                "server_seed_hash": server_seed_hash,
                "client_seed": client_seed,
                "first_nonce": first_nonce,
                "last_nonce": last_nonce,
                "revealed_at": at,
            }
        )
        self.server_seed_hash = next_server_seed_hash
        self.client_seed = next_client_seed
        self.nonce = 0

"""Seed pairs: start, read, rotate (decisions §3).

Unrevealed server seeds live in the ``seed_vault`` table, not in the event log; the
log carries their hash until ``SeedRotated`` reveals them. A vault row is written before
the event that commits to its hash, so a committed hash always has its seed.
"""

from __future__ import annotations

import secrets
import threading
from typing import Any

from eventsourcing.application import AggregateNotFoundError, Repository
from eventsourcing.persistence import IntegrityError

from application.clock import iso_utc
from application.errors import PlatformError, validation_error
from application.platform import Platform
from application.rounds.actions import fingerprint, idempotency_conflict
from application.rounds.views import (
    ActiveSeed,
    FairnessAnswer,
    PreviousSeed,
    RevealedSeed,
    RotateAnswer,
)
from domain.fairness import is_valid_client_seed, seed_hash
from domain.ids import fairness_id
from domain.player_fairness import PlayerFairness

SCHEMA = [
    """CREATE TABLE IF NOT EXISTS seed_vault (
        server_seed_hash TEXT PRIMARY KEY,
        server_seed TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL)""",
]


def new_client_seed() -> str:
    return secrets.token_hex(8)


SEED_CACHE_SIZE = 10_000
PAIR_CACHE_SIZE = 10_000


class FairnessService:
    def __init__(self, platform: Platform) -> None:
        self.platform = platform
        # hash -> seed never changes once written, so a play need not read the vault
        # for a seed this process has seen (a bounded map, oldest entries dropped first)
        self._seeds: dict[str, str] = {}
        self._seeds_lock = threading.Lock()  # store threads remember seeds concurrently
        # A player's fairness aggregate gains an event on every play and is read on
        # every play. This process keeps the aggregates it has read and, on the next
        # read, applies only the events recorded since (its own or other processes'):
        # one query and a few events instead of a replay of the player's whole history.
        self._pairs = Repository(platform.events.events, cache_maxsize=PAIR_CACHE_SIZE)

    def _new_server_seed_hash(self) -> str:
        server_seed = secrets.token_hex(32)
        digest = seed_hash(server_seed)
        with self.platform.db.transaction() as cur:
            cur.execute(
                "INSERT INTO seed_vault (server_seed_hash, server_seed, created_at) "
                "VALUES (?, ?, ?)",
                (digest, server_seed, self.platform.clock.now()),
            )
        self._remember(digest, server_seed)
        return digest

    def _remember(self, digest: str, server_seed: str) -> None:
        with self._seeds_lock:
            if len(self._seeds) >= SEED_CACHE_SIZE:
                self._seeds.pop(next(iter(self._seeds)))
            self._seeds[digest] = server_seed

    def server_seed(self, server_seed_hash: str) -> str:
        known = self._seeds.get(server_seed_hash)
        if known is not None:
            return known
        with self.platform.db.transaction() as cur:
            cur.execute(
                "SELECT server_seed FROM seed_vault WHERE server_seed_hash = ?", (server_seed_hash,)
            )
            row = cur.fetchone()
        if row is None:
            raise PlatformError("SERVICE_UNAVAILABLE", "seed vault entry is missing")
        self._remember(server_seed_hash, row[0])
        return row[0]

    def load_or_begin(self, operator_id: str, player: str) -> PlayerFairness:
        """The player's fairness aggregate; a new, unsaved one when there is none yet."""
        try:
            return self._pairs.get(fairness_id(operator_id, player))
        except AggregateNotFoundError:
            return PlayerFairness(
                operator_id=operator_id,
                player_external_id=player,
                server_seed_hash=self._new_server_seed_hash(),
                client_seed=new_client_seed(),
                at=self.platform.clock.now(),
            )

    def _saved(self, operator_id: str, player: str) -> PlayerFairness:
        for _ in range(5):
            fairness = self.load_or_begin(operator_id, player)
            if not fairness.pending_events:
                return fairness
            try:
                self.platform.events.save(fairness)
                return fairness
            except IntegrityError:
                continue
        raise PlatformError("SERVICE_UNAVAILABLE", "fairness state is contended; retry")

    def read(self, operator_id: str, player: str) -> FairnessAnswer:
        fairness = self._saved(operator_id, player)
        return FairnessAnswer(
            active=active_wire(fairness),
            revealed=[revealed_wire(entry) for entry in reversed(fairness.revealed)],
        )

    def rotate(
        self,
        operator_id: str,
        player: str,
        client_seed: str | None,
        action_key: str | None = None,
    ) -> RotateAnswer:
        """Reveal the active seed and start the next pair. ``action_key`` names the
        client action (README, "Provable fairness"): a copy of it answers the original
        rotation byte for byte and rotates nothing; another body under it answers 409.
        Racing copies conflict on the aggregate's version, and the losers find the
        winner's rotation when they look again."""
        if client_seed is not None and not is_valid_client_seed(client_seed):
            raise validation_error("clientSeed: must be 1 to 64 printable ASCII characters")
        body_print = fingerprint("rotate", client_seed)
        action = None if action_key is None else {"key": action_key, "fingerprint": body_print}
        for _ in range(5):
            fairness = self._saved(operator_id, player)
            if action_key is not None and action_key in fairness.rotations:
                if fairness.rotations[action_key]["fingerprint"] != body_print:
                    raise idempotency_conflict()
                return rotation_answer(fairness, action_key)
            revealed = fairness.rotate(
                server_seed=self.server_seed(fairness.server_seed_hash),
                next_server_seed_hash=self._new_server_seed_hash(),
                next_client_seed=client_seed or new_client_seed(),
                at=self.platform.clock.now(),
                action=action,
            )
            try:
                self.platform.events.save(fairness)
            except IntegrityError:
                continue
            if action_key is not None:
                return rotation_answer(fairness, action_key)
            return RotateAnswer(previous=previous_wire(revealed), active=active_wire(fairness))
        raise PlatformError("SERVICE_UNAVAILABLE", "fairness state is contended; retry")


def previous_wire(revealed: dict[str, Any]) -> PreviousSeed:
    return PreviousSeed(
        server_seed=revealed["server_seed"],
        server_seed_hash=revealed["server_seed_hash"],
        client_seed=revealed["client_seed"],
        last_nonce=revealed["last_nonce"],
    )


def rotation_answer(fairness: PlayerFairness, action_key: str) -> RotateAnswer:
    """A recorded rotation's answer, as it was given (the pair it started, at nonce 0)."""
    rotation = fairness.rotations[action_key]
    return RotateAnswer(
        previous=previous_wire(fairness.revealed[rotation["revealed"]]),
        active=ActiveSeed(
            server_seed_hash=rotation["server_seed_hash"],
            client_seed=rotation["client_seed"],
            nonce=0,
        ),
    )


def active_wire(fairness: PlayerFairness) -> ActiveSeed:
    return ActiveSeed(
        server_seed_hash=fairness.server_seed_hash,
        client_seed=fairness.client_seed,
        nonce=fairness.nonce,
    )


def revealed_wire(entry: dict[str, Any]) -> RevealedSeed:
    return RevealedSeed(
        server_seed=entry["server_seed"],
        server_seed_hash=entry["server_seed_hash"],
        client_seed=entry["client_seed"],
        first_nonce=entry["first_nonce"],
        last_nonce=entry["last_nonce"],
        revealed_at=iso_utc(entry["revealed_at"]),
    )

"""The auditor's replay: the log read in notification order, each event decoded and
handed to its check, the aggregate versions and the hash chain followed, and what is
kept of rounds, seed pairs and items for the checks of later events."""

from __future__ import annotations

import gc
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from eventsourcing.application import Application

from application.audit.chain import ChainVerifier
from application.audit.config import ConfigHistory
from application.audit.decode import EventDecoder
from application.audit.report import AuditReport, AuditScope, Violation
from domain.config_history import CatalogItemRecord, OperatorProfile
from domain.ids import round_public_id

RESOLVED = ("consumed", "cashed_back", "shipping_requested", "shipped", "cancelled")
# what a finished round keeps for the checks of later events (grants, nonces, rollbacks)
OPENING_KEPT = (
    "public_id",
    "operator_id",
    "player_external_id",
    "mode",
    "currency",
    "wager_minor",
    "chance_bps",
    "target",
    "target_value_base_minor",
)
SETTLEMENT_KEPT = ("server_seed_hash", "client_seed", "nonce", "rolled_bps", "is_win")


@dataclass
class _Round:
    uuid: UUID
    opening: dict[str, Any]
    position: int
    in_scope: bool
    status: str = "open"
    attempts: dict[int, dict[str, Any]] = field(default_factory=dict)
    settlement: dict[str, Any] | None = None
    nonce_uses: int = 0
    grants: int = 0
    stake_ids: set[int] = field(default_factory=set)
    consumed: set[int] = field(default_factory=set)
    # the cancel (decisions §11): its credit attempts, and the items cancelled with it
    cancel_attempts: dict[int, dict[str, Any]] = field(default_factory=dict)
    items_cancelled: int = 0
    box: Any = None  # a box round's draws and grants (audit/boxes.py ``BoxState``)

    @property
    def public_id(self) -> str:
        opening = self.opening  # as .get(key, default), without computing the default
        return opening["public_id"] if "public_id" in opening else round_public_id(self.uuid)


@dataclass
class _Pair:
    operator_id: str
    player: str
    server_seed_hash: str
    client_seed: str
    next_nonce: int = 0
    rounds: list[tuple[str, int]] = field(default_factory=list)


@dataclass
class _Item:
    number: int
    grant: dict[str, Any]
    in_scope: bool
    state: str = "unresolved"
    held_by: str | None = None
    resolution: str = ""


# -- the replay -------------------------------------------------------------------------------


class Replay:
    """The state the checks share and the loop that feeds them; ``Auditor`` (auditor.py)
    adds the checks and names the handler of each event class."""

    def __init__(
        self,
        events: Application,
        db: Any = None,
        scope: AuditScope | None = None,
        expected_heads: dict[int, str] | None = None,
        check_chain: bool = True,
        batch_size: int = 5000,
    ) -> None:
        self.events = events
        self.db = db
        self.scope = scope or AuditScope()
        self.batch_size = batch_size
        self.report = AuditReport()
        self.chain = ChainVerifier(db if check_chain else None, dict(expected_heads or {}))
        self.history = ConfigHistory()
        self.rounds: dict[UUID, _Round] = {}
        self.by_public: dict[str, _Round] = {}
        self.pairs: dict[UUID, _Pair] = {}
        self.items: dict[int, _Item] = {}
        self.item_of: dict[UUID, _Item] = {}
        self.versions: dict[Any, int] = {}
        self.decoder = EventDecoder(events.mapper)
        # the opening checks' catalogue items (auditor.py _catalog_item), built once each
        self._listed: dict[int, tuple[dict[str, Any], Any]] = {}
        self._handlers = self._event_handlers()

    # -- driving ------------------------------------------------------------------------------

    def run(self, progress: Callable[[int, int], None] | None = None) -> AuditReport:
        started = datetime.now(UTC)
        recorder = self.events.recorder
        head = recorder.max_notification_id() or 0
        position = 0
        # The replay state only grows (rounds, items, pairs: long-lived, never cyclic
        # garbage), and the automatic collector would traverse all of it again and again
        # (about a quarter of the replay's CPU). It is paused while the log is replayed;
        # the young generations are collected once per page instead.
        collecting = gc.isenabled()
        gc.disable()
        try:
            while True:
                batch = recorder.select_notifications(position + 1, self.batch_size)
                if not batch:
                    break
                step = self.step
                for notification in batch:
                    step(notification)
                position = batch[-1].id
                del batch
                gc.collect(1)
                if progress is not None:
                    progress(position, max(head, position))
        finally:
            if collecting:
                gc.enable()
        self.finish()
        self.report.seconds = (datetime.now(UTC) - started).total_seconds()
        return self.report

    def step(self, notification: Any) -> None:
        self.report.events_replayed += 1
        self.chain.step(notification)
        self._check_version(notification)
        try:
            event = self.decoder.decode(notification)
        except Exception as exc:  # a stored event that no longer decodes
            self._event(
                "event_unreadable",
                notification.id,
                f"event {notification.id} ({notification.topic}) cannot be decoded: {exc}",
            )
            return
        handler = self._handlers.get(type(event))
        try:
            if handler is not None:
                handler(event, notification.id)
            elif isinstance(event, OperatorProfile.Event | CatalogItemRecord.Event):
                self.history.apply(event)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            self._event(
                "event_malformed",
                notification.id,
                f"event {notification.id} ({notification.topic}) lacks what it should hold: "
                f"{type(exc).__name__}: {exc}",
            )

    def _check_version(self, notification: Any) -> None:
        key = notification.originator_id
        slot = key.int if type(key) is UUID else key  # an int hashes in C, a UUID in Python
        last = self.versions.get(slot, 0)
        version = notification.originator_version
        if version != last + 1:
            self._event(
                "version_gap",
                notification.id,
                f"event {notification.id} is version {version} of {_hex(key)}, "
                f"but the log's previous event of it is version {last}",
            )
        self.versions[slot] = max(last, version)

    # -- recording findings -------------------------------------------------------------------

    def _round(self, r: _Round, kind: str, message: str) -> None:
        if r.in_scope:
            self.report.violations.append(Violation(kind, "round", r.public_id, message))

    def _item(self, item: _Item, kind: str, message: str) -> None:
        if item.in_scope:
            self.report.violations.append(Violation(kind, "item", item.number, message))

    def _event(self, kind: str, position: int, message: str) -> None:
        self.report.violations.append(Violation(kind, "event", position, message))

    def _known_round(self, event: Any, position: int) -> _Round | None:
        r = self.rounds.get(event.originator_id)
        if r is None:
            self._event(
                "round_state",
                position,
                f"event {position} ({type(event).__name__}) belongs to a round never opened",
            )
        return r

    def _event_handlers(self) -> dict[type, Callable[[Any, int], None]]:
        raise NotImplementedError  # the auditor's: the check of each event class

    def finish(self) -> None:
        raise NotImplementedError


def _hex(key: Any) -> str:
    return key.hex if isinstance(key, UUID) else str(key)

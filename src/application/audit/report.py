"""What the auditor finds and reports, and which rounds and items it checks."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

# -- results -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Violation:
    kind: str
    ref_type: str  # "round", "item" or "event"
    ref: Any
    message: str

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, self.ref_type: self.ref, "message": self.message}


@dataclass
class AuditReport:
    rounds_checked: int = 0
    rounds_settled: int = 0
    rounds_voided: int = 0
    rounds_open: int = 0
    rounds_held: int = 0
    rounds_cancelled: int = 0
    fairness_verified: int = 0
    fairness_committed: int = 0
    events_replayed: int = 0
    items_checked: int = 0
    cashouts_checked: int = 0
    box_rounds_checked: int = 0  # of rounds_checked
    reels_verified: int = 0  # box draws recomputed from a revealed seed
    open_rollbacks: list[dict[str, Any]] = field(default_factory=list)
    escalated_rollbacks: list[dict[str, Any]] = field(default_factory=list)
    open_cancel_credits: list[dict[str, Any]] = field(default_factory=list)
    held_rounds: list[dict[str, Any]] = field(default_factory=list)  # credit refused
    violations: list[Violation] = field(default_factory=list)
    chain: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.violations

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "roundsChecked": self.rounds_checked,
            "roundsSettled": self.rounds_settled,
            "roundsVoided": self.rounds_voided,
            "roundsOpen": self.rounds_open,
            "roundsHeld": self.rounds_held,
            "roundsCancelled": self.rounds_cancelled,
            "fairnessVerified": self.fairness_verified,
            "fairnessCommitted": self.fairness_committed,
            "eventsReplayed": self.events_replayed,
            "itemsChecked": self.items_checked,
            "cashoutsChecked": self.cashouts_checked,
            "boxRoundsChecked": self.box_rounds_checked,
            "reelsVerified": self.reels_verified,
            "openRollbacks": self.open_rollbacks,
            "escalatedRollbacks": self.escalated_rollbacks,
            "openCancelCredits": self.open_cancel_credits,
            "heldRounds": self.held_rounds,
            "chain": self.chain,
            "seconds": round(self.seconds, 3),
            "violations": [v.as_json() for v in self.violations],
        }


@dataclass(frozen=True)
class AuditScope:
    """Which rounds and items are checked (the log is always replayed whole)."""

    operator_id: str | None = None
    player: str | None = None
    since: float | None = None  # rounds opened / items granted at or after (epoch seconds)

    def covers(self, operator_id: str, player: str, at: float | None) -> bool:
        if self.operator_id is not None and operator_id != self.operator_id:
            return False
        if self.player is not None and player != self.player:
            return False
        return self.since is None or at is None or at >= self.since


def parse_since(text: str) -> float:
    """An ISO date or date-time (UTC unless it names an offset) as epoch seconds."""
    moment = datetime.fromisoformat(text.strip())
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


# -- replay state -------------------------------------------------------------------------

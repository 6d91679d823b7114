"""One claim checked by ``upgrader verify`` (a round's roll, a box draw): what was
claimed, what the recomputation gave, and how the check reads and prints."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


def show(value: Any) -> str:
    """A claimed or recomputed value as the report prints it (a win flag as win/loss)."""
    if isinstance(value, bool):
        return "win" if value else "loss"
    return str(value)


@dataclass(frozen=True, slots=True)
class Check:
    claim: str
    ok: bool
    claimed: Any
    recomputed: Any

    def line(self) -> str:
        if self.ok:
            return f"ok: {self.claim} matches ({show(self.recomputed)})"
        return (
            f"MISMATCH: {self.claim}: claimed {show(self.claimed)}, "
            f"recomputed {show(self.recomputed)}"
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "claim": self.claim,
            "ok": self.ok,
            "claimed": self.claimed,
            "recomputed": self.recomputed,
        }

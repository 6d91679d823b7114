"""The auditor's checks of a round's money saga (debit attempts, rollbacks, voids) and of
its outcome (the settle: roll, win, payout, Nuggets, the won item)."""

from __future__ import annotations

from typing import Any

from application.audit.boxes import BoxChecks
from application.audit.replay import OPENING_KEPT, SETTLEMENT_KEPT, _Round
from domain.fairness import ROLL_SPACE
from domain.wallet_attempts import (
    DEBIT,
    DEBITED,
    IN_FLIGHT,
    REFUSED,
    ROLLED_BACK,
    UNCERTAIN,
)


def _moves(entry: dict[str, Any], to: str) -> bool:
    """Whether the debit attempt ``entry`` may move to ``to``: the domain's one table
    (``domain/wallet_attempts.py``), which the round itself obeys."""
    return entry["state"] in DEBIT.reached_from[to]


class MoneyChecks(BoxChecks):
    # -- rounds: the money saga -----------------------------------------------------------------

    def _attempt(self, r: _Round, attempt: int, position: int) -> dict[str, Any] | None:
        entry = r.attempts.get(attempt)
        if entry is None:
            self._round(
                r, "debit", f"event {position} names debit attempt {attempt}, never attempted"
            )
        return entry

    def _debit_attempted(self, event: Any, position: int) -> None:
        r = self._known_round(event, position)
        if r is None:
            return
        o = r.opening
        if r.status != "open" or event.attempt in r.attempts:
            self._round(r, "debit", f"debit attempt {event.attempt} on a {r.status} round")
        r.attempts[event.attempt] = {
            "state": IN_FLIGHT,
            "key": event.idempotency_key,
            "amount": event.amount_minor,
            "escalated": False,
        }
        if o["mode"] != "balance":
            self._round(r, "debit", "a wallet debit in an items-mode round")
        if event.amount_minor != o["wager_minor"] or event.currency != o["currency"]:
            self._round(
                r,
                "bet",
                f"debit attempt {event.attempt} asked {event.amount_minor} {event.currency}, "
                f"the round's bet is {o['wager_minor']} {o['currency']}",
            )
        if event.idempotency_key != f"{r.public_id}:{event.attempt}":
            self._round(r, "debit", f"debit attempt {event.attempt} has a foreign key")

    def _debit_uncertain(self, event: Any, position: int) -> None:
        r = self._known_round(event, position)
        entry = r and self._attempt(r, event.attempt, position)
        if r is None or entry is None:
            return
        if not _moves(entry, UNCERTAIN):
            self._round(
                r, "debit", f"attempt {event.attempt} turned uncertain from {entry['state']}"
            )
        entry["state"] = UNCERTAIN

    def _rolled_back(self, event: Any, position: int) -> None:
        r = self._known_round(event, position)
        entry = r and self._attempt(r, event.attempt, position)
        if r is None or entry is None:
            return
        if not _moves(entry, ROLLED_BACK):
            self._round(
                r,
                "debit",
                f"attempt {event.attempt} was rolled back while {entry['state']}, not uncertain",
            )
        entry["state"] = ROLLED_BACK

    def _escalated(self, event: Any, position: int) -> None:
        r = self._known_round(event, position)
        entry = r and self._attempt(r, event.attempt, position)
        if r is None or entry is None:
            return
        entry["escalated"] = True

    def _debited(self, event: Any, position: int) -> None:
        r = self._known_round(event, position)
        entry = r and self._attempt(r, event.attempt, position)
        if r is None or entry is None:
            return
        if not _moves(entry, DEBITED) or r.status != "open":
            self._round(
                r,
                "debit",
                f"attempt {event.attempt} accepted while {entry['state']} (round {r.status})",
            )
        entry["state"] = DEBITED

    def _voided(self, event: Any, position: int) -> None:
        r = self._known_round(event, position)
        entry = r and self._attempt(r, event.attempt, position)
        if r is None:
            return
        if r.status != "open" or (entry is not None and not _moves(entry, REFUSED)):
            self._round(r, "round_state", f"voided while {r.status}")
        if entry is not None:
            entry["state"] = REFUSED
        r.status = "voided"
        r.opening = {key: r.opening.get(key) for key in OPENING_KEPT}

    # -- rounds: the outcome ---------------------------------------------------------------------

    def _settled(self, event: Any, position: int) -> None:
        r = self._known_round(event, position)
        if r is None:
            return
        if r.status != "open":
            self._round(r, "round_state", f"settled while {r.status}")
            return
        r.status = "settled"
        s = event.settlement
        r.settlement = {key: s.get(key) for key in SETTLEMENT_KEPT}
        o = r.opening
        r.opening = {key: o.get(key) for key in OPENING_KEPT}  # memory: keep what is used later
        if r.box is not None:
            self._box_settled(r, o, s)
        if not r.in_scope:
            return
        debited = [a for a, e in r.attempts.items() if e["state"] == "debited"]
        if o["mode"] == "balance" and len(debited) != 1:
            self._round(
                r,
                "debit_missing",
                "a balance-mode round settled without an accepted debit of its bet"
                if not debited
                else f"a balance-mode round settled with {len(debited)} accepted debits",
            )
        if o["mode"] == "items" and r.attempts:
            self._round(r, "debit", "an items-mode round settled after a wallet debit")
        if r.box is not None:
            return  # its draws: audit/boxes.py
        rolled = s["rolled_bps"]
        chance = o["chance_bps"]
        if not isinstance(rolled, int) or not 0 <= rolled < ROLL_SPACE:
            self._round(r, "roll", f"rolled {rolled!r} is not in 0..{ROLL_SPACE - 1}")
            return
        won = rolled < chance
        if s["is_win"] is not won:
            self._round(
                r,
                "outcome",
                f"isWin {s['is_win']} recorded, but rolled {rolled} "
                f"{'<' if won else '>='} chance {chance}",
            )
        payout = o["target"]["value_minor"] if s["is_win"] else 0
        if s["payout_minor"] != payout:
            self._round(
                r, "payout", f"payout {s['payout_minor']} recorded, the rules give {payout}"
            )
        nuggets = o["wager_minor"] if (o["no_loss"] and not s["is_win"]) else 0
        if (s.get("nuggets_minor") or 0) != nuggets:
            self._round(
                r, "nuggets", f"Nuggets {s.get('nuggets_minor')} recorded, the rules give {nuggets}"
            )
        won_item = s.get("won_item")
        if s["is_win"] and (won_item is None or won_item.get("item_id") != o["target"]["item_id"]):
            self._round(r, "payout", "a win whose won item is not the target")
        if not s["is_win"] and won_item is not None:
            self._round(r, "payout", "a loss that names a won item")

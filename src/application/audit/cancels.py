"""The auditor's checks of cancels (decisions §11): a settled balance-mode round held,
every item it granted cancelled with it (and nothing else), its bet credited back in
attempts of the ``CREDIT`` machine (``domain/wallet_attempts.py``) keyed
``{publicId}:cancel:{attempt}``, at most one of them accepted, and only then cancelled.

What the money check counts: a cancelled round's bet came back through exactly one
accepted credit of that bet, so the wallet's net money of a round is its debit minus that
credit; held rounds whose credit is being confirmed are listed (``openCancelCredits``),
held rounds whose credit the wallet refused too (``heldRounds``), never as violations."""

from __future__ import annotations

from typing import Any

from application.audit.replay import Replay, _Item, _Round
from domain.wallet_attempts import CREDIT, CREDITED, IN_FLIGHT, REFUSED, UNCERTAIN


class CancelChecks(Replay):
    def _cancel_attempt(self, r: _Round, event: Any, position: int) -> dict[str, Any] | None:
        entry = r.cancel_attempts.get(event.attempt)
        if entry is None:
            self._round(
                r, "cancel", f"event {position} names cancel attempt {event.attempt}, never made"
            )
        return entry

    def _cancel_move(self, r: _Round, entry: dict[str, Any], attempt: int, to: str) -> None:
        if entry["state"] not in CREDIT.reached_from[to]:
            self._round(r, "cancel", f"cancel attempt {attempt} became {to} from {entry['state']}")
        entry["state"] = to

    def _round_held(self, event: Any, position: int) -> None:
        r = self._known_round(event, position)
        if r is None:
            return
        if r.status != "settled" or r.opening.get("mode") != "balance":
            self._round(r, "cancel", f"a {r.status} {r.opening.get('mode')} round was held")
        r.status = "held"

    def _cancel_attempted(self, event: Any, position: int) -> None:
        r = self._known_round(event, position)
        if r is None:
            return
        under_way = [e for e in r.cancel_attempts.values() if e["state"] in (IN_FLIGHT, UNCERTAIN)]
        if r.status != "held" or under_way or event.attempt in r.cancel_attempts:
            self._round(r, "cancel", f"cancel attempt {event.attempt} on a {r.status} round")
        o = r.opening
        if (event.amount_minor, event.currency) != (o["wager_minor"], o["currency"]):
            self._round(
                r,
                "cancel",
                f"cancel attempt {event.attempt} credits {event.amount_minor} {event.currency}, "
                f"the round's bet is {o['wager_minor']} {o['currency']}",
            )
        if event.idempotency_key != f"{r.public_id}:cancel:{event.attempt}":
            self._round(r, "cancel", f"cancel attempt {event.attempt} has a foreign key")
        r.cancel_attempts[event.attempt] = {
            "state": IN_FLIGHT,
            "key": event.idempotency_key,
            "amount": event.amount_minor,
        }

    def _cancel_uncertain(self, event: Any, position: int) -> None:
        r = self._known_round(event, position)
        entry = r and self._cancel_attempt(r, event, position)
        if r is not None and entry is not None:
            self._cancel_move(r, entry, event.attempt, UNCERTAIN)

    def _cancel_refused(self, event: Any, position: int) -> None:
        r = self._known_round(event, position)
        entry = r and self._cancel_attempt(r, event, position)
        if r is not None and entry is not None:
            self._cancel_move(r, entry, event.attempt, REFUSED)

    def _round_cancelled(self, event: Any, position: int) -> None:
        r = self._known_round(event, position)
        entry = r and self._cancel_attempt(r, event, position)
        if r is None or entry is None:
            return
        if r.status != "held":
            self._round(r, "cancel", f"cancelled while {r.status}")
        self._cancel_move(r, entry, event.attempt, CREDITED)
        r.status = "cancelled"

    def _item_cancelled(self, event: Any, position: int) -> None:
        item: _Item | None = self.item_of.get(event.originator_id)
        if item is None:
            self._event("item_state", position, f"event {position} cancels an item never granted")
            return
        if item.grant.get("round_public_id") != event.round_public_id:
            self._item(item, "cancel", f"cancelled with {event.round_public_id}, not its round")
        r = self.by_public.get(event.round_public_id)
        if r is None or r.status != "held":
            self._item(item, "cancel", f"cancelled with {event.round_public_id}, not held")
        elif item.grant.get("round_public_id") == event.round_public_id:
            r.items_cancelled += 1
        self._resolve(item, "cancelled", f"cancelled with {event.round_public_id}")

    def _finish_cancel(self, r: _Round) -> None:
        """A held or cancelled round at the end of the log: its items all cancelled, its
        credit listed while it waits for the wallet or for a new cancel."""
        if r.items_cancelled != r.grants:
            self._round(
                r, "cancel", f"{r.grants} items granted, {r.items_cancelled} cancelled with it"
            )
        credited = [a for a, e in r.cancel_attempts.items() if e["state"] == CREDITED]
        if (r.status == "cancelled") != (len(credited) == 1) or len(credited) > 1:
            self._round(r, "cancel", f"{r.status} with {len(credited)} accepted credits")
        if r.status != "held" or not r.cancel_attempts:
            return
        attempt = max(r.cancel_attempts)
        entry = r.cancel_attempts[attempt]
        listed = {
            "round": r.public_id,
            "attempt": attempt,
            "creditKey": entry["key"],
            "amountMinor": entry["amount"],
            "currency": r.opening["currency"],
            "state": entry["state"],
        }
        if entry["state"] == REFUSED:
            self.report.held_rounds.append(listed)
        else:
            self.report.open_cancel_credits.append(listed)

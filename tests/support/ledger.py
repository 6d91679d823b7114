"""The money invariant, read from the event log: what settled rounds bet, and what
cancelled rounds got back."""

from __future__ import annotations

from typing import Any

from application.platform import Platform
from domain.round import Round


def settled_balance_bets(platform: Platform, operator_id: str) -> int:
    """Sum of betMinor over settled balance-mode rounds of one operator."""
    openings: dict = {}
    total = 0
    recorder = platform.events.recorder
    position = 0
    while True:
        batch = recorder.select_notifications(position + 1, 1000)
        if not batch:
            return total
        for notification in batch:
            if ":Round." not in notification.topic:
                continue
            event = platform.events.mapper.to_domain_event(notification)
            if isinstance(event, Round.Opened):
                openings[event.originator_id] = event.opening
            elif isinstance(event, Round.RoundSettled):
                opening = openings[event.originator_id]
                if opening["operator_id"] == operator_id and opening["mode"] == "balance":
                    total += opening["wager_minor"]
        position = batch[-1].id


def open_uncertain_attempts(platform: Platform) -> int:
    """Debit attempts still owed a rollback (or not yet answered), escalations aside."""
    with platform.db.transaction() as cur:
        cur.execute(
            "SELECT COUNT(*) FROM wallet_debit_attempts "
            "WHERE state IN ('uncertain', 'in_flight') AND escalated = 0"
        )
        return cur.fetchone()[0]


def cancelled_balance_bets(platform: Platform, operator_id: str) -> int:
    """Sum of betMinor over the rounds of one operator that a cancel completed
    (``RoundCancelled``): the bets the wallet must have credited back (decisions §11)."""
    openings: dict = {}
    total = 0
    recorder = platform.events.recorder
    position = 0
    while batch := recorder.select_notifications(position + 1, 1000):
        for notification in batch:
            if ":Round." not in notification.topic:
                continue
            event = platform.events.mapper.to_domain_event(notification)
            if isinstance(event, Round.Opened):
                openings[event.originator_id] = event.opening
            elif isinstance(event, Round.RoundCancelled):
                opening = openings[event.originator_id]
                if opening["operator_id"] == operator_id:
                    total += opening["wager_minor"]
        position = batch[-1].id
    return total


def cancel_credits(ledger: Any, operator_id: str) -> dict[str, int]:
    """The cancel credits the wallet applied for one operator: idempotency key -> amount
    (a key the wallet answered twice counts once: it moved the money once)."""
    return {
        r.idempotency_key: r.body["amountMinor"]
        for r in ledger.requests_of("wallet.credit")
        if r.operator_id == operator_id
        and r.body.get("reason") == "cancel"
        and (r.answer or {}).get("accepted") is True
    }


def open_cancel_credits(platform: Platform) -> int:
    """Cancel credits of held rounds still waiting for the wallet's answer."""
    with platform.db.transaction() as cur:
        cur.execute(
            "SELECT COUNT(*) FROM wallet_cancel_credits WHERE state IN ('uncertain', 'in_flight')"
        )
        return cur.fetchone()[0]

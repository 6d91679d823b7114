"""The money invariant, read from the event log: what settled rounds bet."""

from __future__ import annotations

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

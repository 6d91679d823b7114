"""The analyst rows computed from events: a settled round's fact row, what it adds to
its day, an item movement's flow row (``analytics.py`` writes them)."""

from __future__ import annotations

import json
from typing import Any

from domain.hash_chain import utc_day

BPS = 10000


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def round_fact(opening: dict[str, Any], settlement: dict[str, Any]) -> dict[str, Any]:
    """The fact-table row of one settled round (also used by tests and the report)."""
    won = settlement.get("won_item") or {}
    no_loss = bool(opening["no_loss"])
    return {
        "public_id": opening["public_id"],
        "operator_id": opening["operator_id"],
        "player_external_id": opening["player_external_id"],
        "mode": opening["mode"],
        "currency": opening["currency"],
        "currency_exponent": opening["currency_exponent"],
        "base_currency": opening["base_currency"],
        "fx_rate": opening["fx_rate"],
        "bet_minor": opening["wager_minor"],
        "payout_minor": settlement["payout_minor"],
        "chance_bps": opening["chance_bps"],
        "fee_bps": opening["fee_bps"],
        "no_loss": 1 if no_loss else 0,
        "nuggets_cost_percent": opening["nuggets_cost_percent"] if no_loss else 0,
        "is_win": 1 if settlement["is_win"] else 0,
        "rolled_bps": settlement["rolled_bps"],
        "target_item_id": opening["target"]["item_id"],
        "target_value_minor": opening["target"]["value_minor"],
        "target_value_base_minor": opening["target_value_base_minor"],
        "nuggets_minor": settlement.get("nuggets_minor") or 0,
        "won_inventory_item_id": won.get("inventory_item_id"),
        "opened_at": float(opening["opened_at"]),
        "settled_at": float(settlement["settled_at"]),
        "settled_day": utc_day(settlement["settled_at"]),
    }


def daily_increments(fact: dict[str, Any]) -> dict[str, int]:
    """What one fact row adds to its ``analytics_daily`` row (all integers)."""
    bet, fee, chance = fact["bet_minor"], fact["fee_bps"], fact["chance_bps"]
    c = fact["nuggets_cost_percent"]
    return {
        "rounds": 1,
        "wins": fact["is_win"],
        "wagered_minor": bet,
        "paid_out_minor": fact["payout_minor"],
        "ggr_minor": bet - fact["payout_minor"],
        "nuggets_minor": fact["nuggets_minor"],
        "nuggets_cost_pct_minor": fact["nuggets_minor"] * c,
        "expected_paid_bps_minor": chance * fact["target_value_minor"],
        "theoretical_return_bps_minor": bet * (BPS - fee),
        "theoretical_item_return_ppm_minor": bet * ((BPS - fee) * 100 - (BPS - chance) * c),
    }


def _flow_row(
    position: int,
    aggregate_id: str,
    grant: dict[str, Any],
    movement: str,
    amount: int | None,
    amount_currency: str | None,
    reference: str | None,
    at: float,
) -> tuple[Any, ...]:
    """An ``analytics_item_flows`` row in ``FLOW_COLUMNS`` order (``Analytics._flow`` and the
    history bench write it)."""
    return (
        position,
        grant["inventory_item_id"],
        aggregate_id,
        grant["operator_id"],
        grant["player_external_id"],
        grant["item_id"],
        movement,
        grant["value_minor"],
        grant["currency"],
        grant["grant_value_base_minor"],
        grant["base_currency"],
        amount,
        amount_currency,
        reference,
        at,
        utc_day(at),
    )

"""Reading the analyst tables: ``upgrader report``'s GGR and RTP rows."""

from __future__ import annotations

from typing import Any

from projections.analytics_facts import BPS
from projections.analytics_tables import DAILY_SUMS

REPORT_KEY = ("operator_id", "currency", "chance_bps")


def report_rows(
    db: Any,
    day_from: str,
    day_to: str,
    operator_id: str | None = None,
    by_mode: bool = False,
) -> list[dict[str, Any]]:
    """GGR and RTP per operator, currency and chance preset (and mode) over [from, to]."""
    key = (*REPORT_KEY, "mode") if by_mode else REPORT_KEY
    sums = DAILY_SUMS
    where = "day >= ? AND day <= ?"
    params: list[Any] = [day_from, day_to]
    if operator_id is not None:
        where += " AND operator_id = ?"
        params.append(operator_id)
    select = ", ".join((*key, "MAX(currency_exponent)", *(f"SUM({s})" for s in sums)))
    with db.transaction() as cur:
        cur.execute(
            f"SELECT {select} FROM analytics_daily WHERE {where} "  # noqa: S608
            f"GROUP BY {', '.join(key)} ORDER BY {', '.join(key)}",
            tuple(params),
        )
        fetched = cur.fetchall()
    rows = []
    for record in fetched:
        row = dict(zip(key, record[: len(key)], strict=True))
        row["currency_exponent"] = int(record[len(key)])
        row.update(
            {name: int(value) for name, value in zip(sums, record[len(key) + 1 :], strict=True)}
        )
        wagered = row["wagered_minor"]
        row["realised_rtp"] = row["paid_out_minor"] / wagered if wagered else None
        row["realised_rtp_with_nuggets"] = (
            (row["paid_out_minor"] + row["nuggets_cost_pct_minor"] / 100) / wagered
            if wagered
            else None
        )
        row["expected_rtp"] = row["expected_paid_bps_minor"] / BPS / wagered if wagered else None
        row["theoretical_rtp"] = (
            row["theoretical_return_bps_minor"] / BPS / wagered if wagered else None
        )
        row["theoretical_item_rtp"] = (
            row["theoretical_item_return_ppm_minor"] / 1_000_000 / wagered if wagered else None
        )
        rows.append(row)
    return rows

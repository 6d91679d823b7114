"""Reading the analyst tables: ``upgrader report``'s GGR and RTP rows (per Upgrader
preset, per game, per box)."""

from __future__ import annotations

from typing import Any

from projections.analytics_boxes import BOX_SUMS, GAME_SUMS
from projections.analytics_facts import BPS
from projections.analytics_tables import DAILY_SUMS

GAME_REPORT_KEY = ("operator_id", "currency", "game")  # game_rows' groups (+ "mode")
BOX_REPORT_KEY = ("operator_id", "currency", "box_id", "box_version_id")  # box_rows' groups

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
    params: list[Any] = [day_from, day_to]
    if operator_id is not None:
        params.append(operator_id)
    sql = grouped_sql(
        "analytics_daily", key, ("currency_exponent",), sums, by_operator=operator_id is not None
    )
    with db.transaction() as cur:
        cur.execute(sql, tuple(params))
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


def grouped_sql(
    table: str,
    key: tuple[str, ...],
    fixed: tuple[str, ...],
    sums: tuple[str, ...],
    *,
    by_operator: bool,
) -> str:
    """The statement of :func:`_grouped` (parameters: day from, day to[, operator])."""
    where = "day >= ? AND day <= ?" + (" AND operator_id = ?" if by_operator else "")
    select = ", ".join((*key, *(f"MAX({f})" for f in fixed), *(f"SUM({s})" for s in sums)))
    return (
        f"SELECT {select} FROM {table} WHERE {where} "  # noqa: S608 - our own names
        f"GROUP BY {', '.join(key)} ORDER BY {', '.join(key)}"
    )


def _grouped(
    db: Any,
    table: str,
    key: tuple[str, ...],
    fixed: tuple[str, ...],
    sums: tuple[str, ...],
    day_from: str,
    day_to: str,
    operator_id: str | None,
) -> list[dict[str, Any]]:
    """``sums`` of ``table`` per ``key`` over [from, to] (``fixed``: one value per key)."""
    params: list[Any] = [day_from, day_to]
    if operator_id is not None:
        params.append(operator_id)
    sql = grouped_sql(table, key, fixed, sums, by_operator=operator_id is not None)
    with db.transaction() as cur:
        cur.execute(sql, tuple(params))
        fetched = cur.fetchall()
    names = (*key, *fixed, *sums)
    rows = []
    for record in fetched:
        row = dict(zip(names, record, strict=True))
        for name in sums:
            row[name] = int(row[name])
        rows.append(row)
    return rows


def _ratio(part: int, whole: int, scale: int = 1) -> float | None:
    return part / scale / whole if whole else None


def game_rows(
    db: Any,
    day_from: str,
    day_to: str,
    operator_id: str | None = None,
    by_mode: bool = False,
) -> list[dict[str, Any]]:
    """Rounds, wagered, paid out, GGR and realised RTP per operator, currency and game
    (and mode) over [from, to], from ``analytics_game_daily``."""
    key = (*GAME_REPORT_KEY, *(("mode",) if by_mode else ()))
    rows = _grouped(
        db,
        "analytics_game_daily",
        key,
        ("currency_exponent",),
        GAME_SUMS,
        day_from,
        day_to,
        operator_id,
    )
    for row in rows:
        row["currency_exponent"] = int(row["currency_exponent"])
        row["realised_rtp"] = _ratio(row["paid_out_minor"], row["wagered_minor"])
    return rows


def box_rows(
    db: Any, day_from: str, day_to: str, operator_id: str | None = None
) -> list[dict[str, Any]]:
    """Per operator, currency, box and version over [from, to], from
    ``analytics_box_daily``: rounds, boxes opened, wagered, paid out, GGR, realised RTP
    against the table's expected one, and realised cash-back RTP against ``rtpBps``."""
    rows = _grouped(
        db,
        "analytics_box_daily",
        BOX_REPORT_KEY,
        ("currency_exponent",),
        BOX_SUMS,
        day_from,
        day_to,
        operator_id,
    )
    for row in rows:
        row["currency_exponent"] = int(row["currency_exponent"])
        row["box_id"], row["box_version_id"] = int(row["box_id"]), int(row["box_version_id"])
        wagered, base = row["wagered_minor"], row["wagered_base_minor"]
        row["realised_rtp"] = _ratio(row["paid_out_minor"], wagered)
        row["expected_rtp"] = _ratio(row["expected_return_bps_minor"], wagered, BPS)
        row["realised_cashback_rtp"] = _ratio(row["won_cashback_bps_base_minor"], base, BPS)
        row["theoretical_rtp"] = _ratio(row["theoretical_return_bps_minor"], wagered, BPS)
    return rows

"""``upgrader report``'s game and box parts: the rows per game and per box as tables, CSV
and the box plot (``--box-plot FILE.png``); cli_report.py reads the rows and calls these.

Per game (``analytics_game_daily``): rounds, wagered, paid out, GGR, realised RTP. Per
box version (``analytics_box_daily``): rounds, boxes opened, wagered, paid out, GGR, the
realised RTP (won items' value / bet) against the table's expected one, and the realised
cash-back RTP (the won items' cash-back value / price, base currency) against the
version's theoretical ``rtpBps``. See docs/analytics.md.
"""

from __future__ import annotations

import csv
import io
import logging
from decimal import Decimal
from typing import Any

GAME_CSV = (
    "operator_id",
    "currency",
    "game",
    "mode",
    "rounds",
    "wagered_minor",
    "paid_out_minor",
    "ggr_minor",
    "realised_rtp",
)
BOX_CSV = (
    "operator_id",
    "currency",
    "box_id",
    "box_version_id",
    "rounds",
    "opens",
    "wagered_minor",
    "paid_out_minor",
    "ggr_minor",
    "realised_rtp",
    "expected_rtp",
    "realised_cashback_rtp",
    "theoretical_rtp",
)


def _major(minor: int, exponent: int) -> str:
    return f"{Decimal(minor).scaleb(-exponent):,.{exponent}f}"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.2f}%"


def rows_csv(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> str:
    """CSV of ``rows`` (minor units, ratios to six decimals); a column a row lacks is
    empty (``mode`` without ``--by-mode``)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        cells = []
        for column in columns:
            value = row.get(column)
            if isinstance(value, float):
                value = f"{value:.6f}"
            cells.append("" if value is None else value)
        writer.writerow(cells)
    return out.getvalue()


def print_games(console: Any, rows: list[dict[str, Any]], day_from: str, day_to: str) -> None:
    from rich.table import Table

    by_mode = any("mode" in row for row in rows)
    table = Table(title=f"GGR and RTP per game, {day_from} to {day_to} (UTC settle days)")
    headers = ["operator", "currency", "game", *(["mode"] if by_mode else [])]
    headers += ["rounds", "wagered", "paid out", "GGR", "RTP"]
    for header in headers:
        justify = "left" if header in ("operator", "game", "mode") else "right"
        table.add_column(header, justify=justify, overflow="fold")
    for row in rows:
        exponent = row["currency_exponent"]
        cells = [row["operator_id"], row["currency"], row["game"]]
        if by_mode:
            cells.append(row["mode"])
        cells += [
            str(row["rounds"]),
            _major(row["wagered_minor"], exponent),
            _major(row["paid_out_minor"], exponent),
            _major(row["ggr_minor"], exponent),
            _ratio(row["realised_rtp"]),
        ]
        table.add_row(*cells)
    console.print(table)


def print_boxes(console: Any, rows: list[dict[str, Any]], day_from: str, day_to: str) -> None:
    from rich.table import Table

    table = Table(title=f"Boxes: opens and RTP per version, {day_from} to {day_to}")
    headers = ["operator", "currency", "box", "version", "rounds", "opened", "wagered"]
    headers += ["paid out", "GGR", "RTP", "expected", "cash-back RTP", "theoretical"]
    for header in headers:
        table.add_column(header, justify="left" if header == "operator" else "right")
    for row in rows:
        exponent = row["currency_exponent"]
        table.add_row(
            row["operator_id"],
            row["currency"],
            str(row["box_id"]),
            str(row["box_version_id"]),
            str(row["rounds"]),
            str(row["opens"]),
            _major(row["wagered_minor"], exponent),
            _major(row["paid_out_minor"], exponent),
            _major(row["ggr_minor"], exponent),
            _ratio(row["realised_rtp"]),
            _ratio(row["expected_rtp"]),
            _ratio(row["realised_cashback_rtp"]),
            _ratio(row["theoretical_rtp"]),
        )
    console.print(table)
    console.print(
        "RTP = the value of the items won / the price paid, expected = the same from the "
        "odds table; cash-back RTP = what the items won would pay back / the price (base "
        "currency), theoretical = the version's rtpBps. See docs/analytics.md.",
        highlight=False,
    )


def write_box_plot(rows: list[dict[str, Any]], path: str, day_from: str, day_to: str) -> None:
    """Two panels, one bar pair per box version and currency: realised against expected
    RTP (items' value), and realised cash-back RTP against the theoretical rtpBps."""
    import matplotlib

    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, panels = plt.subplots(1, 2, figsize=(11, 5.5), dpi=100, sharey=True)
    labels = [
        f"{r['operator_id']} box {r['box_id']} v{r['box_version_id']} {r['currency']}"
        f"\n{r['opens']} opened"
        for r in rows
    ]
    x = list(range(len(rows)))
    width = 0.38
    for axes, (realised, theory, title) in zip(
        panels,
        (
            ("realised_rtp", "expected_rtp", "items' value: realised vs expected"),
            ("realised_cashback_rtp", "theoretical_rtp", "cash-back: realised vs rtpBps"),
        ),
        strict=True,
    ):
        axes.bar(
            [i - width / 2 for i in x],
            [100 * (r[realised] or 0) for r in rows],
            width,
            label="realised",
        )
        axes.bar(
            [i + width / 2 for i in x],
            [100 * (r[theory] or 0) for r in rows],
            width,
            label="expected" if theory == "expected_rtp" else "theoretical (rtpBps)",
            alpha=0.6,
        )
        axes.set_title(title)
        axes.set_xticks(x, labels, fontsize=7, rotation=20, ha="right")
        axes.grid(True, axis="y", alpha=0.3)
        if rows:
            axes.legend(fontsize=8)
        else:
            axes.text(0.5, 0.5, "no box rounds", ha="center", transform=axes.transAxes)
    panels[0].set_ylabel("RTP (%)")
    figure.suptitle(f"Box RTP per version, {day_from} to {day_to}")
    figure.tight_layout()
    figure.savefig(path, format="png")
    plt.close(figure)

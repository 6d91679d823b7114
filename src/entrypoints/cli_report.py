"""``upgrader report``: GGR and RTP per operator, currency and chance preset, per game
and per box version, for a period.

    upgrader report [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--operator ID] [--by-mode]
                    [--csv [FILE]] [--rows presets|games|boxes] [--plot FILE.png]
                    [--box-plot FILE.png] [--no-catch-up]
                    [--config FILE | --database-url URL]

Reads ``analytics_daily``, ``analytics_game_daily`` and ``analytics_box_daily`` (see
docs/analytics.md), after bringing the ``analytics`` projection up to the log's head
(``--no-catch-up`` reads them as they are). Days are UTC days of the settle time, both
ends included; the default period is the 30 days up to today. On a terminal the report
is three tables (rich): the Upgrader's presets, the games, the box versions (each shown
when it has rows); ``--csv`` prints one of them as CSV (minor units, ratios to six
decimals) to stdout or FILE, the presets unless ``--rows`` names another; ``--plot FILE``
writes a PNG of realised against theoretical RTP per preset and ``--box-plot FILE`` one of
the box versions' realised against expected and theoretical RTP (cli_report_boxes.py;
both need matplotlib).
"""

from __future__ import annotations

import argparse
import csv
import io
import logging
import sys
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from entrypoints.cli_args import command, database_url

CSV_COLUMNS = (
    "operator_id",
    "currency",
    "chance_bps",
    "mode",
    "rounds",
    "wins",
    "wagered_minor",
    "paid_out_minor",
    "ggr_minor",
    "nuggets_minor",
    "realised_rtp",
    "realised_rtp_with_nuggets",
    "expected_rtp",
    "theoretical_rtp",
    "theoretical_item_rtp",
)


def _day(text: str) -> str:
    try:
        return date.fromisoformat(text).isoformat()
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a YYYY-MM-DD date: {text!r}") from None


def _period(args: argparse.Namespace) -> tuple[str, str]:
    day_to = args.to or datetime.now(UTC).date().isoformat()
    day_from = args.from_ or (date.fromisoformat(day_to) - timedelta(days=29)).isoformat()
    return day_from, day_to


def _major(minor: int, exponent: int) -> str:
    return f"{Decimal(minor).scaleb(-exponent):,.{exponent}f}"


def _ratio(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value * 100:.{digits}f}%"


def to_csv(rows: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in rows:
        cells = []
        for column in CSV_COLUMNS:
            value = row.get(column, "")
            if isinstance(value, float):
                value = f"{value:.6f}"
            cells.append("" if value is None else value)
        writer.writerow(cells)
    return out.getvalue()


def print_table(rows: list[dict[str, Any]], day_from: str, day_to: str, by_mode: bool) -> None:
    from rich.table import Table

    table = Table(title=f"Upgrader GGR and RTP, {day_from} to {day_to} (UTC settle days)")
    headers = ["operator", "currency", "preset"]
    if by_mode:
        headers.append("mode")
    headers += ["rounds", "wagered", "paid out", "GGR", "RTP", "theoretical", "expected"]
    for header in headers:
        justify = "left" if header in ("operator", "mode") else "right"
        table.add_column(header, justify=justify, overflow="fold")
    for row in rows:
        exponent = row["currency_exponent"]
        cells = [row["operator_id"], row["currency"], f"{row['chance_bps'] / 100:g}%"]
        if by_mode:
            cells.append(row["mode"])
        cells += [
            str(row["rounds"]),
            _major(row["wagered_minor"], exponent),
            _major(row["paid_out_minor"], exponent),
            _major(row["ggr_minor"], exponent),
            _ratio(row["realised_rtp"]),
            _ratio(row["theoretical_item_rtp"]),
            _ratio(row["expected_rtp"]),
        ]
        table.add_row(*cells)
    console = _console()
    if not rows:
        console.print(f"no settled rounds from {day_from} to {day_to}")
        return
    console.print(table)
    console.print(
        "RTP = the value of the items paid out / the amount wagered; theoretical = the "
        "RTP at the top of the target band, (10000 - fee) / 10000 less the Nuggets' part "
        "on no-loss; expected = the RTP expected for the targets the players chose. "
        "See docs/analytics.md.",
        highlight=False,
    )


def _console() -> Any:
    from rich.console import Console

    console = Console()
    if not console.is_terminal:  # piped: do not squeeze the table into 80 columns
        console = Console(width=140)
    return console


def write_plot(rows: list[dict[str, Any]], path: str, day_from: str, day_to: str) -> None:
    """Realised vs theoretical RTP per chance preset, one colour per operator and currency."""
    import matplotlib

    logging.getLogger("matplotlib").setLevel(logging.WARNING)  # no font-cache chatter
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        series.setdefault((row["operator_id"], row["currency"]), []).append(row)
    figure, axes = plt.subplots(figsize=(9, 5.5), dpi=100)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for index, ((operator, currency), points) in enumerate(sorted(series.items())):
        points = sorted(points, key=lambda p: p["chance_bps"])
        colour = colours[index % len(colours)]
        x = [p["chance_bps"] / 100 for p in points]
        axes.plot(
            x,
            [100 * (p["realised_rtp"] or 0) for p in points],
            marker="o",
            color=colour,
            label=f"{operator} {currency} realised",
        )
        axes.plot(
            x,
            [100 * (p["theoretical_item_rtp"] or 0) for p in points],
            linestyle="--",
            marker="_",
            markersize=14,
            color=colour,
            label=f"{operator} {currency} theoretical",
        )
        for p, xs in zip(points, x, strict=True):
            axes.annotate(
                f"n={p['rounds']}",
                (xs, 100 * (p["realised_rtp"] or 0)),
                textcoords="offset points",
                xytext=(4, 6),
                fontsize=7,
                color=colour,
            )
    axes.set_xlabel("chance preset (%)")
    axes.set_ylabel("RTP (%)")
    axes.set_title(f"Realised vs theoretical RTP per preset, {day_from} to {day_to}")
    axes.grid(True, alpha=0.3)
    if series:
        axes.legend(fontsize=8, loc="best")
    else:
        axes.text(0.5, 0.5, "no settled rounds", ha="center", transform=axes.transAxes)
    figure.tight_layout()
    figure.savefig(path, format="png")
    plt.close(figure)


def _run(args: argparse.Namespace) -> int:
    from application.audit.auditor import open_store
    from entrypoints import cli_report_boxes as boxes
    from projections.analytics import Analytics
    from projections.analytics_report import box_rows, game_rows, report_rows
    from projections.runner import ProjectionRunner

    day_from, day_to = _period(args)
    if day_from > day_to:
        print("upgrader report: --from is after --to", file=sys.stderr)
        return 2
    events, db = open_store(database_url(args))
    try:
        if args.no_catch_up:
            from application.platform import ensure_tables

            ensure_tables(db, [s for s in Analytics.schema if "CREATE TABLE" in s])
        else:
            ProjectionRunner(events, db, [Analytics()]).catch_up("analytics")
        rows = report_rows(db, day_from, day_to, args.operator, by_mode=args.by_mode)
        games = game_rows(db, day_from, day_to, args.operator, by_mode=args.by_mode)
        box_versions = box_rows(db, day_from, day_to, args.operator)
    finally:
        db.close()
        events.close()
    if args.csv is not None:
        text = {
            "presets": lambda: to_csv(rows),
            "games": lambda: boxes.rows_csv(games, boxes.GAME_CSV),
            "boxes": lambda: boxes.rows_csv(box_versions, boxes.BOX_CSV),
        }[args.rows]()
        if args.csv == "-":
            sys.stdout.write(text)
        else:
            Path(args.csv).write_text(text, encoding="utf-8")
            print(f"wrote {text.count(chr(10)) - 1} rows to {args.csv}")
    else:
        console = _console()
        if rows or not games:
            print_table(rows, day_from, day_to, args.by_mode)
        if games:
            boxes.print_games(console, games, day_from, day_to)
        if box_versions:
            boxes.print_boxes(console, box_versions, day_from, day_to)
    plots = ((args.plot, write_plot, rows), (args.box_plot, boxes.write_box_plot, box_versions))
    for path, write, shown in plots:
        if not path:
            continue
        try:
            write(shown, path, day_from, day_to)
        except ImportError:
            print(
                "upgrader report: plots need matplotlib (pip install matplotlib)", file=sys.stderr
            )
            return 2
        print(f"wrote the RTP plot to {path}", file=sys.stderr if args.csv == "-" else None)
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    parser = command(
        commands,
        "report",
        "GGR and RTP per operator, currency and chance preset, per game and per box",
        _run,
    )
    parser.add_argument(
        "--database-url",
        metavar="URL",
        help="the store to report on (default: the configuration's database_url)",
    )
    parser.add_argument(
        "--from",
        dest="from_",
        type=_day,
        metavar="YYYY-MM-DD",
        help="the first UTC settle day (default: 29 days before --to)",
    )
    parser.add_argument(
        "--to", type=_day, metavar="YYYY-MM-DD", help="the last UTC settle day (default: today)"
    )
    parser.add_argument("--operator", metavar="ID", help="only this operator")
    parser.add_argument("--by-mode", action="store_true", help="one row per mode as well")
    parser.add_argument(
        "--csv",
        nargs="?",
        const="-",
        metavar="FILE",
        help="CSV instead of the table, to stdout or FILE",
    )
    parser.add_argument(
        "--rows",
        choices=("presets", "games", "boxes"),
        default="presets",
        help="which rows --csv writes: the Upgrader's presets (default), games or box versions",
    )
    parser.add_argument("--plot", metavar="FILE", help="write a PNG of realised vs theoretical RTP")
    parser.add_argument(
        "--box-plot",
        metavar="FILE",
        help="write a PNG of each box version's realised vs expected and theoretical RTP",
    )
    parser.add_argument(
        "--no-catch-up",
        action="store_true",
        help="read the analytics tables as they are (do not apply newer events first)",
    )

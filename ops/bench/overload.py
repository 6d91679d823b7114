"""The load bench's issue-18 parts: first plays apart, open loop at multiples of the
measured peak, the money invariant after the run, the floor in the same run, and the
verdicts of issue 18's "must show"."""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

DEFAULT_MULTIPLES = (0.5, 2.0, 4.0)
# A sequential scan of a table this large in a run means an index is missing; smaller
# tables (an empty store's first minutes, the one-row tables) are cheaper scanned.
LARGE_SCAN = 1000


async def counted_loop(
    stats: Any,
    client: Any,
    concurrency: int,
    count: int,
    request: Callable[[int], Any],
    send: Callable[..., Any],
) -> Any:
    """Requests 0..count-1 once each, ``concurrency`` at a time (closed loop); one
    refused with 503 OVERLOADED is sent again after its Retry-After (1 s), so that each
    is played (the refusals are counted)."""
    numbers = iter(range(count))

    async def worker() -> None:
        for number in numbers:
            while True:
                started = time.perf_counter()
                outcome = await send(
                    stats, client, request, number, None, time.perf_counter, started
                )
                if outcome != "503 OVERLOADED":
                    break
                await asyncio.sleep(1.0)

    stats.started = time.time()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    stats.ended = time.time()
    return stats


def open_loop_rates(args: argparse.Namespace, peak: float | None) -> list[tuple[str, float]]:
    """(phase name, plays/s) of the open-loop phases: ``--rate`` when given, else the
    multiples of the closed-loop balance peak measured in this run."""
    if args.rate > 0:
        return [(f"balance @ {args.rate:g}/s", args.rate)]
    if not peak:
        return []
    return [
        (f"balance @ {m:g}x peak ({m * peak:.0f}/s)", m * peak)
        for m in args.rate_multiples
        if m * peak > 0
    ]


def _attempts(database_url: str, schema: str, since: float) -> tuple[int, int]:
    """(attempts still in flight or owed a rollback, wagers recorded as debited) of the
    debit attempts made since ``since``."""
    import psycopg

    from ops.bench.load import conninfo_of

    with psycopg.connect(conninfo_of(database_url), autocommit=True) as conn:
        row = conn.execute(
            "SELECT COUNT(*) FILTER (WHERE state IN ('in_flight', 'uncertain')), "  # noqa: S608
            "COALESCE(SUM(amount_minor) FILTER (WHERE state = 'debited'), 0) "
            f'FROM "{schema}".wallet_debit_attempts WHERE attempted_at >= %s',
            (since,),
        ).fetchone()
    return int(row[0]), int(row[1])


def wait_for_answers(database_url: str, schema: str, since: float, wait: float) -> None:
    """Until no debit attempt made since ``since`` is in flight or owed a rollback (the
    reconciler's work), for at most ``wait`` s."""
    deadline = time.monotonic() + wait
    while _attempts(database_url, schema, since)[0] and time.monotonic() < deadline:
        time.sleep(0.5)


def money_invariant(
    database_url: str, schema: str, net_debits: int | None, since: float
) -> dict[str, Any]:
    """The wallet's net debits against the wagers the platform recorded as debited, for
    the attempts made since ``since`` (exact only when none is left unanswered)."""
    open_, taken = _attempts(database_url, schema, since)
    return {
        "platform_debited_minor": taken,
        "open_attempts": open_,
        "wallet_net_debits_minor": net_debits,
        "exact": open_ == 0 and net_debits is not None and taken == net_debits,
    }


def floor_in_run(args: argparse.Namespace) -> dict[str, Any]:
    """The floor's ``play`` stage (ops/bench/floor.py) with this run's settings."""
    import tempfile

    from ops.bench.floor import run_stage

    floor_args = argparse.Namespace(
        database_url=args.database_url,
        workers=max(1, args.workers),
        concurrency=args.concurrency,
        duration=args.floor_seconds,
        warmup=3.0,
        pool=8,
        server="uvicorn",
    )
    with tempfile.TemporaryDirectory(prefix="upgrader-floor-") as tmp:
        return run_stage(floor_args, "play", Path(tmp))


def table_scans(database_url: str, schema: str) -> dict[str, list[int]]:
    """Per table of ``schema``: [sequential scans, rows they read, index scans] so far
    (PostgreSQL's own counters, no extension needed)."""
    import psycopg

    from ops.bench.load import conninfo_of

    with psycopg.connect(conninfo_of(database_url), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT relname, seq_scan, seq_tup_read, COALESCE(idx_scan, 0) "
            "FROM pg_stat_user_tables WHERE schemaname = %s",
            (schema,),
        ).fetchall()
    return {name: [int(a), int(b), int(c)] for name, a, b, c in rows}


def scans_during(before: dict[str, list[int]], after: dict[str, list[int]]) -> dict[str, Any]:
    """The tables sequentially scanned between two ``table_scans``, with how many rows
    those scans read (the statistics collector may lag by up to half a second)."""
    found = {}
    for name, (scans, rows, index) in after.items():
        then = before.get(name, [0, 0, 0])
        if rows - then[1] > 0:
            found[name] = {
                "seq_scans": scans - then[0],
                "rows_read": rows - then[1],
                "index_scans": index - then[2],
            }
    return found


def _phase(results: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    return [p for p in results.get("phases", []) if p["phase"].startswith(prefix)]


def platform_cpu(phase: dict[str, Any]) -> float | None:
    """CPU ms per request of every process group but the load generator."""
    cpu = phase.get("cpu_ms_per_request") or {}
    if cpu.get("total") is None:
        return None
    return round(cpu["total"] - (cpu.get("client") or 0.0), 2)


def verdicts(results: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(what issue 18 asks, what this run measured, met / MISSED / -) rows."""
    rows: list[tuple[str, str, str]] = []
    balance = next(iter(_phase(results, "balance plays")), None)
    peak = balance["per_second"] if balance else None
    opens = {round(p.get("multiple") or 0, 2): p for p in _phase(results, "balance @")}
    half, double, quadruple = opens.get(0.5), opens.get(2.0), opens.get(4.0)
    for multiple, phase in ((2.0, double), (4.0, quadruple)):
        if phase is None or not peak:
            rows.append((f"goodput at {multiple:g}x the peak >= 90 % of the peak", "-", "-"))
            continue
        share = phase["per_second"] / peak
        rows.append(
            (
                f"goodput at {multiple:g}x the peak >= 90 % of the peak",
                f"{phase['per_second']:.1f}/s = {100 * share:.0f} % of {peak:.1f}",
                "met" if share >= 0.9 else "MISSED",
            )
        )
        other = {k: v for k, v in phase["errors"].items() if not k.startswith(("429", "503"))}
        rows.append(
            (
                f"only 429/503 beyond the peak at {multiple:g}x",
                ", ".join(f"{k} x{v}" for k, v in sorted(phase["errors"].items())) or "none",
                "met" if not other else "MISSED",
            )
        )
    if half is not None and double is not None and half["p99_ms"] and double["p99_ms"]:
        ratio = double["p99_ms"] / half["p99_ms"]
        rows.append(
            (
                "p99 of accepted plays at 2x <= 3 x p99 at 0.5x",
                f"{double['p99_ms']:.0f} / {half['p99_ms']:.0f} ms = {ratio:.1f}x",
                "met" if ratio <= 3 else "MISSED",
            )
        )
    money = results.get("money")
    if money is not None:
        rows.append(
            (
                "money invariant exact after the run",
                f"platform {money['platform_debited_minor']}, wallet "
                f"{money['wallet_net_debits_minor']}, open {money['open_attempts']}",
                "met" if money["exact"] else "MISSED",
            )
        )
    scans = results.get("seq_scans")
    if scans is not None:
        read = {k: v["rows_read"] / max(1, v["seq_scans"]) for k, v in scans.items()}
        shown = {k: n for k, n in read.items() if n >= 10}
        rows.append(
            (
                f"no table of over {LARGE_SCAN:,} rows read whole (pg_stat_user_tables, whole run)",
                ", ".join(f"{k}: {n:,.0f} rows a scan" for k, n in shown.items())
                or "no scan read more than 10 rows",
                "met" if all(n < LARGE_SCAN for n in read.values()) else "MISSED",
            )
        )
    floor = results.get("floor")
    if floor and balance and floor.get("per_second"):
        rows.append(
            (
                "platform / floor (balance plays/s, same run)",
                f"{balance['per_second']:.1f} / {floor['per_second']:.1f} = "
                f"{balance['per_second'] / floor['per_second']:.3f}",
                "-",
            )
        )
    return rows


def history_rows(empty: dict[str, Any], past: dict[str, Any]) -> list[tuple[str, ...]]:
    """The phases of both sittings side by side: plays/s and CPU per play."""
    rows = []
    by_name = {p["phase"]: p for p in past.get("phases", [])}
    for phase in empty.get("phases", []):
        other = by_name.get(phase["phase"])
        if other is None or phase["kind"] != "closed":
            continue
        a, b = phase["per_second"], other["per_second"]
        ca, cb = platform_cpu(phase), platform_cpu(other)
        rate = f"{a:.1f} -> {b:.1f} ({100 * (b - a) / a:+.0f} %)" if a else "-"
        cpu = f"{ca} -> {cb} ({100 * (cb - ca) / ca:+.0f} %)" if ca and cb else "-"
        verdict = "-"
        if phase["phase"] == "balance plays" and a and ca and cb:
            verdict = "met" if b >= 0.9 * a and cb <= 1.1 * ca else "MISSED"
        rows.append((phase["phase"], rate, cpu, verdict))
    return rows


def print_issue18(results: dict[str, Any], empty: dict[str, Any] | None = None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=160)
    if empty is not None:
        table = Table(title=f"Empty store -> {results.get('history', 0):,} past rounds")
        for column in ("phase", "plays/s", "CPU ms per play (all but load generator)", "verdict"):
            table.add_column(column)
        for row in history_rows(empty, results):
            table.add_row(*row)
        console.print(table)
    table = Table(title="Issue 18: must show")
    for column in ("what", "measured", "verdict"):
        table.add_column(column)
    for row in verdicts(results):
        table.add_row(*row)
    console.print(table)

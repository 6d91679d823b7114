"""Operations commands: ``upgrader wallet pending`` and ``upgrader projections status|rebuild``.

``wallet pending`` lists the debits and credits the wallet has not confirmed: debits
in flight or uncertain (owed a rollback, with their retry state, and those escalated
after 24 h for a person), cash-back credits being re-sent, and the held rounds (decisions
§11): each one's cancel credit being confirmed (re-sent with the same key) or refused
(kind ``cancel``, state ``refused`` with the wallet's code: a new cancel retries it).
``projections status`` shows each read model's position, the log's head and the lag in
events and seconds; ``projections rebuild [NAME]`` replays the log into empty tables
(operational bookkeeping such as retry and delivery state is kept).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from application.clock import iso_utc
from application.config.load import load_config
from entrypoints.cli_args import command
from projections.wallet_cancels import HELD_ROUNDS


def _runtime(args: argparse.Namespace) -> Any:
    from application.platform import Platform
    from entrypoints.runtime import Runtime

    platform = Platform(load_config(args.config), pool_size=2)
    return Runtime(platform, workers=())


def _print_table(title: str, columns: list[str], rows: list[list[Any]], as_json: bool) -> None:
    if as_json:
        print(json.dumps([dict(zip(columns, row, strict=True)) for row in rows]))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*["" if v is None else str(v) for v in row])
    Console(file=sys.stdout).print(table)


# What the wallet has not confirmed: debits, cash-back credits, held rounds' cancel credits.
PENDING = (
    "SELECT 'debit', a.debit_key, a.amount_minor, a.currency, a.state, a.escalated, "  # noqa: S608
    "COALESCE(r.tries, 0), r.next_try_at, r.last_error, a.attempted_at "
    "FROM wallet_debit_attempts a LEFT JOIN wallet_retries r "
    "ON r.debit_key = a.debit_key WHERE a.state IN ('in_flight', 'uncertain') "
    "UNION ALL "
    "SELECT 'credit', c.credit_key, c.amount_minor, c.currency, c.state, 0, "
    "COALESCE(r.tries, 0), r.next_try_at, r.last_error, c.attempted_at "
    "FROM wallet_credit_attempts c LEFT JOIN wallet_retries r "
    "ON r.debit_key = c.credit_key WHERE c.state IN ('in_flight', 'uncertain') "
    "UNION ALL "
    "SELECT 'cancel', h.credit_key, h.amount_minor, h.currency, h.state, 0, "
    "COALESCE(r.tries, 0), r.next_try_at, COALESCE(r.last_error, h.error_code), "
    f"h.attempted_at FROM ({HELD_ROUNDS}) h LEFT JOIN wallet_retries r "
    "ON r.debit_key = h.credit_key "
    "ORDER BY 10"
)


def pending_wallet_operations(runtime: Any) -> list[list[Any]]:
    runtime.runner.catch_up("wallet_debit_attempts")
    runtime.runner.catch_up("wallet_credit_attempts")
    runtime.runner.catch_up("wallet_cancel_credits")
    with runtime.platform.db.transaction() as cur:
        cur.execute(PENDING)
        rows = cur.fetchall()
    return [
        [
            kind,
            key,
            amount,
            currency,
            "escalated" if escalated else state,
            tries,
            iso_utc(next_try) if next_try else None,
            error,
            iso_utc(at),
        ]
        for kind, key, amount, currency, state, escalated, tries, next_try, error, at in rows
    ]


WALLET_COLUMNS = [
    "kind",
    "key",
    "amountMinor",
    "currency",
    "state",
    "tries",
    "nextTryAt",
    "lastError",
    "attemptedAt",
]


def _moment(iso: str | None) -> str:
    """``2026-01-01T00:00:00.000Z`` as ``2026-01-01 00:00:00Z`` (a table cell's worth)."""
    return "-" if not iso else f"{iso[:10]} {iso[11:19]}Z"


def print_pending(rows: list[list[Any]]) -> None:
    """The wallet operations as a table that fits 80 columns: one row per operation, its
    key whole (to copy), when it was attempted, retried next and why on lines below. Only
    that column wraps, so the key is never cut."""
    if not rows:
        print("nothing pending: the wallet has confirmed every debit and credit")
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"Wallet operations awaiting the wallet ({len(rows)})", show_lines=True)
    table.add_column("operation", overflow="fold", min_width=max(len(r[1]) for r in rows))
    table.add_column("amount", justify="right", no_wrap=True)
    table.add_column("state", no_wrap=True)
    table.add_column("tries", justify="right", no_wrap=True)
    for kind, key, amount, currency, state, tries, next_try, error, at in rows:
        lines = [key, f"{kind}, attempted {_moment(at)}"]
        if next_try:
            lines.append(f"next try {_moment(next_try)}")
        if error:
            lines.append(f"last error: {error}")
        table.add_row("\n".join(lines), f"{amount} {currency}", state, str(tries))
    Console(file=sys.stdout, highlight=False).print(table)


def _wallet_pending(args: argparse.Namespace) -> int:
    runtime = _runtime(args)
    try:
        rows = pending_wallet_operations(runtime)
    finally:
        runtime.platform.close()
    if args.json:
        print(json.dumps([dict(zip(WALLET_COLUMNS, row, strict=True)) for row in rows]))
    else:
        print_pending(rows)
    return 0


def _projections(args: argparse.Namespace) -> int:
    from projections.runner import rebuild, status

    runtime = _runtime(args)
    try:
        if args.action == "rebuild":
            names = [args.name] if args.name else list(runtime.runner.projections)
            unknown = [n for n in names if n not in runtime.runner.projections]
            if unknown:
                print(
                    f"upgrader: no projection {unknown[0]!r}; one of "
                    f"{', '.join(runtime.runner.projections)}",
                    file=sys.stderr,
                )
                return 2
            for name in names:
                head = rebuild(runtime.runner, name)
                print(f"rebuilt {name} up to event {head}")
            return 0
        rows = status(runtime.runner, runtime.platform.clock.now())
        columns = ["name", "position", "head", "lag_events", "lag_seconds"]
        _print_table("Projections", columns, [[r[c] for c in columns] for r in rows], args.json)
        return 0
    finally:
        runtime.platform.close()


def register(commands: argparse._SubParsersAction) -> None:
    wallet = command(commands, "wallet", "wallet operations awaiting the wallet", _wallet_pending)
    wallet.add_argument(
        "what", choices=["pending"], help="pending: what the wallet has not confirmed yet"
    )
    wallet.add_argument("--json", action="store_true", help="print JSON rows")
    projections = command(commands, "projections", "read model status and rebuilds", _projections)
    projections.add_argument(
        "action",
        choices=["status", "rebuild"],
        help="status: each read model's position and lag; rebuild: replay the log into it",
    )
    projections.add_argument("name", nargs="?", help="with rebuild: one projection (default all)")
    projections.add_argument("--json", action="store_true", help="status as JSON rows")

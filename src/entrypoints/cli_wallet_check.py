"""``upgrader wallet-check [URL]``: check a wallet against the contract before going live.

    upgrader wallet-check https://wallet.example/wallet --secret env:OUTBOUND_SECRET \\
        --operator acme [--player ID] [--blocked-player ID] [--currency EUR]
    upgrader wallet-check --config platform.toml --operator acme     # URL, secret from it

It sends signed calls of every type, exactly as the platform does, and prints one row per
check (``application/wallet/check.py`` lists them and their rules). What it needs from
the operator:

- the wallet's URL and the outbound secret it verifies, and the ``operatorId`` it knows
  (or ``--config`` and ``--operator``: the operator's ``wallet_url``, ``outbound_secret``,
  base currency and ``wallet_timeout_seconds`` are read from the configuration);
- a test player that may be credited and debited (``--player``; by default a new
  ``wallet-check-<hex>`` player, which a wallet that creates players on first sight, as
  the reference wallet does, accepts). No funds are needed: it is credited first, and
  its balance is put back where it was at the end. Nothing else should move its money
  during the check;
- optionally a player the wallet blocks (``--blocked-player``): its debit must be refused
  ``PLAYER_BLOCKED``. Without one, that check is skipped.

Exit status: 0 when every check passes (skips included), 1 when any fails, 2 on a usage
error or when the URL cannot be reached at all.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import uuid
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from entrypoints.cli_args import command

if TYPE_CHECKING:
    from application.wallet.check import CheckResult, CheckSettings

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    pass


def _secret(text: str) -> str:
    if text.startswith("env:"):
        value = os.environ.get(text[4:])
        if not value:
            raise UsageError(f"--secret {text}: environment variable {text[4:]} is not set")
        return value
    return text


def settings_from(args: argparse.Namespace) -> CheckSettings:
    """The ``CheckSettings`` the arguments name (``UsageError`` when they do not)."""
    from application.wallet.check import CheckSettings

    url, currency, limit = args.url, args.currency, args.timeout
    if args.secret is not None:
        if not args.operator:
            raise UsageError("--secret needs --operator ID (the operatorId the wallet knows)")
        secret, operator_id = _secret(args.secret), args.operator
    else:
        from application.config.load import load_config

        config = load_config(getattr(args, "config", None))
        operators = {o.id: o for o in config.operators}
        if args.operator is None and len(operators) != 1:
            raise UsageError(f"name the operator: --operator one of {', '.join(operators)}")
        operator = operators.get(args.operator or next(iter(operators)))
        if operator is None:
            raise UsageError(f"no operator {args.operator!r} in the configuration")
        secret, operator_id = operator.outbound_secret, operator.id
        url = url or operator.wallet_url
        currency = currency or operator.base_currency
        limit = limit or config.service.wallet_timeout_seconds
    if not url:
        raise UsageError("no URL: give one, or an operator with a wallet_url")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"{url!r} is not an http(s) URL")
    if args.amount < 1:
        raise UsageError("--amount must be at least 1")
    if limit is not None and limit <= 0:
        raise UsageError("--timeout must be positive")
    return CheckSettings(
        url=url,
        secret=secret,
        operator_id=operator_id,
        player=args.player or f"wallet-check-{uuid.uuid4().hex[:12]}",
        currency=currency or "EUR",
        amount=args.amount,
        blocked_player=args.blocked_player,
        limit_seconds=limit or 10.0,
    )


def _print_table(settings: CheckSettings, results: list[CheckResult]) -> None:
    from rich.console import Console
    from rich.table import Table

    styles = {"pass": "green", "fail": "bold red", "skip": "yellow"}
    table = Table(
        title=f"wallet-check of {settings.url} "
        f"(operator {settings.operator_id}, player {settings.player})"
    )
    table.add_column("check", no_wrap=True)
    table.add_column("result", no_wrap=True)
    table.add_column("reason", overflow="fold")
    for result in results:
        table.add_row(result.name, f"[{styles[result.status]}]{result.status}[/]", result.reason)
    console = Console()
    console.print(table)
    counts = {s: sum(r.status == s for r in results) for s in styles}
    console.print(
        f"wallet-check: {counts['pass']} of {len(results)} checks pass, "
        f"{counts['fail']} fail, {counts['skip']} skipped",
        highlight=False,
    )


def _run(args: argparse.Namespace) -> int:
    from application.wallet.check import FAIL, Unreachable
    from application.wallet.check_steps import run_checks

    try:
        settings = settings_from(args)
    except UsageError as exc:
        print(f"upgrader wallet-check: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        results = asyncio.run(run_checks(settings))
    except Unreachable as exc:
        print(f"upgrader wallet-check: cannot reach {settings.url}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    failed = any(r.status == FAIL for r in results)
    if args.json:
        print(
            json.dumps(
                {
                    "url": settings.url,
                    "operatorId": settings.operator_id,
                    "player": settings.player,
                    "ok": not failed,
                    "checks": [
                        {"name": r.name, "status": r.status, "reason": r.reason} for r in results
                    ],
                }
            )
        )
    else:
        _print_table(settings, results)
    return EXIT_FAILED if failed else EXIT_OK


def register(commands: argparse._SubParsersAction) -> None:
    parser = command(
        commands,
        "wallet-check",
        "check an operator's wallet against the wallet contract before going live",
        _run,
    )
    parser.epilog = "exit status: 0 every check passes, 1 a check fails, 2 usage or unreachable"
    parser.add_argument(
        "url",
        nargs="?",
        metavar="URL",
        help="the wallet's URL (default: the operator's wallet_url in the configuration)",
    )
    parser.add_argument(
        "--secret",
        metavar="SECRET",
        help="the outbound secret the wallet verifies; env:VAR reads it from $VAR "
        "(default: the operator's outbound_secret in the configuration)",
    )
    parser.add_argument(
        "--operator",
        metavar="ID",
        help="the operatorId sent in every call (default: the configuration's only operator)",
    )
    parser.add_argument(
        "--player",
        metavar="ID",
        help="a test player the wallet may credit and debit (default: a new "
        "wallet-check-<hex> player, for wallets that create players on first sight)",
    )
    parser.add_argument(
        "--blocked-player",
        metavar="ID",
        help="a player whose debits the wallet refuses PLAYER_BLOCKED (else that check skips)",
    )
    parser.add_argument(
        "--currency",
        metavar="CODE",
        help="the currency of every call (default: the operator's base currency, or EUR)",
    )
    parser.add_argument(
        "--amount",
        type=int,
        default=100,
        metavar="MINOR",
        help="the amount each money call moves, in minor units (default 100)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="the time a call must be answered in (default: the configuration's "
        "wallet_timeout_seconds, 10 with --secret)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")

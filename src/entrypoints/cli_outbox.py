"""``upgrader outbox ...``: inspect and redeliver ``round_settled`` webhooks.

- ``upgrader outbox pending``: webhooks not delivered yet, in settle order.
- ``upgrader outbox dead``: webhooks given up after the retry horizon (72 h).
- ``upgrader outbox redeliver WEBHOOK_ID`` or ``--all-dead``: back to pending, due now,
  with a fresh retry horizon; a running server's dispatcher sends them within a second.

Prints ids, operators, players, attempts and the last error; never a payload, a URL or a
secret.
"""

from __future__ import annotations

import argparse
from typing import Any

from application.clock import iso_utc
from entrypoints.cli_args import command


def list_webhooks(db: Any, state: str, limit: int = 100) -> list[tuple[Any, ...]]:
    """(webhook_id, operator, player, state, attempts, next_attempt_at, last_error)."""
    with db.transaction() as cur:
        cur.execute(
            "SELECT o.webhook_id, o.operator_id, o.player_external_id, d.state, d.attempts, "
            "d.next_attempt_at, d.last_error FROM webhook_outbox o "
            "JOIN webhook_deliveries d ON d.webhook_id = o.webhook_id "
            "WHERE d.state = ? ORDER BY o.position LIMIT ?",
            (state, limit),
        )
        return [tuple(row) for row in cur.fetchall()]


EMPTY = {
    "pending": "nothing pending: every round_settled webhook was delivered",
    "dead": "no dead webhooks",
}


def _print_table(title: str, rows: list[tuple[Any, ...]]) -> None:
    """A table that fits 80 columns: the webhook id whole (to copy for ``redeliver``), and
    below it the operator and player, the next try and the last error. Only that column
    wraps, so the id is never cut."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, show_lines=True)
    table.add_column("webhook", overflow="fold", min_width=max(len(r[0]) for r in rows))
    table.add_column("tries", justify="right", no_wrap=True)
    for hook, op, player, _state, attempts, next_at, error in rows:
        lines = [hook, f"{op} / {player}", f"next try {iso_utc(next_at)}"]
        if error:
            lines.append(f"last error: {error}")
        table.add_row("\n".join(lines), str(attempts))
    Console(highlight=False).print(table)


def _open_platform(args: argparse.Namespace) -> Any:
    from application.config.load import load_config
    from application.platform import Platform, ensure_tables
    from projections.outbox import WebhookOutbox

    platform = Platform(load_config(args.config))
    # the tables only (no-ops when they exist): an index statement would lock the tables
    # against a running server's projection step
    tables = [s for s in WebhookOutbox.schema if s.lstrip().startswith("CREATE TABLE")]
    ensure_tables(platform.db, tables)
    return platform


def _list(args: argparse.Namespace) -> int:
    platform = _open_platform(args)
    try:
        rows = list_webhooks(platform.db, args.outbox_action, args.limit)
    finally:
        platform.close()
    if not rows:
        print(EMPTY[args.outbox_action])
    else:
        _print_table(f"{args.outbox_action.capitalize()} webhooks ({len(rows)} shown)", rows)
    return 0


def _redeliver(args: argparse.Namespace) -> int:
    from projections.dispatcher import redeliver

    platform = _open_platform(args)
    try:
        ids = redeliver(
            platform.db, platform.clock.now(), None if args.all_dead else args.webhook_id
        )
    finally:
        platform.close()
    if not ids and not args.all_dead:
        print(f"upgrader: no webhook {args.webhook_id!r}")
        return 1
    for hook_id in ids:
        print(f"requeued {hook_id}")
    print(f"{len(ids)} webhook(s) back to pending")
    return 0


def _run(args: argparse.Namespace) -> int:
    if args.outbox_action == "redeliver":
        return _redeliver(args)
    return _list(args)


def _config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        default=argparse.SUPPRESS,
        help="TOML configuration file (default: ops/demo/config.toml)",
    )


def register(commands: argparse._SubParsersAction) -> None:
    parser = command(commands, "outbox", "inspect and redeliver round_settled webhooks", _run)
    actions = parser.add_subparsers(dest="outbox_action", required=True)
    for name, help_text in (
        ("pending", "webhooks not delivered yet, in settle order"),
        ("dead", "webhooks given up after the retry horizon"),
    ):
        listing = actions.add_parser(name, help=help_text, description=help_text)
        _config_option(listing)
        listing.add_argument("--limit", type=int, default=100, help="rows to show (100)")
    again = actions.add_parser(
        "redeliver",
        help="put a webhook (or every dead one) back to pending",
        description="put a webhook (or every dead one) back to pending",
    )
    _config_option(again)
    which = again.add_mutually_exclusive_group(required=True)
    which.add_argument("webhook_id", nargs="?", help="the webhook's id")
    which.add_argument("--all-dead", action="store_true", help="every dead webhook")

"""The ``upgrader`` command: ``upgrader serve --config FILE`` and friends."""

from __future__ import annotations

import argparse
import logging
import sys

from application.config.load import load_config
from application.config.shape import ConfigError
from entrypoints import (
    cli_audit,
    cli_demo,
    cli_ops,
    cli_outbox,
    cli_report,
    cli_serve,
    cli_shipping,
    cli_verify,
    cli_wallet_check,
)
from entrypoints.cli_args import command, database_url
from entrypoints.cli_store import EXISTING_STORE_COMMANDS, store_problem, unreachable


def _check_config(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    print(f"ok: {len(config.operators)} operators, {len(config.catalog.items)} catalogue items")
    return 0


# Each module here has ``register(commands)``: one line per module keeps edits apart.
COMMAND_MODULES = [
    cli_serve,
    cli_ops,
    cli_verify,
    cli_outbox,
    cli_demo,
    cli_audit,
    cli_report,
    cli_shipping,
    cli_wallet_check,
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="upgrader", description="Upgrader game platform")
    parser.add_argument(
        "--config", default=None, help="TOML configuration file (default: ops/demo/config.toml)"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    command(commands, "check-config", "validate a configuration file and exit", _check_config)
    for module in COMMAND_MODULES:
        module.register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    args = build_parser().parse_args(argv)
    try:
        if args.command in EXISTING_STORE_COMMANDS:
            problem = store_problem(database_url(args))
            if problem is not None:
                print(f"upgrader {args.command}: {problem}", file=sys.stderr)
                return 2
        return args.run(args)
    except ConfigError as exc:
        print(f"upgrader: configuration error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        message = unreachable(exc)
        if message is None:
            raise
        print(f"upgrader {args.command}: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

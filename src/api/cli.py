"""The ``upgrader`` command: ``upgrader serve --config FILE`` and friends."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Callable

from application.config import ConfigError
from application.config_load import load_config


def _check_config(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    print(f"ok: {len(config.operators)} operators, {len(config.catalog.items)} catalogue items")
    return 0


def command(
    commands: argparse._SubParsersAction,
    name: str,
    help_text: str,
    run: Callable[[argparse.Namespace], int],
) -> argparse.ArgumentParser:
    """Add a subcommand that also takes --config (before or after its name)."""
    parser = commands.add_parser(name, help=help_text, description=help_text)
    parser.add_argument(
        "--config",
        default=argparse.SUPPRESS,
        help="TOML configuration file (default: ops/demo/config.toml)",
    )
    parser.set_defaults(run=run)
    return parser


# Each module here has ``register(commands)``: one line per module keeps edits apart.
COMMAND_MODULES: list[str] = [
    "api.cli_serve",
    "api.cli_ops",
    "api.cli_verify",
    "api.cli_outbox",
    "api.cli_demo",
    "api.cli_audit",
    "api.cli_report",
    "api.cli_shipping",
    "api.cli_wallet_check",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="upgrader", description="Upgrader game platform")
    parser.add_argument(
        "--config", default=None, help="TOML configuration file (default: ops/demo/config.toml)"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    command(commands, "check-config", "validate a configuration file and exit", _check_config)
    for module in COMMAND_MODULES:
        importlib.import_module(module).register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    args = build_parser().parse_args(argv)
    from api.cli_store import EXISTING_STORE_COMMANDS, store_problem, unreachable

    try:
        if args.command in EXISTING_STORE_COMMANDS:
            from api.cli_audit import database_url

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

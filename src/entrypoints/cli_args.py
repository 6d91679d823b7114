"""What the subcommands share: how one is added (with ``--config`` before or after its
name) and which store an operations command reads."""

from __future__ import annotations

import argparse
from collections.abc import Callable


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


def database_url(args: argparse.Namespace) -> str:
    if getattr(args, "database_url", None):
        return args.database_url
    from application.config.load import load_config

    return load_config(getattr(args, "config", None)).service.database_url

"""The ``upgrader`` command: ``upgrader serve --config FILE`` and friends."""

from __future__ import annotations

import argparse
import logging
import sys

from application.config import ConfigError, load_config


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from api.app import create_app
    from application.platform import Platform

    config = load_config(args.config)
    platform = Platform(config)
    platform.record_configuration()
    app = create_app(platform)
    log = logging.getLogger("upgrader")
    log.info(
        "serving on http://%s:%d (%r)", config.service.host, config.service.port, platform.location
    )
    uvicorn.run(
        app,
        host=config.service.host,
        port=config.service.port,
        log_level="info",
        access_log=False,
        timeout_graceful_shutdown=10,
    )
    return 0


def _check_config(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    print(f"ok: {len(config.operators)} operators, {len(config.catalog.items)} catalogue items")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="upgrader", description="Upgrader game platform")
    parser.add_argument(
        "--config", default=None, help="TOML configuration file (default: ops/demo/config.toml)"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the HTTP API with its workers")
    serve.add_argument("--config", default=argparse.SUPPRESS)
    serve.set_defaults(run=_serve)
    check = commands.add_parser("check-config", help="validate a configuration file and exit")
    check.add_argument("--config", default=argparse.SUPPRESS)
    check.set_defaults(run=_check_config)
    return parser


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except ConfigError as exc:
        print(f"upgrader: configuration error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

"""``upgrader demo``: the platform and the reference operator site, and one URL to open.

Starts ``upgrader serve`` and ``python -m ops.reference_operator.launcher`` (the reference
wallet, webhook receiver and the operator page that embeds the game) as child processes,
waits until the operator site reaches the platform with a signed health check, prints the
operator page's URL, and stops both on Ctrl-C or SIGTERM. Their logs go to files under
``--log-dir`` so the terminal shows only what a new user needs.

Ctrl-C ends with one line and exit status 0, also under ``make run``: the two processes
run in sessions of their own (the demo stops them with SIGTERM, so they shut down
gracefully rather than each dying of the SIGINT), and when the demo shares its
terminal's foreground process group with a parent (make), it moves to a group of its
own and makes that the foreground one, so Ctrl-C reaches the demo alone. Otherwise make
would get the SIGINT too and, whatever the demo answered, die of it (status 130); it
now sees the demo exit 0 and exits 0. The terminal is given back before the demo exits.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from urllib.parse import urlsplit

from application.config.load import DEFAULT_CONFIG_PATH, load_config
from application.config.shape import Config
from entrypoints.cli_args import command

LOOPBACK = {"127.0.0.1", "localhost", "::1"}


class _Stop(Exception):
    pass


def register(commands: argparse._SubParsersAction) -> None:
    parser = command(
        commands,
        "demo",
        "run the platform and the reference operator site, and print the URL to play",
        run_demo,
    )
    parser.add_argument(
        "--wallet-port",
        type=int,
        default=8001,
        help="port of the reference operator (wallet, webhooks, demo page); default 8001",
    )
    parser.add_argument(
        "--operator-host",
        default="127.0.0.1",
        help="address the reference operator listens on (default 127.0.0.1)",
    )
    parser.add_argument("--player", default="player-1", help="the funded demo player")
    parser.add_argument(
        "--fund-minor",
        type=int,
        default=100_000,
        help="the demo player's starting balance in minor units (default 100000)",
    )
    parser.add_argument("--log-dir", default="var", help="where the two processes log")
    parser.add_argument(
        "--startup-timeout",
        type=float,
        default=90.0,
        help="seconds to wait for both processes to be ready (default 90)",
    )


def _secrets(config: Config) -> list[str]:
    found = []
    for operator in config.operators:
        found.append(operator.outbound_secret)
        found.extend(key.secret for key in operator.keys)
    return [s for s in found if s]


def _redacted(path: Path, secrets: list[str], lines: int = 30) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    for secret in secrets:
        text = text.replace(secret, "<redacted>")
    return "\n".join(text.splitlines()[-lines:])


def _status(url: str) -> dict | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 (http on loopback)
            return json.load(response)
    except (urllib.error.URLError, OSError, ValueError):
        return None


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
    deadline = time.monotonic() + 15
    for process in processes:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


def _as_foreground(tty: int, group: int) -> None:
    """Make ``group`` the terminal's foreground process group (from any group)."""
    previous = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    try:
        os.tcsetpgrp(tty, group)
    finally:
        signal.signal(signal.SIGTTOU, previous)


def own_terminal() -> Callable[[], None]:
    """When this process shares its terminal's foreground group with a parent (as under
    ``make run``), move it to a group of its own, in the foreground, so that Ctrl-C
    reaches it alone; returns what gives the terminal back (a no-op when nothing moved)."""
    try:
        tty = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return lambda: None  # no controlling terminal
    try:
        foreground = os.tcgetpgrp(tty)
        if foreground != os.getpgrp() or os.getpgrp() == os.getpid():
            raise OSError("not in the foreground, or already leading its group")
        os.setpgid(0, 0)
        _as_foreground(tty, os.getpgrp())
    except OSError:
        os.close(tty)
        return lambda: None

    def give_back() -> None:
        with contextlib.suppress(OSError):
            _as_foreground(tty, foreground)
        os.close(tty)

    return give_back


def _wallet_warning(config: Config, operator_url: str) -> str | None:
    wallet = next((o.wallet_url for o in config.operators if o.wallet_url), None)
    if wallet and not wallet.startswith(operator_url + "/"):
        return (
            f"note: the config's wallet_url is {wallet}, but the reference operator listens "
            f"on {operator_url}: plays will answer WALLET_UNAVAILABLE"
        )
    return None


def run_demo(args: argparse.Namespace) -> int:
    config_path = Path(args.config) if getattr(args, "config", None) else DEFAULT_CONFIG_PATH
    config = load_config(config_path)
    service = config.service
    platform_host = "127.0.0.1" if service.host in ("0.0.0.0", "::") else service.host  # noqa: S104
    platform_url = f"http://{platform_host}:{service.port}"
    operator_url = f"http://{args.operator_host}:{args.wallet_port}"
    base = urlsplit(service.base_url)
    game_url = None if base.netloc == f"{platform_host}:{service.port}" else platform_url
    secrets = _secrets(config)
    log_dir = Path(args.log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    logs = {"platform": log_dir / "demo-platform.log", "operator": log_dir / "demo-operator.log"}

    commands = {
        "platform": [
            sys.executable,
            "-m",
            "entrypoints.cli",
            "serve",
            "--config",
            str(config_path),
        ],
        "operator": [
            sys.executable,
            "-m",
            "ops.reference_operator.launcher",
            "--config",
            str(config_path),
            "--host",
            args.operator_host,
            "--port",
            str(args.wallet_port),
            "--platform-url",
            platform_url,
            "--player",
            args.player,
            "--fund-minor",
            str(args.fund_minor),
            *(["--game-url", game_url] if game_url else []),
        ],
    }

    def on_signal(signum: int, frame: FrameType | None) -> None:
        raise _Stop

    previous = signal.signal(signal.SIGTERM, on_signal)
    processes: dict[str, subprocess.Popen[bytes]] = {}
    give_back = own_terminal()
    try:
        for name, argv in commands.items():
            with open(logs[name], "ab") as log:
                processes[name] = subprocess.Popen(  # noqa: S603 (our own interpreter)
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # Ctrl-C is the demo's; it stops them
                )
        deadline = time.monotonic() + args.startup_timeout
        while True:
            for name, process in processes.items():
                if process.poll() is not None:
                    print(
                        f"upgrader demo: the {name} stopped (exit {process.returncode}); "
                        f"the end of {logs[name]}:\n{_redacted(logs[name], secrets)}",
                        file=sys.stderr,
                    )
                    return 1
            status = _status(operator_url + "/demo/status")
            if status and status.get("platform") == "ok":
                break
            if time.monotonic() > deadline:
                print(
                    f"upgrader demo: not ready after {args.startup_timeout:.0f} s; see {logs}",
                    file=sys.stderr,
                )
                return 1
            time.sleep(0.25)

        warning = _wallet_warning(config, operator_url)
        bar = "=" * 72
        print(
            f"\n{bar}\n  The Upgrader demo is running. Open this address to play:\n\n"
            f"      {operator_url}/\n\n"
            f"  (the operator's page, with player {args.player!r} funded; the game in its\n"
            f"  frame is served by the platform). Ctrl-C stops both.\n"
            f"  Logs: {logs['platform']} and {logs['operator']}\n{bar}\n",
            flush=True,
        )
        if warning:
            print(warning, flush=True)
        while all(p.poll() is None for p in processes.values()):
            time.sleep(0.5)
        stopped = next(n for n, p in processes.items() if p.poll() is not None)
        print(
            f"upgrader demo: the {stopped} stopped; the end of its log:\n"
            f"{_redacted(logs[stopped], secrets)}",
            file=sys.stderr,
        )
        return 1
    except (KeyboardInterrupt, _Stop):
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C waits for the stop
        _stop(list(processes.values()))
        print("\nupgrader demo: stopped", flush=True)
        return 0
    finally:
        _stop(list(processes.values()))
        give_back()
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, signal.default_int_handler)

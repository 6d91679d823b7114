"""`make run` from the checkout: it answers a signed health check, and Ctrl-C in its
terminal ends it with one line and exit status 0 (real processes, a real pseudo-terminal,
real HTTP). Neither writes into the checkout's var/: the logs go to LOG_DIR."""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import httpx

from tests.support.live import free_port
from tests.support.signing import signed_headers
from tests.support.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
VAR = ROOT / "var"


def _var_logs() -> dict[str, tuple[int, int] | None]:
    """(size, mtime) of each demo log in the checkout's var/ (None: absent)."""
    found: dict[str, tuple[int, int] | None] = {}
    for name in ("demo-platform.log", "demo-operator.log"):
        path = VAR / name
        found[name] = (path.stat().st_size, path.stat().st_mtime_ns) if path.exists() else None
    return found


def _make_run(tmp_path: Path, port: int, wallet_port: int) -> tuple[list[str], dict[str, str]]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("UPGRADER_")},
        "UPGRADER_PORT": str(port),
        "UPGRADER_DATABASE_URL": f"sqlite:///{tmp_path}/demo.db",
    }
    command = [
        "make",
        "--no-print-directory",
        "run",
        f"VENV={sys.prefix}",
        f"WALLET_PORT={wallet_port}",
        f"LOG_DIR={tmp_path / 'logs'}",
    ]
    return command, env


def _wait_for_health(url: str, deadline: float) -> httpx.Response:
    while True:
        headers = signed_headers(
            "demo-key", "change-me-inbound", int(time.time()), "GET", "/api/s2s/health"
        )
        try:
            return httpx.get(url + "/api/s2s/health", headers=headers, timeout=2)
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_make_run_serves_a_signed_health_check(tmp_path: Path) -> None:
    port, wallet_port = free_port(), free_port()
    before = _var_logs()
    command, env = _make_run(tmp_path, port, wallet_port)
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        response = _wait_for_health(f"http://127.0.0.1:{port}", time.monotonic() + 120)
        assert response.status_code == 200
        assert response.json()["status"] == "ok"
        unsigned = httpx.get(f"http://127.0.0.1:{port}/api/s2s/health", timeout=2)
        assert unsigned.status_code == 401
        assert unsigned.json()["error"]["code"] == "MISSING_HEADERS"
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        output = process.communicate(timeout=30)[0].decode()
    assert "change-me-inbound" not in output
    assert "change-me-outbound" not in output
    assert (tmp_path / "logs" / "demo-platform.log").stat().st_size > 0
    assert _var_logs() == before


def _controlling_terminal() -> None:
    """In the child, after setsid: its stdin, the pty, becomes its controlling terminal."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def _closed(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


def test_ctrl_c_in_the_terminal_of_make_run_ends_with_one_line_and_exit_0(
    tmp_path: Path,
) -> None:
    port, wallet_port = free_port(), free_port()
    before = _var_logs()
    command, env = _make_run(tmp_path, port, wallet_port)
    terminal, child_end = os.openpty()
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdin=child_end,
        stdout=child_end,
        stderr=child_end,
        start_new_session=True,
        preexec_fn=_controlling_terminal,
    )
    os.close(child_end)
    shown = bytearray()

    def read() -> None:
        while True:
            try:
                chunk = os.read(terminal, 4096)
            except OSError:  # EIO: every process on the terminal has gone
                return
            if not chunk:
                return
            shown.extend(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        wait_until(
            lambda: shown.count(b"=" * 72) >= 2 or process.poll() is not None,
            timeout=120,
            what="the demo's address",
        )
        assert process.poll() is None, shown.decode(errors="replace")
        os.write(terminal, b"\x03")  # Ctrl-C, as typed: the terminal sends SIGINT
        status = process.wait(timeout=60)
        reader.join(timeout=10)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        os.close(terminal)
    text = shown.decode(errors="replace")
    after = text[text.rindex("^C") + 2 :]
    assert [line.strip() for line in after.splitlines() if line.strip()] == [
        "upgrader demo: stopped"
    ], text
    assert status == 0, text
    assert "make: ***" not in text and "Traceback" not in text
    assert _closed(port) and _closed(wallet_port)  # both processes stopped
    assert "Shutting down" in (tmp_path / "logs" / "demo-platform.log").read_text()
    assert _var_logs() == before

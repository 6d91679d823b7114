"""Real ``upgrader serve`` processes for end-to-end tests: start, wait healthy, kill.

Each server runs in its own session (process group), so ``kill()`` takes down uvicorn and
anything it started with one ``killpg``. Output goes to a log file (never a pipe that could
fill up and stall the server); secrets are redacted from anything shown in a failure.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

import httpx

from tests.support.live import free_port
from tests.support.signing import signed_headers

ROOT = Path(__file__).resolve().parents[2]

T = TypeVar("T")


def wait_until(condition: Callable[[], T], timeout: float, what: str, interval: float = 0.05) -> T:
    """Poll ``condition()`` until it is truthy (returned) or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


class ServerProcess:
    """``python -m api.cli serve --config FILE`` on a free loopback port."""

    def __init__(
        self,
        config_path: Path,
        log_path: Path,
        *,
        key_id: str,
        secret: str,
        database_url: str | None = None,
        redact: Iterable[str] = (),
    ) -> None:
        self.config_path = config_path
        self.log_path = log_path
        self.key_id = key_id
        self._secret = secret
        self.database_url = database_url
        self.redact = [secret, *redact]
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    # -- life cycle -----------------------------------------------------------------------

    def start(self, timeout: float = 30.0) -> ServerProcess:
        """Start the process (again after a kill, on the same port) and wait until healthy."""
        if self.running:
            raise RuntimeError("the server is already running")
        env = {k: v for k, v in os.environ.items() if not k.startswith("UPGRADER_")}
        env["UPGRADER_PORT"] = str(self.port)
        env["UPGRADER_HOST"] = "127.0.0.1"
        if self.database_url:
            env["UPGRADER_DATABASE_URL"] = self.database_url
        self.starts += 1
        with open(self.log_path, "ab") as log:
            log.write(f"--- start #{self.starts} ---\n".encode())
            log.flush()
            self.process = subprocess.Popen(
                [sys.executable, "-m", "api.cli", "serve", "--config", str(self.config_path)],
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.wait_healthy(timeout)
        return self

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def kill(self) -> None:
        """SIGKILL the whole process group (a crash: no shutdown hooks run) and reap it."""
        self._signal_group(signal.SIGKILL)

    def stop(self) -> None:
        """SIGTERM (graceful), then SIGKILL if it does not go within 15 s."""
        self._signal_group(signal.SIGTERM, grace=15.0)

    def _signal_group(self, sig: signal.Signals, grace: float = 10.0) -> None:
        process = self.process
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        # Anything else left in the group (there should be nothing) goes too.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()

    # -- calls ----------------------------------------------------------------------------

    def signed(
        self, method: str, path: str, body: bytes = b"", timeout: float = 10.0
    ) -> httpx.Response:
        headers = signed_headers(self.key_id, self._secret, int(time.time()), method, path, body)
        return httpx.request(
            method, self.url + path, content=body or None, headers=headers, timeout=timeout
        )

    def wait_healthy(self, timeout: float = 30.0) -> httpx.Response:
        deadline = time.monotonic() + timeout
        while True:
            if not self.running:
                raise AssertionError(
                    f"the server exited with {self.process and self.process.returncode} "
                    f"before answering:\n{self.log_tail()}"
                )
            try:
                response = self.signed("GET", "/api/s2s/health", timeout=2)
                if response.status_code == 200 and response.json().get("status") == "ok":
                    return response
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"no healthy answer within {timeout} s:\n{self.log_tail()}")
            time.sleep(0.1)

    def log_text(self) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        for secret in self.redact:
            if secret:
                text = text.replace(secret, "<redacted>")
        return text

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

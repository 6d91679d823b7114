"""Real ``upgrader`` processes for end-to-end and fault tests: start, wait ready, kill.

Each process runs in its own session (process group), so ``kill()`` takes down uvicorn
and anything it started with one ``killpg``. Output goes to a log file (never a pipe that
could fill up and stall the process); secrets are redacted from anything shown in a
failure.

- ``ServerProcess``: ``upgrader serve --config FILE [args]`` on a free loopback port,
  ready when a signed ``GET /api/s2s/health`` answers ``ok``.
- ``WorkerProcess``: ``upgrader worker LOOP --config FILE``, ready when it logs that its
  loops run.
- ``run_cli``: one ``upgrader ...`` command to completion (e.g. ``projections rebuild``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Self, TypeVar

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


def child_env(database_url: str | None, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without ``UPGRADER_*`` overrides, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("UPGRADER_")}
    if database_url:
        env["UPGRADER_DATABASE_URL"] = database_url
    env.update(extra or {})
    return env


def run_cli(
    config_path: Path,
    *args: str,
    database_url: str | None = None,
    timeout: float = 120.0,
) -> subprocess.CompletedProcess[str]:
    """``python -m entrypoints.cli ARGS --config FILE`` to completion; output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "entrypoints.cli", *args, "--config", str(config_path)],
        cwd=ROOT,
        env=child_env(database_url),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


class ChildProcess:
    """One ``python -m entrypoints.cli ...`` process group, its output appended to a log file."""

    def __init__(
        self,
        log_path: Path,
        *,
        database_url: str | None = None,
        redact: Iterable[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.log_path = log_path
        self.database_url = database_url
        self.redact = list(redact)
        self.extra_env = dict(env or {})
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self._log_offset = 0

    def _spawn(self, command_line: list[str], env: dict[str, str]) -> None:
        if self.running:
            raise RuntimeError("the process is already running")
        self.starts += 1
        with open(self.log_path, "ab") as log:
            log.write(f"--- start #{self.starts} ---\n".encode())
            log.flush()
            self._log_offset = log.tell()
            self.process = subprocess.Popen(
                [sys.executable, "-m", "entrypoints.cli", *command_line],
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def kill(self) -> None:
        """SIGKILL the whole process group (a crash: no shutdown hooks run) and reap it."""
        self._signal_group(signal.SIGKILL)

    def stop(self) -> None:
        """SIGTERM (graceful), then SIGKILL if it does not go within 15 s."""
        self._signal_group(signal.SIGTERM, grace=15.0)

    def terminate(self) -> None:
        """Send SIGTERM to the process group and return at once (see ``wait_exit``)."""
        self._send(signal.SIGTERM)

    def pause(self) -> None:
        """SIGSTOP the process group: it holds whatever it holds, and does nothing."""
        self._send(signal.SIGSTOP)

    def resume(self) -> None:
        self._send(signal.SIGCONT)

    def wait_exit(self, timeout: float) -> int | None:
        """The exit status once the process ends within ``timeout`` s, else None."""
        if self.process is None:
            return None
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def _send(self, sig: signal.Signals) -> None:
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, sig)

    def _signal_group(self, sig: signal.Signals, grace: float = 10.0) -> None:
        process = self.process
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
            if sig != signal.SIGKILL:
                os.killpg(process.pid, signal.SIGCONT)  # a paused group could not exit
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        # Anything else left in the group (there should be nothing) goes too.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()

    def log_text(self) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        for secret in self.redact:
            if secret:
                text = text.replace(secret, "<redacted>")
        return text

    def current_log(self) -> str:
        """What the process wrote since its latest start."""
        try:
            with open(self.log_path, "rb") as log:
                log.seek(self._log_offset)
                text = log.read().decode("utf-8", errors="replace")
        except OSError:
            return ""
        for secret in self.redact:
            if secret:
                text = text.replace(secret, "<redacted>")
        return text

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])


class ServerProcess(ChildProcess):
    """``python -m entrypoints.cli serve --config FILE [args]`` on a free loopback port.

    ``args`` adds serve options, e.g. ``("--workers", "2", "--no-background")``."""

    def __init__(
        self,
        config_path: Path,
        log_path: Path,
        *,
        key_id: str,
        secret: str,
        database_url: str | None = None,
        redact: Iterable[str] = (),
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(log_path, database_url=database_url, redact=[secret, *redact], env=env)
        self.config_path = config_path
        self.key_id = key_id
        self._secret = secret
        self.args = list(args)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"

    # -- life cycle -----------------------------------------------------------------------

    def start(self, timeout: float = 30.0) -> ServerProcess:
        """Start the process (again after a kill, on the same port) and wait until healthy."""
        if self.running:
            raise RuntimeError("the server is already running")
        env = child_env(self.database_url, self.extra_env)
        env["UPGRADER_PORT"] = str(self.port)
        env["UPGRADER_HOST"] = "127.0.0.1"
        self._spawn(["serve", "--config", str(self.config_path), *self.args], env)
        self.wait_healthy(timeout)
        return self

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


class WorkerProcess(ChildProcess):
    """``python -m entrypoints.cli worker LOOP --config FILE``: background loops, no HTTP API."""

    READY = "worker running"

    def __init__(
        self,
        config_path: Path,
        log_path: Path,
        loop: str,
        *,
        database_url: str | None = None,
        redact: Iterable[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(log_path, database_url=database_url, redact=redact, env=env)
        self.config_path = config_path
        self.loop = loop

    def start(self, timeout: float = 30.0, wait: bool = True) -> WorkerProcess:
        """Start (again after a kill) and, with ``wait``, return once its loops run."""
        env = child_env(self.database_url, self.extra_env)
        self._spawn(["worker", self.loop, "--config", str(self.config_path)], env)
        if wait:
            self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while self.READY not in self.current_log():
            if not self.running:
                raise AssertionError(
                    f"worker {self.loop} exited with {self.returncode} before running:\n"
                    f"{self.log_tail()}"
                )
            if time.monotonic() > deadline:
                raise AssertionError(f"worker {self.loop} not running within {timeout} s")
            time.sleep(0.05)

"""A private, throwaway PostgreSQL 15 cluster: ``initdb`` into a temporary folder,
``pg_ctl start`` on a free loopback port, stop/start at will, remove afterwards.

The shared server (``UPGRADER_TEST_POSTGRES_URL``, port 5432) is never stopped or
restarted by the fault suite. Run as root, every PostgreSQL command runs as the
``postgres`` user (``runuser -u postgres --``), which owns the folder; as any other user,
they run as that user.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

from tests.support.live import free_port

PG_BIN = Path(os.environ.get("UPGRADER_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))


def unavailable_reason() -> str | None:
    """Why a private cluster cannot be made here (None: it can)."""
    for tool in ("initdb", "pg_ctl", "postgres"):
        if not (PG_BIN / tool).is_file():
            return f"no {PG_BIN / tool} (set UPGRADER_TEST_PG_BIN to PostgreSQL 15's bin)"
    if os.geteuid() == 0:
        if shutil.which("runuser") is None:
            return "running as root without runuser to become the postgres user"
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no postgres user to run PostgreSQL as"
    return None


class PrivatePostgres:
    def __init__(self, settings: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.settings = {"listen_addresses": "127.0.0.1", **(settings or {})}
        self.root = Path(tempfile.mkdtemp(prefix="upgrader-faults-pg-", dir="/tmp"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self._as_postgres = os.geteuid() == 0
        if self._as_postgres:
            entry = pwd.getpwnam("postgres")
            os.chown(self.root, entry.pw_uid, entry.pw_gid)

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    def _run(self, *command: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        argv = [str(PG_BIN / command[0]), *command[1:]]
        if self._as_postgres:
            argv = ["runuser", "-u", "postgres", "--", *argv]
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            cwd=self.root,
            stdin=subprocess.DEVNULL,
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"{' '.join(command[:2])} failed ({done.returncode}):\n"
                f"{done.stdout[-2000:]}{done.stderr[-2000:]}\n{self.log_tail()}"
            )
        return done

    def init(self) -> PrivatePostgres:
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
        )
        return self

    def start(self) -> PrivatePostgres:
        options = " ".join(
            [f"-p {self.port}", f"-k {self.root}"]
            + [f"-c {name}={value}" for name, value in self.settings.items()]
        )
        self._run(
            "pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.log), "-w", "-t", "60",
            "start",
        )  # fmt: skip
        return self

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    @property
    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()

    def destroy(self) -> None:
        """Stop (immediately) if running, and remove every file."""
        if self.running:
            with contextlib.suppress(Exception):
                self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

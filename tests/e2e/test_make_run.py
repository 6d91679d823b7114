"""`make run` from the checkout answers a signed health check (real processes, real HTTP)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.support.live import free_port
from tests.support.signing import signed_headers

ROOT = Path(__file__).resolve().parents[2]


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
    env = {
        **os.environ,
        "UPGRADER_PORT": str(port),
        "UPGRADER_DATABASE_URL": f"sqlite:///{tmp_path}/demo.db",
    }
    process = subprocess.Popen(
        ["make", "--no-print-directory", "run", f"VENV={sys.prefix}", f"WALLET_PORT={wallet_port}"],
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

"""The reference operator site against a real platform: signed launches, the iframe page,
its wallet, and ``upgrader demo`` starting both and printing the one URL to open.

The platform runs in-process on loopback (real HTTP); the operator site runs as its real
command (``python -m ops.reference_operator.launcher``) reading a TOML config file.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from application.platform import Platform
from entrypoints.app import create_app
from ops.reference_operator.launcher import signature
from tests.support.config import BASE, make_config
from tests.support.live import LiveServer, free_port
from tests.support.processes import wait_until

ROOT = Path(__file__).resolve().parents[2]
FUNDED = 100_000


def toml_config(base_url: str, *, secret_of: dict[str, str] | None = None) -> str:
    """The test operators as a TOML file (``secret_of`` overrides a key's secret)."""
    lines = ["[service]", f"base_url = {json.dumps(base_url)}", ""]
    for operator in BASE["operators"]:
        lines += [
            "[[operators]]",
            f"id = {json.dumps(operator['id'])}",
            f"base_currency = {json.dumps(operator['base_currency'])}",
            f"outbound_secret = {json.dumps(operator['outbound_secret'])}",
        ]
        for key in operator["keys"]:
            secret = (secret_of or {}).get(key["key_id"], key["secret"])
            lines += [
                "  [[operators.keys]]",
                f"  key_id = {json.dumps(key['key_id'])}",
                f"  secret = {json.dumps(secret)}",
                f"  revoked = {'true' if key.get('revoked') else 'false'}",
            ]
        for currency in operator["currencies"]:
            lines += [
                "  [[operators.currencies]]",
                f"  code = {json.dumps(currency['code'])}",
                f"  rate = {json.dumps(currency['rate'])}",
                f"  exponent = {currency['exponent']}",
            ]
        lines.append("")
    return "\n".join(lines)


class Site:
    """``python -m ops.reference_operator.launcher`` on a given port."""

    def __init__(self, config: Path, log: Path, port: int, *extra: str) -> None:
        self.log = log
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.argv = [
            sys.executable,
            "-m",
            "ops.reference_operator.launcher",
            "--config",
            str(config),
            "--port",
            str(port),
            "--operator",
            "op-a",
            *extra,
        ]
        with open(log, "ab") as out:
            self.process = subprocess.Popen(
                self.argv,
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        wait_until(self._listening, 20, "the operator site to listen")
        self.http = httpx.Client(base_url=self.url, timeout=15, follow_redirects=False)

    def _listening(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"the operator site exited:\n{self.log.read_text()}")
        try:
            return httpx.get(self.url + "/healthz", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    def stop(self) -> None:
        self.http.close()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=5)


@pytest.fixture
def site_port() -> int:
    return free_port()


@pytest.fixture
def platform_live(database_url: str, site_port: int) -> Iterator[LiveServer]:
    """A platform whose operators' wallet is the operator site's (on ``site_port``)."""
    config = make_config(database_url, wallet_url=f"http://127.0.0.1:{site_port}/wallet")
    platform = Platform(config)
    platform.record_configuration()
    try:
        with LiveServer(create_app(platform)) as live:
            yield live
    finally:
        platform.close()


@pytest.fixture
def site(platform_live: LiveServer, site_port: int, tmp_path: Path) -> Iterator[Site]:
    config = tmp_path / "operator.toml"
    # The platform's base_url is its default (port 8000): launch URLs point there, and
    # --game-url sends browsers to where this test's platform really listens.
    config.write_text(toml_config("http://127.0.0.1:8000"))
    started = Site(
        config,
        tmp_path / "operator.log",
        site_port,
        "--platform-url",
        platform_live.url,
        "--game-url",
        platform_live.url,
        "--fund-minor",
        str(FUNDED),
    )
    yield started
    started.stop()


def launch_token(location: str) -> str:
    return parse_qs(urlsplit(location).query)["launchToken"][0]


def test_signature_matches_the_readme_vector() -> None:
    body = b'{"playerExternalId":"player-1","gameKey":"upgrader","target":{}}'
    assert (
        signature("change-me-inbound", "1767225600", "POST", "/api/s2s/launches", body)
        == "72e96aa1d3f3051ea7182b8625e9afa810af11bfb3ffc98e6451af0b29286254"
    )


def test_launch_redirects_to_a_launch_url_that_opens_a_working_session(
    site: Site, platform_live: LiveServer
) -> None:
    response = site.http.get("/demo/launch", params={"player": "player-1"})
    assert response.status_code == 302
    assert response.headers["cache-control"] == "no-store"
    location = response.headers["location"]
    assert location.startswith(platform_live.url + "/game/upgrader?launchToken=")
    token = launch_token(location)

    with httpx.Client(base_url=platform_live.url, timeout=15) as http:
        page = http.get(location)
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        assert "script-src 'self'" in page.headers["content-security-policy"]
        assert "frame-ancestors *" in page.headers["content-security-policy"]
        assert page.headers["x-content-type-options"] == "nosniff"
        assert page.headers["referrer-policy"] == "no-referrer"
        assert "<script>" not in page.text and " on" + "click=" not in page.text

        init = http.post("/api/play/session/init", json={"launchToken": token})
        assert init.status_code == 200, init.text
        session = init.json()
        assert session["player"] == {"operatorId": "op-a", "playerExternalId": "player-1"}
        assert session["game"]["key"] == "upgrader"
        bearer = {"Authorization": f"Bearer {session['sessionToken']}"}

        prizes = http.get(
            "/api/play/upgrader/prizes",
            params={"wagerMinor": 1000, "chanceBps": 5000},
            headers=bearer,
        )
        assert prizes.status_code == 200, prizes.text
        target = prizes.json()["prizes"][0]["itemId"]
        played = http.post(
            "/api/play/upgrader/play",
            json={
                "clientActionId": "launcher-test-1",
                "wagerMinor": 1000,
                "chanceBps": 5000,
                "targetItemId": target,
            },
            headers=bearer,
        )
        assert played.status_code == 200, played.text
        assert played.json()["balanceAfterMinor"] == FUNDED - 1000

        again = http.post("/api/play/session/init", json={"launchToken": token})
        assert again.status_code == 401
        assert again.json()["error"]["code"] == "LAUNCH_TOKEN_INVALID"

    balance = site.http.get("/demo/balance", params={"player": "player-1"}).json()
    assert balance["balanceMinor"] == FUNDED - 1000
    assert balance["display"] == "990.00 EUR"


def test_without_game_url_the_redirect_is_the_platforms_launch_url_verbatim(
    platform_live: LiveServer, tmp_path: Path
) -> None:
    config = tmp_path / "operator.toml"
    config.write_text(toml_config("http://127.0.0.1:8000"))
    site = Site(config, tmp_path / "operator.log", free_port(), "--platform-url", platform_live.url)
    try:
        response = site.http.get("/demo/launch", params={"player": "someone-else"})
        assert response.status_code == 302
        location = response.headers["location"]
        assert location.startswith("http://127.0.0.1:8000/game/upgrader?launchToken=")
        init = httpx.post(
            platform_live.url + "/api/play/session/init",
            json={"launchToken": launch_token(location)},
            timeout=15,
        )
        assert init.json()["player"]["playerExternalId"] == "someone-else"
    finally:
        site.stop()


def test_the_operator_page_embeds_the_launch_in_an_iframe(
    site: Site, platform_live: LiveServer
) -> None:
    page = site.http.get("/", params={"player": "player-1"})
    assert page.status_code == 200
    assert '<iframe id="game" src="/demo/launch?player=player-1"' in page.text
    assert f"{FUNDED // 100}.00 EUR" in page.text
    csp = page.headers["content-security-policy"]
    assert f"frame-src 'self' {platform_live.url}" in csp
    assert "script-src 'self'" in csp
    assert "<script>" not in page.text
    script = site.http.get("/demo/assets/site.js")
    assert script.status_code == 200
    assert script.headers["content-type"].startswith("text/javascript")
    assert site.http.get("/demo/assets/nope.js").status_code == 404
    status = site.http.get("/demo/status")
    assert status.status_code == 200
    assert status.json() == {"platform": "ok", "operatorId": "op-a"}


def options_of(page: str) -> list[tuple[str, str, bool]]:
    """The game picker's options: (value, label, selected)."""
    found = re.findall(r'<option value="([^"]*)"( selected)?>([^<]*)</option>', page)
    return [(value, html.unescape(label), bool(selected)) for value, selected, label in found]


def test_the_operator_page_offers_the_upgrader_and_the_boxes_of_its_signed_catalogue(
    site: Site,
) -> None:
    # op-a's catalogue (tests/support/config.py): box 7, version 3, 300 minor units of EUR
    page = site.http.get("/", params={"player": "player-1"})
    assert page.status_code == 200
    assert options_of(page.text) == [
        ("upgrader", "Upgrader", True),
        ("box-7", "Box \u00b7 3.00 EUR", False),
    ]
    assert "<title>Demo Casino: Upgrader</title>" in page.text

    chosen = site.http.get("/", params={"player": "player-1", "game": "box-7", "currency": "USD"})
    assert chosen.status_code == 200
    assert options_of(chosen.text) == [
        ("upgrader", "Upgrader", False),
        ("box-7", "Box \u00b7 3.00 EUR", True),
    ]
    assert (
        '<iframe id="game" src="/demo/launch?player=player-1&amp;game=box-7&amp;currency=USD"'
        in chosen.text
    )
    assert '<input type="hidden" name="currency" value="USD">' in chosen.text
    assert "<title>Demo Casino: Box</title>" in chosen.text

    for bad in ("box-0", "box-x", "boxes", "box-7 ", "upgrader2"):
        assert site.http.get("/", params={"game": bad}).status_code == 400
        assert site.http.get("/demo/launch", params={"game": bad}).status_code == 400


def test_without_catalogue_access_the_page_offers_the_upgrader_alone(
    platform_live: LiveServer, tmp_path: Path
) -> None:
    config = tmp_path / "operator.toml"
    config.write_text(toml_config("http://127.0.0.1:8000"))
    log = tmp_path / "operator.log"
    # op-b's only key has no catalog_access: the signed catalogue call is refused
    site = Site(config, log, free_port(), "--platform-url", platform_live.url, "--operator", "op-b")
    try:
        page = site.http.get("/")
        assert page.status_code == 200
        assert options_of(page.text) == [("upgrader", "Upgrader", True)]
        assert '<iframe id="game" src="/demo/launch?player=player-1"' in page.text
    finally:
        site.stop()
    assert "box catalogue refused: 403 CATALOG_ACCESS_DENIED" in log.read_text()


def test_a_bad_player_id_is_refused_before_any_launch(site: Site) -> None:
    response = site.http.get("/demo/launch", params={"player": "has space"})
    assert response.status_code == 400
    assert site.http.get("/", params={"player": ""}).status_code == 400


def test_a_refused_launch_is_shown_in_words_and_no_secret_leaks(
    platform_live: LiveServer, tmp_path: Path
) -> None:
    config = tmp_path / "operator.toml"
    config.write_text(toml_config("http://127.0.0.1:8000", secret_of={"key-a": "wrong-secret"}))
    log = tmp_path / "operator.log"
    site = Site(config, log, free_port(), "--platform-url", platform_live.url)
    try:
        response = site.http.get("/demo/launch")
        assert response.status_code == 502
        assert "INVALID_SIGNATURE" in response.text
        status = site.http.get("/demo/status")
        assert status.status_code == 503
        assert status.json() == {"platform": "refused", "code": "INVALID_SIGNATURE"}
    finally:
        site.stop()
    text = log.read_text()
    assert "refused: 401 INVALID_SIGNATURE" in text
    for secret in ("wrong-secret", "secret-a-1", "outbound-a-secret"):
        assert secret not in text
        assert secret not in " ".join(site.argv)


def test_an_unreachable_platform_is_shown_in_words(tmp_path: Path) -> None:
    config = tmp_path / "operator.toml"
    config.write_text(toml_config("http://127.0.0.1:8000"))
    dead = f"http://127.0.0.1:{free_port()}"
    site = Site(config, tmp_path / "operator.log", free_port(), "--platform-url", dead)
    try:
        response = site.http.get("/demo/launch")
        assert response.status_code == 502
        assert "could not be reached" in response.text
        assert site.http.get("/demo/status").json() == {"platform": "unreachable"}
    finally:
        site.stop()


# --------------------------------------------------------------------------- upgrader demo


def _read_lines(stream: Any, lines: queue.Queue[str]) -> None:
    for raw in iter(stream.readline, b""):
        lines.put(raw.decode(errors="replace"))


def test_upgrader_demo_prints_one_url_that_launches_the_game_and_stops_both(
    tmp_path: Path,
) -> None:
    platform_port, site_port = free_port(), free_port()
    platform_url = f"http://127.0.0.1:{platform_port}"
    demo_config = (ROOT / "ops" / "demo" / "config.toml").read_text()
    demo_config = demo_config.replace("http://127.0.0.1:8000", platform_url)
    demo_config = demo_config.replace("http://127.0.0.1:8001", f"http://127.0.0.1:{site_port}")
    config = tmp_path / "demo.toml"
    config.write_text(demo_config)
    env = {k: v for k, v in os.environ.items() if not k.startswith("UPGRADER_")}
    env["UPGRADER_PORT"] = str(platform_port)
    env["UPGRADER_DATABASE_URL"] = f"sqlite:///{tmp_path}/demo.db"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "entrypoints.cli",
            "demo",
            "--config",
            str(config),
            "--wallet-port",
            str(site_port),
            "--log-dir",
            str(tmp_path / "logs"),
        ],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_read_lines, args=(process.stdout, lines), daemon=True).start()
    output: list[str] = []
    try:
        deadline = time.monotonic() + 90
        while not any("Open this address to play" in line for line in output):
            assert time.monotonic() < deadline, "".join(output)
            assert process.poll() is None, "".join(output)
            with contextlib.suppress(queue.Empty):
                output.append(lines.get(timeout=0.5))
        while sum(line.startswith("=" * 20) for line in output) < 2:
            output.append(lines.get(timeout=5))
        urls = [word for line in output for word in line.split() if word.startswith("http")]
        assert urls == [f"http://127.0.0.1:{site_port}/"]

        page = httpx.get(urls[0], timeout=10)
        assert page.status_code == 200 and "iframe" in page.text
        launch = httpx.get(urls[0] + "demo/launch?player=player-1", timeout=10)
        assert launch.status_code == 302
        location = launch.headers["location"]
        assert location.startswith(platform_url + "/game/upgrader?launchToken=")
        init = httpx.post(
            platform_url + "/api/play/session/init",
            json={"launchToken": launch_token(location)},
            timeout=10,
        )
        assert init.status_code == 200, init.text
        balance = httpx.get(urls[0] + "demo/balance", timeout=10).json()
        assert balance["balanceMinor"] == FUNDED

        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
        for url in (urls[0] + "healthz", platform_url + "/api/s2s/health"):
            with pytest.raises(httpx.TransportError):
                httpx.get(url, timeout=2)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    text = "".join(output)
    assert "change-me-inbound" not in text and "change-me-outbound" not in text


def test_the_headless_example_runs_interface_5_4_end_to_end(
    site: Site, platform_live: LiveServer, tmp_path: Path
) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "ops/examples/headless.py",
            "--config",
            str(tmp_path / "operator.toml"),
            "--operator",
            "op-a",
            "--platform-url",
            platform_live.url,
            "--player",
            "headless-1",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    # headless-1 has no money in the operator's wallet: the play is refused in words.
    assert result.returncode == 1
    assert "refused: play: 422 INSUFFICIENT_FUNDS" in result.stderr
    assert "POST /api/s2s/launches -> 200" in result.stdout

    result = subprocess.run(
        [
            sys.executable,
            "ops/examples/headless.py",
            "--config",
            str(tmp_path / "operator.toml"),
            "--operator",
            "op-a",
            "--platform-url",
            platform_live.url,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for line in (
        "POST /api/s2s/launches -> 200",
        "POST /api/play/session/init -> 200",
        "GET /api/play/upgrader/prizes -> 200",
        "POST /api/play/upgrader/play -> 200",
        "GET /api/play/rounds -> 200",
        "POST /api/play/fairness/rotate -> 200",
        "server seed hash matches",
        ": verified",
        "casino balance 1000.00 EUR",
        "balance after 990.00 EUR",
        "7. logged out",
    ):
        assert line in result.stdout, result.stdout
    assert "secret-a-1" not in result.stdout + result.stderr

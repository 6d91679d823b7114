"""The signing examples beside Python and curl, run for real: ``ops/examples/signing.js``
(Node) and ``ops/examples/Signing.java`` (Java 17) reproduce the README's pinned vector and
get real answers from a platform on loopback. Each skips, saying why, where its runtime
is not installed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.live import LiveServer

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "ops" / "examples"
# The README's worked example (also pinned in tests/unit/test_signing.py).
SECRET = "change-me-inbound"
TIMESTAMP = "1767225600"
BODY = '{"playerExternalId":"player-1","gameKey":"upgrader","target":{}}'
SIGNATURE = "72e96aa1d3f3051ea7182b8625e9afa810af11bfb3ffc98e6451af0b29286254"


def _runtime(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"`{name}` is not installed here: the {name} signing example is not run")
    return found


@pytest.fixture
def database_url(tmp_path: Path) -> str:
    """One store is enough here: the examples only sign and send."""
    return f"sqlite:///{tmp_path}/store.db"


@pytest.fixture(scope="module")
def node() -> list[str]:
    return [_runtime("node"), str(EXAMPLES / "signing.js")]


@pytest.fixture(scope="module")
def java(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    """The example compiled once (``javac``), then run from its classes."""
    javac = _runtime("javac")
    classes = tmp_path_factory.mktemp("java-example")
    subprocess.run(
        [javac, "-d", str(classes), str(EXAMPLES / "Signing.java")],
        check=True,
        capture_output=True,
        timeout=120,
    )
    yield [_runtime("java"), "-cp", str(classes), "Signing"]


@pytest.fixture(params=["node", "java"])
def example(request: pytest.FixtureRequest) -> list[str]:
    return request.getfixturevalue(request.param)


def run(command: list[str], *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("UPGRADER_")}
    return subprocess.run(
        [*command, *args],
        env={**environment, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_readme_shows_the_vector_these_tests_pin() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for value in (SECRET, TIMESTAMP, BODY, SIGNATURE):
        assert value in readme
    assert "ops/examples/signing.js" in readme and "ops/examples/Signing.java" in readme


def test_the_example_reproduces_the_pinned_vector(example: list[str]) -> None:
    done = run(
        example,
        "sign",
        "POST",
        "/api/s2s/launches",
        BODY,
        TIMESTAMP,
        UPGRADER_KEY_ID="demo-key",
        UPGRADER_SECRET=SECRET,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "X-Key-Id": "demo-key",
        "X-Timestamp": TIMESTAMP,
        "X-Signature": SIGNATURE,
    }


def test_another_secret_gives_another_signature(example: list[str]) -> None:
    done = run(example, "sign", "GET", "/api/s2s/health", "", TIMESTAMP, UPGRADER_SECRET="other")
    assert done.returncode == 0, done.stderr
    headers = json.loads(done.stdout)
    assert headers["X-Key-Id"] == "demo-key"
    assert headers["X-Signature"] != SIGNATURE and len(headers["X-Signature"]) == 64


def test_the_example_talks_to_a_real_platform(example: list[str], live: LiveServer) -> None:
    done = run(
        example, UPGRADER_URL=live.url, UPGRADER_KEY_ID="key-a", UPGRADER_SECRET="secret-a-1"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    health, launch = (json.loads(line) for line in done.stdout.splitlines())
    assert health["status"] == "ok"
    assert launch["launchUrl"].startswith("http://127.0.0.1:8000/game/upgrader?launchToken=")
    wrong = run(example, UPGRADER_URL=live.url, UPGRADER_KEY_ID="key-a", UPGRADER_SECRET="x")
    assert wrong.returncode == 1
    assert "401" in wrong.stderr and "INVALID_SIGNATURE" in wrong.stderr

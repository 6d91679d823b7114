"""No secret and no session token ever leaves the platform (issue 9, part 6).

A real ``python -m entrypoints.cli serve --config FILE`` process (its stdout and stderr captured to
a file, at the service's own INFO level), with a configuration written here whose every
secret is a long random string: two operators, an active and a revoked key each side,
their outbound secrets. The reference wallet and webhook receiver run on loopback.

The scenario touches everything that could log or echo a secret: the OpenAPI document,
signature failures of every kind (wrong secret, revoked and unknown key, skew, missing
headers), launches and sessions, plays over both APIs (settled, refused by the wallet,
uncertain by a 503 and by a timeout, then rolled back by the reconciler), webhooks,
fairness, cash-back, shipping, validation errors, an idempotency conflict, unknown
routes, a dead session, logout, and a graceful stop.

Then every configured secret, the service's own launch-token key (kept in the store), and
every session and launch token are searched for in: the captured output; every answer
body and header (session tokens: in every answer after the one of ``session/init`` that
hands them out); the OpenAPI document; every wallet call and webhook the operator
received; and the store's event log (SQLite file). None may appear. URLs the platform
builds (``launchUrl``, ``imageUrl``, anything that looks like a URL in an answer or a
webhook) never carry a session token, and the game page a launch URL opens does not
echo the launch token into the page.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from ops.reference_operator.wallet import ThreadedWalletServer
from tests.support import config_toml
from tests.support.processes import ServerProcess, wait_until
from tests.support.signing import signed_headers

OP_A, OP_B = "leak-op-a", "leak-op-b"
PLAYER, POOR, BLOCKED = "leak-player", "leak-poor", "leak-blocked"
PLAY = {"wagerMinor": 1000, "chanceBps": 9000, "targetItemId": 3}  # band [960, 1055]
URL = re.compile(r"https?://[^\s\"'<>]+")


def config_text(
    database_url: str, wallet: ThreadedWalletServer, keys: dict[str, str], outbound: dict[str, str]
) -> str:
    """Two operators on the wallet, an active and a revoked key on A, one key on B."""

    def operator(operator_id: str, *keys_: config_toml.Key) -> str:
        return config_toml.operator(
            operator_id,
            wallet_url=wallet.url,
            webhook_url=wallet.webhook_url,
            outbound_secret=outbound[operator_id],
            keys=keys_,
        )

    return config_toml.join(
        config_toml.service(database_url, grace_seconds=3, wallet_timeout_seconds=1),
        operator(
            OP_A,
            config_toml.Key("key-a", keys["key-a"], catalog_access=True),
            config_toml.Key("key-a-revoked", keys["key-a-revoked"], revoked=True),
        ),
        operator(OP_B, config_toml.Key("key-b", keys["key-b"])),
        config_toml.catalog_item(3, "In band", 1000),
        config_toml.catalog_item(9, "Large", 9000, image_url="https://cdn.example/item-9.png"),
    )


@dataclass
class Stack:
    server: ServerProcess
    wallet: ThreadedWalletServer
    keys: dict[str, str]  # key id -> secret
    outbound: dict[str, str]  # operator -> outbound secret
    database_url: str
    log_level: str
    answers: list[tuple[str, httpx.Response]] = field(default_factory=list)
    session_tokens: list[str] = field(default_factory=list)
    launch_tokens: list[str] = field(default_factory=list)
    http: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=30))

    # -- calls, every answer kept ----------------------------------------------------------

    def call(self, label: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
        response = self.http.request(method, self.server.url + path, **kwargs)
        self.answers.append((label, response))
        return response

    def s2s(
        self,
        method: str,
        path: str,
        body: Any = None,
        params: Any = None,
        key_id: str = "key-a",
        secret: str | None = None,
        timestamp: int | None = None,
    ) -> httpx.Response:
        raw = json.dumps(body).encode() if body is not None else b""
        headers = signed_headers(
            key_id,
            secret if secret is not None else self.keys[key_id],
            timestamp if timestamp is not None else int(time.time()),
            method,
            path,
            raw,
        )
        return self.call(
            f"{method} {path}", method, path, content=raw or None, params=params, headers=headers
        )

    def play(self, method: str, path: str, token: str, body: Any = None, params: Any = None):
        headers = {"Authorization": f"Bearer {token}"}
        return self.call(
            f"{method} {path}", method, path, json=body, params=params, headers=headers
        )

    def session(self, player: str, key_id: str = "key-a") -> str:
        launch = self.s2s(
            "POST",
            "/api/s2s/launches",
            {"playerExternalId": player, "gameKey": "upgrader", "target": {}},
            key_id=key_id,
        )
        assert launch.status_code == 200, launch.text
        launch_token = launch.json()["launchToken"]
        self.launch_tokens.append(launch_token)
        init = self.call(
            "POST /api/play/session/init",
            "POST",
            "/api/play/session/init",
            json={"launchToken": launch_token},
        )
        assert init.status_code == 200, init.text
        self.session_tokens.append(init.json()["sessionToken"])
        return init.json()["sessionToken"]


SITECUSTOMIZE = """\
import logging
import logging.config

logging.basicConfig(level=logging.DEBUG, format="%(asctime)s %(levelname)s %(name)s %(message)s")
_configure = logging.config.dictConfig


def _everything_at_debug(config):
    # Litestar and uvicorn configure logging (root and their loggers at INFO) as they
    # start: after each such configuration, every logger goes back to DEBUG.
    _configure(config)
    logging.getLogger().setLevel(logging.DEBUG)
    for logger in list(logging.Logger.manager.loggerDict.values()):
        if isinstance(logger, logging.Logger) and logger.level:
            logger.setLevel(logging.DEBUG)


logging.config.dictConfig = _everything_at_debug
"""


@pytest.fixture(params=["INFO", "DEBUG"])
def log_level(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def stack(database_url: str, log_level: str, tmp_path: Path) -> Iterator[Stack]:
    """The server as it runs (INFO), and with every logger at DEBUG: a ``sitecustomize``
    configures the root logger first (so the CLI's own INFO set-up changes nothing) and
    puts every logger back to DEBUG after Litestar and uvicorn configure theirs."""
    env = {}
    if log_level == "DEBUG":
        (tmp_path / "debug").mkdir()
        (tmp_path / "debug" / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
        env["PYTHONPATH"] = os.pathsep.join(
            [str(tmp_path / "debug"), *filter(None, [os.environ.get("PYTHONPATH")])]
        )
    keys = {
        "key-a": secrets.token_urlsafe(48),
        "key-a-revoked": secrets.token_urlsafe(48),
        "key-b": secrets.token_urlsafe(48),
    }
    outbound = {OP_A: secrets.token_urlsafe(48), OP_B: secrets.token_urlsafe(48)}
    wallet = ThreadedWalletServer(dict(outbound)).start()
    config_path = tmp_path / "config.toml"
    config_path.write_text(config_text(database_url, wallet, keys, outbound), encoding="utf-8")
    server = ServerProcess(
        config_path,
        tmp_path / "server.log",
        key_id="key-a",
        secret=keys["key-a"],
        database_url=database_url,
        redact=[*keys.values(), *outbound.values()],  # only what a failure message shows
        env=env,
    )
    stack = Stack(server, wallet, keys, outbound, database_url, log_level)
    try:
        server.start()
        yield stack
    finally:
        stack.http.close()
        server.kill()
        wallet.stop()


def _scenario(stack: Stack) -> None:
    ledger, faults = stack.wallet.ledger, stack.wallet.faults
    ledger.fund(OP_A, PLAYER, "EUR", 1_000_000)
    ledger.block(OP_A, BLOCKED)

    assert stack.call("openapi", "GET", "/api/schema/openapi.json").status_code == 200
    assert stack.s2s("GET", "/api/s2s/health").status_code == 200
    assert stack.s2s("GET", "/api/s2s/boxes").status_code == 200

    # signature failures of every kind
    wrong = stack.s2s("GET", "/api/s2s/health", secret=secrets.token_urlsafe(48))
    revoked = stack.s2s("GET", "/api/s2s/health", key_id="key-a-revoked")
    unknown = stack.s2s("GET", "/api/s2s/health", key_id="key-zzz", secret=stack.keys["key-a"])
    skewed = stack.s2s("GET", "/api/s2s/health", timestamp=int(time.time()) - 10_000)
    bare = stack.call("GET /api/s2s/health", "GET", "/api/s2s/health")
    assert [r.status_code for r in (wrong, revoked, unknown, skewed, bare)] == [401] * 5
    key_b_on_a = stack.s2s("GET", "/api/s2s/health", key_id="key-a", secret=stack.keys["key-b"])
    assert key_b_on_a.status_code == 401

    # sessions, both operators; the player API
    token = stack.session(PLAYER)
    stack.session(PLAYER, key_id="key-b")
    assert stack.play("GET", "/api/play/fairness", token).status_code == 200
    rotated = stack.play("POST", "/api/play/fairness/rotate", token, {"clientSeed": "mine"})
    assert rotated.status_code == 200
    prizes = stack.play(
        "GET", "/api/play/upgrader/prizes", token, params={"wagerMinor": 8600, "chanceBps": 9000}
    )
    assert prizes.status_code == 200, prizes.text
    assert [p["imageUrl"] for p in prizes.json()["prizes"]] == ["https://cdn.example/item-9.png"]
    dead = stack.play("GET", "/api/play/inventory", "not-a-session-" + secrets.token_hex(8))
    assert dead.status_code == 401

    # plays: player API and S2S, until a win (webhooks follow every settled round)
    won: list[int] = []
    for n in range(30):
        body = {"clientActionId": f"leak-{n}", **PLAY}
        answer = (
            stack.play("POST", "/api/play/upgrader/play", token, body)
            if n % 2
            else stack.s2s("POST", "/api/s2s/upgrader/play", {"playerExternalId": PLAYER, **body})
        )
        assert answer.status_code == 200, answer.text
        if answer.json()["wonItem"]:
            won.append(answer.json()["wonItem"]["inventoryItemId"])
        if len(won) >= 2:
            break
    assert len(won) >= 2, "fewer than two wins in 30 plays at chance 9000"
    conflict = stack.s2s(
        "POST",
        "/api/s2s/upgrader/play",
        {"playerExternalId": PLAYER, "clientActionId": "leak-0", **PLAY, "wagerMinor": 999},
    )
    assert conflict.status_code == 409

    # refused debits
    for player, code in ((POOR, "INSUFFICIENT_FUNDS"), (BLOCKED, "PLAYER_BLOCKED")):
        refused = stack.s2s(
            "POST",
            "/api/s2s/upgrader/play",
            {"playerExternalId": player, "clientActionId": f"refused-{player}", **PLAY},
        )
        assert refused.json()["error"]["code"] == code, refused.text

    # uncertain debits: a 503 from the wallet, then a wallet slower than the timeout;
    # the reconciler rolls both back
    for n, knobs in enumerate(({"status_5xx": 503}, {"stall_seconds": 2.0})):
        faults.configure(only_types={"wallet.debit"}, times=1, **knobs)
        uncertain = stack.s2s(
            "POST",
            "/api/s2s/upgrader/play",
            {"playerExternalId": PLAYER, "clientActionId": f"uncertain-{n}", **PLAY},
        )
        assert uncertain.status_code == 503, uncertain.text
        assert uncertain.json()["error"]["code"] == "WALLET_UNAVAILABLE"
    faults.reset()
    wait_until(
        lambda: (
            len(ledger.requests_of("wallet.rollback")) >= 2
            and all(r.http_status == 200 for r in ledger.requests_of("wallet.rollback"))
        ),
        timeout=30,
        what="the reconciler's rollbacks of both uncertain debits",
    )

    # cash-back, shipping, reads, refusals
    cashout = stack.s2s(
        "POST",
        "/api/s2s/cashout",
        {"playerExternalId": PLAYER, "clientActionId": "cash-1", "inventoryItemIds": [won[0]]},
    )
    assert cashout.status_code == 200, cashout.text
    again = stack.play(
        "POST",
        "/api/play/cashout",
        token,
        {"clientActionId": "cash-2", "inventoryItemIds": [won[0]]},
    )
    assert again.json()["error"]["code"] == "ITEM_NOT_AVAILABLE"
    shipping = stack.s2s(
        "POST",
        "/api/s2s/shipping",
        {
            "playerExternalId": PLAYER,
            "clientActionId": "ship-1",
            "inventoryItemIds": [won[1]],
            "address": {"name": "A. Person", "line1": "1 Main St", "country": "DE"},
        },
    )
    assert shipping.status_code == 200, shipping.text
    for path in ("/api/s2s/rounds", "/api/s2s/inventory", "/api/s2s/fairness"):
        assert stack.s2s("GET", path, params={"playerExternalId": PLAYER}).status_code == 200
    for path in ("/api/play/rounds", "/api/play/inventory"):
        assert stack.play("GET", path, token).status_code == 200
    invalid = stack.s2s("POST", "/api/s2s/upgrader/play", {"playerExternalId": PLAYER})
    assert invalid.status_code == 422
    assert stack.s2s("GET", "/api/s2s/rounds/r_" + "0" * 32).status_code == 404
    assert stack.call("GET /api/nothing", "GET", "/api/nothing").status_code == 404

    # the page a launch URL opens
    launch = stack.s2s(
        "POST",
        "/api/s2s/launches",
        {"playerExternalId": PLAYER, "gameKey": "upgrader", "target": {}},
    )
    stack.launch_tokens.append(launch.json()["launchToken"])
    page = stack.http.get(
        launch.json()["launchUrl"].replace("http://127.0.0.1:8000", stack.server.url)
    )
    assert page.status_code == 200
    assert launch.json()["launchToken"] not in page.text

    # webhooks delivered, then logout and a graceful stop
    wait_until(
        lambda: len(ledger.received_webhooks) >= len(won),
        timeout=30,
        what="round_settled webhooks",
    )
    assert stack.play("POST", "/api/play/session/logout", token).status_code == 200
    assert stack.play("GET", "/api/play/rounds", token).status_code == 401
    stack.server.stop()


def _service_secret(database_url: str) -> list[str]:
    """The platform's own launch-token key, as kept in the store."""
    if database_url.startswith("sqlite:///"):
        with sqlite3.connect(database_url.removeprefix("sqlite:///")) as db:
            return [row[0] for row in db.execute("SELECT value FROM service_secrets")]
    import psycopg

    base, _, schema = database_url.partition("?schema=")
    with psycopg.connect(base) as db:
        rows = db.execute(f'SELECT value FROM "{schema}".service_secrets').fetchall()  # noqa: S608
    return [row[0] for row in rows]


def test_no_secret_or_session_token_appears_in_output_answers_or_urls(stack: Stack) -> None:
    _scenario(stack)
    log = stack.server.log_path.read_text(encoding="utf-8", errors="replace")
    assert "serving on" in log  # the output was captured
    if stack.log_level == "DEBUG":
        assert "DEBUG" in log, "the DEBUG run logged nothing at DEBUG"
    configured = {
        **{f"key secret {k}": v for k, v in stack.keys.items()},
        **{f"outbound secret {o}": v for o, v in stack.outbound.items()},
    }
    service = {f"service secret {n}": v for n, v in enumerate(_service_secret(stack.database_url))}
    assert service, "the store holds no service secret"
    sessions = {f"session token {n}": t for n, t in enumerate(stack.session_tokens)}
    launches = {f"launch token {n}": t for n, t in enumerate(stack.launch_tokens)}
    secrets_ = {**configured, **service}
    found: list[str] = []

    def search(where: str, text: str, needles: dict[str, str]) -> None:
        found.extend(f"{name} in {where}" for name, value in needles.items() if value in text)

    search("the server's output", log, {**secrets_, **sessions, **launches})
    handed_out: set[str] = set()
    for index, (label, response) in enumerate(stack.answers):
        headers = "\n".join(f"{k}: {v}" for k, v in response.headers.items())
        where = f"answer {index} ({label} -> {response.status_code})"
        search(where, response.text + headers, secrets_)
        # a session token is handed out once, by session/init; never again after that
        search(
            where, response.text + headers, {n: t for n, t in sessions.items() if t in handed_out}
        )
        if label == "POST /api/play/session/init" and response.status_code == 200:
            handed_out.add(response.json()["sessionToken"])
        for url in URL.findall(response.text):
            search(f"a URL in {where}: {url}", url, sessions)
    assert handed_out == set(stack.session_tokens)
    document = next(r.text for label, r in stack.answers if label == "openapi")
    search("the OpenAPI document", document, {**secrets_, **sessions, **launches})
    ledger = stack.wallet.ledger
    for request in ledger.requests:
        search(f"wallet call {request.type}", json.dumps(request.body), {**secrets_, **sessions})
    for webhook in ledger.received_webhooks:
        text = json.dumps(webhook)
        search("a webhook", text, {**secrets_, **sessions, **launches})
        for url in URL.findall(text):
            search(f"a URL in a webhook: {url}", url, sessions)
    if stack.database_url.startswith("sqlite:///"):
        path = Path(stack.database_url.removeprefix("sqlite:///"))
        store = b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))
        search("the store (event log, read models)", store.decode("latin-1"), configured)
    print(
        f"\nno secrets ({stack.log_level}): {len(configured)} configured secrets, "
        f"{len(service)} service secret, "
        f"{len(sessions)} session tokens and {len(launches)} launch tokens searched in "
        f"{len(log.splitlines())} lines of output, {len(stack.answers)} answers, "
        f"{len(ledger.requests)} wallet calls and {len(ledger.received_webhooks)} webhooks: "
        f"{len(found)} found"
    )
    assert found == []

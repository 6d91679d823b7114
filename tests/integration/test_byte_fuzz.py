"""Byte-level fuzz of every route family (issue 19, "Must show"), on SQLite and PostgreSQL.

5,000 mutated bodies per store, generated from a fixed seed (``UPGRADER_BYTE_FUZZ_SEED``
explores another), spread evenly over the route families that take a body:

- S2S: launches, upgrader play, play-with-items, cashout, shipping, fairness/rotate;
- player: session/init, upgrader play, cashout, fairness/rotate, session/logout.

Each is sent with a valid signature (computed over the mutated bytes) or a valid session,
and one in five again without (unsigned, wrongly signed, no or an unknown bearer). The
mutations: invalid UTF-8 at a random offset (inserted or overwritten), truncations, a key
twice (the same or another value, at the start or the end, top level or nested, plain or
spelled with an escape), deep nesting (31 to 40,000 levels), huge or non-integer numbers
(2^53 + 1 .. 10^5000, 1e400, 1000.0, -0.0), random bytes and JSON-shaped junk, and the
valid body or a mutated one under another Content-Type.

The base body of each family is a request that already happened (a replay of a settled
play, cash-back or shipping) or one whose repetition is harmless (a launch, a fresh launch
token for session/init, a fresh session for each logout), so a mutation that is still a
valid request is answered 200 and checked for being the right answer: the same JSON
as the original for replays, a verifiable launch token, the player's session, a rotation
chain with every revealed seed hashing to the hash shown before it, and a dead session
after a logout (logout takes no body: every body is ignored, so each logout mutation is
such a valid request).

Asserted: no 5xx; every refusal is the error body with a documented (status, code); no
error record in the server log (the ``upgrader`` and uvicorn's error logger); and no
state change: the wallet got no debit, credit or rollback and no balance moved, and the
event log grew by exactly the events of the accepted rotations. Requests go over four
keep-alive connections at once; the manual clock keeps every request in one rate-limit
second, which the test configuration's limits (100,000 per key, session and player)
leave room for.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import logging
import os
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pytest

from application.clock import ManualClock
from application.errors import PlatformError
from ops.reference_operator.wallet import ThreadedWalletServer
from tests.support.items import PLAIN, T900, ItemsEnv, launch_session, post, win_items
from tests.support.logs import Records, captured
from tests.support.signing import signed_headers

SEED = int(os.environ.get("UPGRADER_BYTE_FUZZ_SEED", "19"))
MUTATIONS = 5000
WITHOUT_EVERY = 5  # one mutation in five is sent again without credentials
CONNECTIONS = 4
OP = "op-a"
S2S_PLAYER, PLAYER, S2S_ROTATOR = "fuzz-s2s", "fuzz-player", "fuzz-rotator"
ADDRESS = {"name": "A. Player", "line1": "1 Test Street", "city": "Testville", "country": "DE"}
MAX_BODY = 65536
DOCUMENTED = {
    401: {"MISSING_HEADERS", "INVALID_SIGNATURE", "SESSION_INVALID", "LAUNCH_TOKEN_INVALID"},
    409: {"IDEMPOTENCY_CONFLICT"},
    413: {"PAYLOAD_TOO_LARGE"},
    422: {"VALIDATION_ERROR", "LAUNCH_TARGET_INVALID"},
}
INVALID_UTF8 = [
    b"\xff",
    b"\xfe",
    b"\x80",
    b"\xc3",  # a lead byte without its continuation
    b"\xc3\x28",
    b"\xe2\x82",
    b"\xed\xa0\x80",  # a UTF-16 surrogate encoded
    b"\xc0\xaf",  # overlong
    b"\xf4\x90\x80\x80",  # beyond U+10FFFF
    b"\xf8\x88\x80\x80\x80",
]
HUGE = [
    str(2**53 + 1),
    str(-(2**53) - 1),
    str(2**63),
    "1" + "0" * 30,
    "9" * 400,
    "-" + "9" * 5000,
    "1e400",
    "-1e400",
    "1000.0",
    "1e3",
    "-0.0",
    "123456789012345678901234567890.5",
]
JUNK = [b"null", b"[]", b'"text"', b"NaN", b"Infinity", b"-", b"{", b"}", b"[{]}", b"{,}"]
CONTENT_TYPES = [
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    "application/json; charset=latin-1",
    "application/xml",
    "",
]
KINDS = ["utf8", "truncate", "duplicate", "nesting", "number", "random", "content type"]


@dataclass
class Family:
    """A route and the valid body every mutation of it starts from."""

    name: str
    path: str
    body: Callable[[], dict[str, Any]]  # a fresh one each time (session/init: a new token)
    check_ok: Callable[[Any], None]  # a 200 is the right answer
    player_token: Callable[[], str] | None = None  # player routes: the session to send

    @property
    def s2s(self) -> bool:
        return self.path.startswith("/api/s2s/")


@dataclass
class Sent:
    family: str
    kind: str
    path: str
    headers: dict[str, str]
    body: bytes
    with_credentials: bool
    token: str | None = None  # the logout's session
    answer: tuple[int, bytes] | None = None


@dataclass
class World:
    env: ItemsEnv
    replays: dict[str, tuple[dict[str, Any], Any]] = field(default_factory=dict)
    session: str = ""
    logout_tokens: list[str] = field(default_factory=list)
    rotations: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _ok(response: Any, what: str) -> Any:
    assert response.status_code == 200, f"{what}: {response.text}"
    return response.json()


def seed_world(env: ItemsEnv) -> World:
    """The actions the replay families repeat, done once for real."""
    world = World(env)
    api, ledger = env.api, env.wallet.ledger
    a, b, c = win_items(env, S2S_PLAYER, PLAIN, 3, "fuzz-win")
    (d,) = win_items(env, PLAYER, PLAIN, 1, "fuzz-pwin")
    ledger.fund(OP, S2S_PLAYER, "EUR", 100_000)
    ledger.fund(OP, PLAYER, "EUR", 100_000)
    world.session = launch_session(api, PLAYER)
    play = {"wagerMinor": 1000, "chanceBps": 9000, "targetItemId": PLAIN}
    s2s = {
        "/api/s2s/upgrader/play": {
            "playerExternalId": S2S_PLAYER,
            "clientActionId": "fuzz-play",
            **play,
        },
        "/api/s2s/upgrader/play-with-items": {
            "playerExternalId": S2S_PLAYER,
            "clientActionId": "fuzz-items",
            "stakeItemIds": [a],
            "chanceBps": 9000,
            "targetItemId": T900,
        },
        "/api/s2s/cashout": {
            "playerExternalId": S2S_PLAYER,
            "clientActionId": "fuzz-cash",
            "inventoryItemIds": [b],
        },
        "/api/s2s/shipping": {
            "playerExternalId": S2S_PLAYER,
            "clientActionId": "fuzz-ship",
            "inventoryItemIds": [c],
            "address": ADDRESS,
        },
    }
    for path, body in s2s.items():
        world.replays[path] = (body, _ok(post(api, path, body), path))
    player = {
        "/api/play/upgrader/play": {"clientActionId": "fuzz-pplay", **play},
        "/api/play/cashout": {"clientActionId": "fuzz-pcash", "inventoryItemIds": [d]},
    }
    for path, body in player.items():
        world.replays[path] = (body, _ok(api.play("POST", path, world.session, json=body), path))
    return world


def families(world: World) -> list[Family]:
    env = world.env
    sessions = env.platform.sessions

    def replay(path: str, token: Callable[[], str] | None = None) -> Family:
        body, answer = world.replays[path]

        def check(got: Any) -> None:
            assert got == answer, (path, got)

        return Family(path.split("/api/")[1], path, lambda: body, check, token)

    def launch_ok(got: Any) -> None:
        claims = sessions.peek_launch_token(got["launchToken"])
        assert claims is not None and claims.player_external_id == S2S_PLAYER, got
        assert got["launchUrl"].endswith(got["launchToken"]), got

    def init_ok(got: Any) -> None:
        assert got["player"] == {"operatorId": OP, "playerExternalId": PLAYER}, got
        assert sessions.authenticate(got["sessionToken"]).player_external_id == PLAYER

    def rotated(player: str) -> Callable[[Any], None]:
        def check(got: Any) -> None:
            with world.lock:
                world.rotations.setdefault(player, []).append(got)

        return check

    def logout_ok(got: Any) -> None:
        assert got == {"status": "logged_out"}, got

    def new_token() -> str:
        return sessions.mint_launch_token(OP, PLAYER, "upgrader", {})[0]

    def session() -> str:
        return world.session

    return [
        Family(
            "s2s/launches",
            "/api/s2s/launches",
            lambda: {"playerExternalId": S2S_PLAYER, "gameKey": "upgrader", "target": {}},
            launch_ok,
        ),
        replay("/api/s2s/upgrader/play"),
        replay("/api/s2s/upgrader/play-with-items"),
        replay("/api/s2s/cashout"),
        replay("/api/s2s/shipping"),
        Family(
            "s2s/fairness/rotate",
            "/api/s2s/fairness/rotate",
            lambda: {"playerExternalId": S2S_ROTATOR, "clientSeed": "fuzz-seed"},
            rotated(S2S_ROTATOR),
        ),
        Family(
            "play/session/init",
            "/api/play/session/init",
            lambda: {"launchToken": new_token()},
            init_ok,
        ),
        replay("/api/play/upgrader/play", session),
        replay("/api/play/cashout", session),
        Family(
            "play/fairness/rotate",
            "/api/play/fairness/rotate",
            lambda: {"clientSeed": "fuzz-player-seed"},
            rotated(PLAYER),
            session,
        ),
        Family(
            "play/session/logout",
            "/api/play/session/logout",
            lambda: {"reason": "done"},
            logout_ok,
            lambda: "",  # a fresh session each (made when the mutation is)
        ),
    ]


# -- mutations ------------------------------------------------------------------------------

PLACEHOLDER = "\x00placeholder\x00"


def _encode(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _with_raw_value(rng: random.Random, body: dict[str, Any], raw: bytes) -> bytes:
    """``body`` with one value (top level, or inside a nested object) replaced by ``raw``."""
    keys = list(body)
    if not keys:
        return raw
    key = rng.choice(keys)
    copy = dict(body)
    if isinstance(copy[key], dict) and copy[key] and rng.random() < 0.5:
        inner = dict(copy[key])
        inner[rng.choice(list(inner))] = PLACEHOLDER
        copy[key] = inner
    else:
        copy[key] = PLACEHOLDER
    return _encode(copy).replace(_encode(PLACEHOLDER), raw)


def _escaped(key: str, rng: random.Random) -> str:
    """``key`` as a JSON string with one character spelled as a \\u escape."""
    at = rng.randrange(len(key))
    return '"' + key[:at] + f"\\u{ord(key[at]):04x}" + key[at + 1 :] + '"'


def _duplicate(rng: random.Random, body: dict[str, Any]) -> bytes:
    """A member repeated in the body's object or in a nested object."""
    nested = [k for k, v in body.items() if isinstance(v, dict) and v]
    if nested and rng.random() < 0.4:
        outer = rng.choice(nested)
        inner = body[outer]
        copy = dict(body)
        copy[outer] = PLACEHOLDER
        return _encode(copy).replace(_encode(PLACEHOLDER), _duplicate(rng, inner))
    key = rng.choice(list(body))
    value = rng.choice([body[key], "other", 1, 100000, None])
    spelled = _escaped(key, rng) if rng.random() < 0.3 else json.dumps(key)
    member = spelled.encode() + b":" + _encode(value)
    raw = _encode(body)
    if rng.random() < 0.5:
        return b"{" + member + b"," + raw[1:]
    return raw[:-1] + b"," + member + b"}"


def _nesting(rng: random.Random, body: dict[str, Any]) -> bytes:
    depth = rng.choice([31, 32, 33, 40, 100, 1000, 10000, 40000])
    if rng.random() < 0.5:
        deep = b"[" * depth + b"1" + b"]" * depth
    else:
        deep = b'{"a":' * depth + b"1" + b"}" * depth
    return _with_raw_value(rng, body, deep)


def _random(rng: random.Random, body: dict[str, Any]) -> bytes:
    choice = rng.random()
    if choice < 0.4:
        return rng.randbytes(rng.randint(0, 300))
    if choice < 0.6:
        return b'{"' + rng.randbytes(rng.randint(0, 100))
    if choice < 0.8:
        return rng.choice(JUNK)
    raw = _encode(body)
    return rng.choice(
        [
            b"\xef\xbb\xbf" + raw,  # a byte-order mark
            raw + b"x",
            raw + raw,
            raw.decode().encode("utf-16"),
            raw.replace(b'"', b"'"),
            b"[" + raw + b"]",
        ]
    )


def mutate(rng: random.Random, kind: str, body: dict[str, Any]) -> bytes:
    raw = _encode(body)
    if kind == "utf8":
        at = rng.randint(0, len(raw))
        bad = rng.choice(INVALID_UTF8)
        cut = at + (len(bad) if rng.random() < 0.5 else 0)
        return raw[:at] + bad + raw[cut:]
    if kind == "truncate":
        return raw[: rng.randrange(len(raw))]
    if kind == "duplicate":
        return _duplicate(rng, body)
    if kind == "nesting":
        return _nesting(rng, body)
    if kind == "number":
        return _with_raw_value(rng, body, rng.choice(HUGE).encode())
    if kind == "random":
        return _random(rng, body)
    # content type: the valid body, or another mutation of it, under another type
    if rng.random() < 0.5:
        return raw
    return mutate(rng, rng.choice(KINDS[:-1]), body)


def fresh_sessions(world: World, count: int) -> list[str]:
    """``count`` sessions of the player, opened in process (four at a time)."""
    sessions = world.env.platform.sessions

    def one(_: int) -> str:
        token = sessions.mint_launch_token(OP, PLAYER, "upgrader", {})[0]
        return sessions.open_session(sessions.redeem_launch_token(token))

    with ThreadPoolExecutor(CONNECTIONS) as pool:
        world.logout_tokens = list(pool.map(one, range(count)))
    return list(world.logout_tokens)


def plan(world: World, fams: list[Family], clock: ManualClock) -> list[Sent]:
    rng = random.Random(SEED)
    logouts = [f for f in fams if f.player_token is not None and not f.player_token()]
    unused = fresh_sessions(world, sum(fams[n % len(fams)] in logouts for n in range(MUTATIONS)))
    sent: list[Sent] = []
    for n in range(MUTATIONS):
        family = fams[n % len(fams)]
        kind = KINDS[(n // len(fams)) % len(KINDS)]
        base = family.body()
        body = mutate(rng, kind, base)
        content_type = rng.choice(CONTENT_TYPES) if kind == "content type" else "application/json"
        headers = {"Content-Type": content_type}
        token = None
        if family.s2s:
            signed = signed_headers(
                "key-a", "secret-a-1", int(clock.now()), "POST", family.path, body
            )
            headers = {**signed, **headers}
        elif family.player_token is not None:
            token = family.player_token() or unused.pop()  # logout: a fresh session each
            headers["Authorization"] = f"Bearer {token}"
        sent.append(Sent(family.name, kind, family.path, headers, body, True, token))
        if n % WITHOUT_EVERY == 0 and family.path != "/api/play/session/init":
            sent.append(without_credentials(rng, family, sent[-1], clock))
    return sent


def without_credentials(rng: random.Random, family: Family, sent: Sent, clock: ManualClock) -> Sent:
    headers = {"Content-Type": sent.headers["Content-Type"]}
    how = rng.choice(["none", "wrong"])
    if family.s2s and how == "wrong":  # signed over other bytes, or with another key
        other = sent.body + b" " if rng.random() < 0.5 else sent.body
        secret = "secret-a-1" if other != sent.body else "secret-b-1"
        signed = signed_headers("key-a", secret, int(clock.now()), "POST", family.path, other)
        headers.update({k: v for k, v in signed.items() if k != "Content-Type"})
    elif not family.s2s and how == "wrong":
        headers["Authorization"] = "Bearer " + hashlib.sha256(sent.body).hexdigest()
    return Sent(family.name, sent.kind, sent.path, headers, sent.body, False)


# -- sending --------------------------------------------------------------------------------


class Connection:
    """One keep-alive HTTP/1.1 connection, reopened when the server closed it."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.http = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.reopened = 0

    def send(self, sent: Sent) -> tuple[int, bytes]:
        for attempt in (1, 2):
            try:
                self.http.request("POST", sent.path, body=sent.body, headers=sent.headers)
                response = self.http.getresponse()
                content = response.read()
                if response.getheader("connection", "").lower() == "close":
                    self.http.close()
                return response.status, content
            except (ConnectionError, http.client.RemoteDisconnected):
                # the server had closed this idle connection before reading the request
                self.http.close()
                self.http = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                self.reopened += 1
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.http.close()


def send_all(port: int, sent: list[Sent]) -> int:
    """Send every request over CONNECTIONS connections at once; returns reconnections."""
    connections = [Connection(port) for _ in range(CONNECTIONS)]

    def work(index: int) -> None:
        for item in sent[index::CONNECTIONS]:
            item.answer = connections[index].send(item)

    with ThreadPoolExecutor(CONNECTIONS) as pool:
        list(pool.map(work, range(CONNECTIONS)))
    for connection in connections:
        connection.close()
    return sum(c.reopened for c in connections)


# -- checks ---------------------------------------------------------------------------------


@pytest.fixture
def server_log() -> Iterator[Records]:
    with captured(("upgrader", "uvicorn.error", "litestar")) as records:
        yield records


@pytest.fixture
def env(database_url: str, clock: ManualClock, wallet: ThreadedWalletServer) -> Iterator[ItemsEnv]:
    with ItemsEnv(database_url, clock, wallet) as items_env:
        yield items_env


def wallet_state(env: ItemsEnv) -> tuple[Any, ...]:
    ledger = env.wallet.ledger
    return (
        len(ledger.requests_of("debit")),
        len(ledger.requests_of("credit")),
        len(ledger.requests_of("rollback")),
        ledger.net_debits(),
        ledger.net_credits(),
        ledger.balance(OP, S2S_PLAYER, "EUR"),
        ledger.balance(OP, PLAYER, "EUR"),
    )


def check_answer(item: Sent, fams: dict[str, Family]) -> str:
    """The answer is a documented one; returns its label for the summary."""
    assert item.answer is not None
    status, content = item.answer
    where = f"{item.family} {item.kind} {item.body[:80]!r}"
    assert status < 500, f"{where}: {status} {content[:300]!r}"
    if status == 200:
        assert item.with_credentials, f"{where}: accepted without credentials"
        fams[item.family].check_ok(json.loads(content))
        return "200"
    error = json.loads(content)["error"]
    assert set(error) == {"code", "message"} and isinstance(error["message"], str), where
    code = error["code"]
    assert code in DOCUMENTED.get(status, set()), f"{where}: {status} {code}"
    if not item.with_credentials:
        expected = (
            {"MISSING_HEADERS", "INVALID_SIGNATURE"}
            if item.path.startswith("/api/s2s/")
            else {"SESSION_INVALID"}
        )
        assert code in expected or (status == 413 and item.path.startswith("/api/s2s/")), where
    elif item.kind in ("utf8", "truncate", "duplicate", "random", "number"):
        assert (status, code) in ((422, "VALIDATION_ERROR"), (413, "PAYLOAD_TOO_LARGE")), where
    if status == 413:
        assert len(item.body) > MAX_BODY, where
    return f"{status} {code}"


def check_rotations(world: World, before: dict[str, str]) -> int:
    """Every accepted rotation revealed the seed shown before it: one unbroken chain from
    the hash before the run to the active one now, per player. Returns the rotations."""
    for player, answers in world.rotations.items():
        following = {}
        for answer in answers:
            previous = answer["previous"]
            seed = previous["serverSeed"].encode("ascii")
            assert hashlib.sha256(seed).hexdigest() == previous["serverSeedHash"], answer
            following[previous["serverSeedHash"]] = answer["active"]["serverSeedHash"]
        assert len(following) == len(answers), f"{player}: one seed revealed twice"
        at, steps = before[player], 0
        while at in following:
            at, steps = following[at], steps + 1
        assert steps == len(answers), player
        assert at == active_hash(world, player), player
    return sum(len(a) for a in world.rotations.values())


def active_hash(world: World, player: str) -> str:
    answer = world.env.api.s2s("GET", "/api/s2s/fairness", params={"playerExternalId": player})
    assert answer.status_code == 200, answer.text
    return answer.json()["active"]["serverSeedHash"]


def test_no_byte_sequence_gets_a_5xx_or_changes_state(
    env: ItemsEnv, clock: ManualClock, server_log: Records
) -> None:
    t0 = time.monotonic()
    world = seed_world(env)
    fams = families(world)
    by_name = {f.name: f for f in fams}
    # what one rotation of a player who has seeds appends to the log
    recorder = env.platform.events.recorder
    _ok(post(env.api, "/api/s2s/fairness/rotate", {"playerExternalId": S2S_ROTATOR}), "rotate")
    head = recorder.max_notification_id()
    _ok(post(env.api, "/api/s2s/fairness/rotate", {"playerExternalId": S2S_ROTATOR}), "rotate")
    _ok(env.api.play("POST", "/api/play/fairness/rotate", world.session, json={}), "rotate")
    rotation_events = recorder.select_notifications(head + 1, 100)
    per_rotation = len(rotation_events) // 2
    rotation_topics = {n.topic for n in rotation_events}
    before_hashes = {p: active_hash(world, p) for p in (S2S_ROTATOR, PLAYER)}
    t1 = time.monotonic()
    sent = plan(world, fams, clock)
    t2 = time.monotonic()
    head, wallet_before = recorder.max_notification_id(), wallet_state(env)

    started, cpu = time.monotonic(), time.process_time()
    reopened = send_all(env.live.port, sent)
    elapsed, cpu = time.monotonic() - started, time.process_time() - cpu

    outcomes: Counter[str] = Counter()
    for item in sent:
        label = check_answer(item, by_name)
        outcomes[f"{item.kind}: {label}{' ' + item.family if label == '200' else ''}"] += 1
    errors = [r for r in server_log.records if r.levelno >= logging.ERROR]
    assert errors == [], [r.getMessage() for r in errors[:5]]
    rotations = check_rotations(world, before_hashes)
    assert wallet_state(env) == wallet_before  # no money moved, no wallet call made
    # (notification ids may have gaps on PostgreSQL: the events are counted, not the ids)
    appended = recorder.select_notifications(head + 1, 100_000)
    assert len(appended) == rotations * per_rotation, (len(appended), rotations, per_rotation)
    assert {n.topic for n in appended} <= rotation_topics
    for token in world.logout_tokens:  # every logout mutation logged its session out
        with pytest.raises(PlatformError):
            env.platform.sessions.authenticate(token)
    assert env.platform.sessions.authenticate(world.session).player_external_id == PLAYER
    checked = time.monotonic() - started - elapsed
    with_credentials = sum(item.with_credentials for item in sent)
    print(
        f"\nbyte fuzz (seed {SEED}): {with_credentials} mutated bodies with credentials and "
        f"{len(sent) - with_credentials} without, in {elapsed:.1f} s ({cpu:.1f} s CPU of "
        f"server and client) over {CONNECTIONS} connections ({reopened} reopened); "
        f"{rotations} rotations accepted; set-up {t1 - t0:.1f} s, {len(world.logout_tokens)} "
        f"sessions for the logouts {t2 - t1:.1f} s, checks {checked:.1f} s; "
        f"{len(server_log.records)} warnings logged"
    )
    for label, count in sorted(outcomes.items()):
        print(f"  {label:45} {count:5}")
    assert with_credentials == MUTATIONS

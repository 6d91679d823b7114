"""Strict input over real HTTP (issue 15 item 5, issue 19 item 1), on SQLite and PostgreSQL.

- Every integer query parameter of every operation in the OpenAPI document, on both APIs,
  takes only the canonical decimal spelling within int64; anything else answers 422
  ``VALIDATION_ERROR`` naming the parameter by its wire name, and records nothing.
- Every single-valued query parameter sent twice answers 422 naming it; ``stakeItemIds``
  repeats by design.
- Bodies: invalid UTF-8, a key twice in one object (at any depth, also spelled with an
  escape), nesting beyond 32 levels: 422 on every kind of route, nothing recorded; the
  depth bound counts brackets outside strings only.
- A client that announces more body than it sends and hangs up is no error in the log.
- A path with a NUL character (a path parameter, a game asset): 404, not a 500.
- A known path with a wrong method: 405 ``METHOD_NOT_ALLOWED`` with the error body and
  ``Allow``.

The byte-level fuzz of the same rules is ``test_byte_fuzz.py``.
"""

from __future__ import annotations

import json
import logging
import re
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from application.platform import Platform
from ops.reference_operator.wallet import ThreadedWalletServer
from tests.support.live import Api, LiveServer
from tests.support.logs import Records, captured
from tests.support.signing import signed_headers
from tests.support.waiting import wait_until

OP = "op-a"
PLAYER = "strict-player"
# a valid value for each query parameter of the document, by wire name
VALID = {
    "playerExternalId": PLAYER,
    "wagerMinor": "1000",
    "chanceBps": "5000",
    "limit": "10",
    "cursor": "1",
    "stakeItemIds": "1",
    "stakeItemIds[]": "1",
    "currency": "EUR",
    "locale": "en",
    "state": "unresolved",
    "status": "settled",
}
NOT_CANONICAL = [
    "1e3",
    "1E3",
    "1000.0",
    "1000.",
    "+1000",
    " 1000",
    "1000 ",
    "1000\n",
    "0x10",
    "0o17",
    "1_000",
    "1,000",
    "0100",
    "00",
    "-0",
    "--1",
    "",
    "-",
    "１０００",  # fullwidth digits
    "١٠٠٠",  # Arabic-Indic digits
    "NaN",
    "Infinity",
    "true",
    "9223372036854775808",  # 2^63
    "-9223372036854775809",  # -2^63 - 1
    "99999999999999999999",
]
INT_MESSAGE = "not an integer (ASCII digits, an optional '-', no leading zeros, within int64)"


def _error(response: httpx.Response) -> tuple[int, str, str]:
    error = response.json()["error"]
    return response.status_code, error["code"], error["message"]


def _session(api: Api, player: str) -> str:
    body = json.dumps({"playerExternalId": player, "gameKey": "upgrader", "target": {}})
    launch = api.s2s("POST", "/api/s2s/launches", body.encode())
    assert launch.status_code == 200, launch.text
    init = api.http.post(
        "/api/play/session/init", json={"launchToken": launch.json()["launchToken"]}
    )
    assert init.status_code == 200, init.text
    return init.json()["sessionToken"]


class World:
    """The live API with a funded player, one session of theirs, and what "nothing
    recorded" is compared against."""

    def __init__(self, api: Api, platform: Platform, wallet: ThreadedWalletServer) -> None:
        self.api, self.platform, self.wallet = api, platform, wallet
        wallet.ledger.fund(OP, PLAYER, "EUR", 1_000_000)
        self.token = _session(api, PLAYER)

    def state(self) -> tuple[Any, ...]:
        """The event log's head and every wallet request and balance."""
        ledger = self.wallet.ledger
        return (
            self.platform.events.recorder.max_notification_id(),
            len(ledger.requests),
            ledger.balance(OP, PLAYER, "EUR"),
            ledger.net_debits(),
            ledger.net_credits(),
        )

    def get(self, path: str, params: list[tuple[str, str]]) -> httpx.Response:
        if path.startswith("/api/s2s/"):
            return self.api.s2s("GET", path, params=params)
        return self.api.play("GET", path, self.token, params=params)

    def post(self, path: str, body: bytes, **headers: str) -> httpx.Response:
        if path.startswith("/api/s2s/"):
            return self.api.s2s("POST", path, body, headers=headers)
        if path == "/api/play/session/init":
            return self.api.http.post(path, content=body, headers=headers)
        bearer = {"Authorization": f"Bearer {self.token}", **headers}
        return self.api.http.post(path, content=body, headers=bearer)


@pytest.fixture
def world(api: Api, live: LiveServer, platform: Platform, wallet: ThreadedWalletServer) -> World:
    return World(api, platform, wallet)


PATH_VALUES = {"box_id": "7", "box_version_id": "3"}  # the test catalogue's box


def query_operations(api: Api) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """(path, query parameters) of every GET operation of the document that has any, with
    its path parameters filled in."""
    document = api.http.get("/api/schema/openapi.json").json()
    for path, item in sorted(document["paths"].items()):
        parameters = [p for p in item.get("get", {}).get("parameters", []) if p["in"] == "query"]
        if parameters:
            yield re.sub(r"\{(\w+)\}", lambda m: PATH_VALUES[m.group(1)], path), parameters


def _kind(parameter: dict[str, Any]) -> tuple[bool, bool]:
    """(integer-valued, an array) from the parameter's schema in the document."""
    schema = json.dumps(parameter["schema"])
    return '"integer"' in schema, '"array"' in schema


def _base(parameters: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(p["name"], VALID[p["name"]]) for p in parameters if p.get("required")]


def test_integer_query_parameters_take_only_the_canonical_spelling(world: World) -> None:
    before = world.state()
    covered = []
    for path, parameters in query_operations(world.api):
        for parameter in parameters:
            name = parameter["name"]
            integer, array = _kind(parameter)
            if not integer:
                continue
            covered.append(f"{path} {name}")
            base = [(n, v) for n, v in _base(parameters) if n != name]
            for value in NOT_CANONICAL:
                answer = world.get(path, [*base, (name, value)])
                assert _error(answer) == (422, "VALIDATION_ERROR", f"{name}: {INT_MESSAGE}"), (
                    path,
                    name,
                    value,
                    answer.text,
                )
            if array:  # one bad value among good ones
                answer = world.get(path, [*base, (name, "1"), (name, "2.0"), (name, "3")])
                assert _error(answer)[2] == f"{name}: {INT_MESSAGE}", answer.text
            # the canonical spellings pass this check (and may be refused by the next one)
            for value in ("1000", "-5", "0", "9223372036854775807", "-9223372036854775808"):
                answer = world.get(path, [*base, (name, value)])
                assert answer.status_code < 500, answer.text
                if answer.status_code != 200:
                    assert _error(answer)[2] != f"{name}: {INT_MESSAGE}", (path, name, value)
    assert sorted(covered) == [
        "/api/play/rounds limit",
        "/api/play/upgrader/prizes chanceBps",
        "/api/play/upgrader/prizes wagerMinor",
        "/api/play/upgrader/prizes-by-items chanceBps",
        "/api/play/upgrader/prizes-by-items stakeItemIds",
        "/api/play/upgrader/prizes-by-items stakeItemIds[]",
        "/api/s2s/rounds limit",
        "/api/s2s/upgrader/prizes chanceBps",
        "/api/s2s/upgrader/prizes wagerMinor",
        "/api/s2s/upgrader/prizes-by-items chanceBps",
        "/api/s2s/upgrader/prizes-by-items stakeItemIds",
        "/api/s2s/upgrader/prizes-by-items stakeItemIds[]",
    ]
    assert world.state() == before  # nothing recorded, no wallet call


def test_canonical_query_integers_mean_what_they_say(world: World) -> None:
    prizes = world.get(
        "/api/s2s/upgrader/prizes",
        [("playerExternalId", PLAYER), ("wagerMinor", "1000"), ("chanceBps", "5000")],
    )
    assert prizes.status_code == 200, prizes.text
    assert (prizes.json()["wagerMinor"], prizes.json()["chanceBps"]) == (1000, 5000)
    too_big = world.get(
        "/api/play/upgrader/prizes", [("wagerMinor", "9223372036854775807"), ("chanceBps", "5000")]
    )
    assert _error(too_big)[:2] == (422, "UPGRADER_WAGER_OUT_OF_RANGE")
    limit = world.get("/api/play/rounds", [("limit", "101")])
    assert _error(limit)[:2] == (422, "VALIDATION_ERROR")
    assert _error(limit)[2].startswith("limit: Expected `int` <= 100"), limit.text


def test_a_single_valued_query_parameter_sent_twice_is_refused(world: World) -> None:
    before = world.state()
    covered = []
    for path, parameters in query_operations(world.api):
        base = _base(parameters)
        for parameter in parameters:
            name = parameter["name"]
            if _kind(parameter)[1]:
                continue
            covered.append(f"{path} {name}")
            others = [(n, v) for n, v in base if n != name]
            for second in (VALID[name], "other"):  # the same value twice is refused too
                answer = world.get(path, [*others, (name, VALID[name]), (name, second)])
                assert _error(answer) == (
                    422,
                    "VALIDATION_ERROR",
                    f"{name}: given more than once (one value expected)",
                ), (path, name, answer.text)
    assert len(covered) == 36, covered  # every single-valued query parameter of the document
    assert "/api/play/boxes/7/versions/3 currency" in covered
    assert "/api/s2s/upgrader/prizes playerExternalId" in covered
    assert world.state() == before
    # repeated by design: stakeItemIds (plain and bracketed, also mixed)
    for path, auth in (("/api/s2s/upgrader/prizes-by-items", [("playerExternalId", PLAYER)]),):
        query = [*auth, ("chanceBps", "5000"), ("stakeItemIds", "1"), ("stakeItemIds", "2")]
        answer = world.get(path, [*query, ("stakeItemIds[]", "3")])
        assert _error(answer)[:2] == (422, "UPGRADER_ITEM_NOT_OWNED"), answer.text
    player = world.get(
        "/api/play/upgrader/prizes-by-items",
        [("chanceBps", "5000"), ("stakeItemIds[]", "1"), ("stakeItemIds[]", "2")],
    )
    assert _error(player)[:2] == (422, "UPGRADER_ITEM_NOT_OWNED"), player.text


PLAY = {"clientActionId": "strict-1", "wagerMinor": 1000, "chanceBps": 9000, "targetItemId": 3}
BODIES = {  # a valid body of each kind of route: signed, session, unauthenticated
    "/api/s2s/upgrader/play": {**PLAY, "playerExternalId": PLAYER},
    "/api/s2s/launches": {"playerExternalId": PLAYER, "gameKey": "upgrader", "target": {}},
    "/api/play/upgrader/play": PLAY,
    "/api/play/session/init": {"launchToken": "x" * 40},
}


def _raw(body: dict[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()


def test_bodies_decode_strictly_on_every_kind_of_route(world: World) -> None:
    before = world.state()
    refused = "VALIDATION_ERROR"
    for path, body in BODIES.items():
        raw = _raw(body)
        first_key = next(iter(body)).encode()
        cases = {
            "invalid UTF-8 in a value": raw.replace(b'":"', b'":"\xff', 1),
            "a lone surrogate's bytes": raw.replace(b'":"', b'":"\xed\xa0\x80', 1),
            "an overlong encoding": raw.replace(b'":"', b'":"\xc0\xaf', 1),
            "invalid UTF-8 in a key": raw.replace(first_key, first_key + b"\xfe", 1),
            "invalid UTF-8 outside strings": raw[:-1] + b"\x80}",
            "a key twice, other values": raw[:-1] + b',"' + first_key + b'":"zz"}',
            "a key twice, the same value": raw[:-1] + b"," + raw[1:-1].split(b",")[0] + b"}",
            "a key twice, spelled with an escape": raw[:-1]
            + b',"\\u00'
            + f"{first_key[0]:02x}".encode()
            + first_key[1:]
            + b'":"zz"}',
        }
        for case, mutated in cases.items():
            answer = world.post(path, mutated)
            status, code, message = _error(answer)
            assert (status, code) == (422, refused), (path, case, answer.text)
            if "twice" in case:
                assert message == (
                    f"{first_key.decode()}: duplicate key (a key may occur once per object)"
                ), (path, case, message)
            elif "outside strings" in case:
                expected = f"expected ',' or '}}' (byte {len(raw) - 1})"
                assert message == f"malformed request: JSON is malformed: {expected}", case
            else:
                assert message == "malformed request: the body is not valid UTF-8", (path, case)
    assert world.state() == before


def test_a_signed_body_with_a_key_twice_is_never_read_either_way(world: World) -> None:
    """{"wagerMinor":100000,"wagerMinor":1000}: no debit of either amount."""
    before = world.state()
    body = (
        b'{"playerExternalId":"' + PLAYER.encode() + b'","clientActionId":"twice",'
        b'"wagerMinor":100000,"wagerMinor":1000,"chanceBps":9000,"targetItemId":3}'
    )
    answer = world.post("/api/s2s/upgrader/play", body)
    assert _error(answer) == (
        422,
        "VALIDATION_ERROR",
        "wagerMinor: duplicate key (a key may occur once per object)",
    )
    nested = {
        "/api/s2s/launches": b'{"playerExternalId":"p","gameKey":"upgrader",'
        b'"target":{"boxId":1,"boxId":2}}',
        "/api/s2s/shipping": b'{"playerExternalId":"p","clientActionId":"s",'
        b'"inventoryItemIds":[1],"address":{"city":"A","city":"B"}}',
    }
    for path, raw in nested.items():
        message = _error(world.post(path, raw))[2]
        key = "boxId" if "launches" in path else "city"
        assert message == f"{key}: duplicate key (a key may occur once per object)", path
    assert world.state() == before
    # the same play with the key once is a play
    once = body.replace(b'"wagerMinor":100000,', b"")
    played = world.post("/api/s2s/upgrader/play", once)
    assert played.status_code == 200, played.text
    assert played.json()["round"]["betMinor"] == 1000


def _nested(depth: int) -> bytes:
    """A launch body whose ``target`` is an object nested so that the body is ``depth``
    levels deep (the body's own object is level 1)."""
    inner = b'{"a":' * (depth - 2) + b"1" + b"}" * (depth - 2) if depth > 2 else b"1"
    target = b'{"a":' + inner + b"}"
    return b'{"playerExternalId":"p","gameKey":"upgrader","target":' + target + b"}"


def test_nesting_is_bounded_at_32_levels(world: World) -> None:
    before = world.state()
    for depth in (33, 100, 1000, 5000):
        answer = world.post("/api/s2s/launches", _nested(depth))
        assert _error(answer) == (
            422,
            "VALIDATION_ERROR",
            "malformed request: JSON nested more than 32 levels deep",
        ), depth
    arrays = b'{"launchToken":' + b"[" * 40 + b"]" * 40 + b"}"
    assert _error(world.post("/api/play/session/init", arrays))[2].endswith("32 levels deep")
    # 32 levels are read: the launch handler refuses the non-empty target itself
    answer = world.post("/api/s2s/launches", _nested(32))
    assert _error(answer)[:2] == (422, "LAUNCH_TARGET_INVALID"), answer.text
    # brackets inside strings are text, not nesting
    player = "[" * 40 + "{" * 40
    answer = world.post(
        "/api/s2s/launches",
        _raw({"playerExternalId": player, "gameKey": "upgrader", "target": {}}),
    )
    assert answer.status_code == 200, answer.text
    assert world.state() == before
    too_large = world.post("/api/s2s/launches", b"[" * 70_000)
    assert _error(too_large)[:2] == (413, "PAYLOAD_TOO_LARGE")


def test_any_content_type_is_read_as_json(world: World) -> None:
    body = _raw({"playerExternalId": PLAYER, "gameKey": "upgrader", "target": {}})
    for content_type in ("text/plain", "application/x-www-form-urlencoded", "application/xml"):
        answer = world.post("/api/s2s/launches", body, **{"Content-Type": content_type})
        assert answer.status_code == 200, (content_type, answer.text)
    form = world.post(
        "/api/s2s/launches",
        b"playerExternalId=p&gameKey=upgrader",
        **{"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert _error(form)[:2] == (422, "VALIDATION_ERROR")


@pytest.fixture
def server_log() -> Iterator[Records]:
    """Every record of the API's and uvicorn's error loggers, debug included."""
    with captured(("upgrader.api", "uvicorn.error"), logging.DEBUG) as records:
        yield records


def test_a_client_that_hangs_up_mid_body_is_not_an_error(
    world: World, live: LiveServer, server_log: Records
) -> None:
    before = world.state()
    signed = signed_headers("key-a", "secret-a-1", int(world.api.clock.now()), "POST", "/x")
    cases = [
        ("/api/s2s/upgrader/play", {k: v for k, v in signed.items() if k != "Content-Type"}),
        ("/api/play/upgrader/play", {"Authorization": f"Bearer {world.token}"}),
        ("/api/play/session/init", {}),
    ]
    for path, headers in cases:
        head = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Length: 1000"]
        head += [f"{name}: {value}" for name, value in headers.items()]
        with socket.create_connection(("127.0.0.1", live.port), timeout=10) as sock:
            sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + b'{"clientAct')
    wait_until(
        lambda: sum("client vanished" in r.getMessage() for r in server_log.records) == 3,
        what="the three vanished clients seen by the API",
    )
    assert [r for r in server_log.records if r.levelno >= logging.WARNING] == []
    assert world.state() == before


def test_a_path_with_a_nul_character_names_nothing(world: World) -> None:
    """A NUL in a path parameter was a 500 (PostgreSQL text, file names): 404 now."""
    before = world.state()
    signed = world.api.s2s("GET", "/api/s2s/rounds/r_%00")
    assert _error(signed) == (404, "NOT_FOUND", "no such route or resource")
    for path in ("/game/assets/a%00.js", "/game/assets/%00", "/api/play/rounds/%00"):
        assert _error(world.api.http.get(path))[:2] == (404, "NOT_FOUND"), path
    assert world.state() == before


def test_a_wrong_method_answers_405_with_the_error_body(world: World) -> None:
    for method, path, allowed in (
        ("PUT", "/api/s2s/launches", "POST, OPTIONS"),
        ("DELETE", "/api/s2s/upgrader/prizes", "GET, OPTIONS"),
        ("GET", "/api/play/upgrader/play", "POST, OPTIONS"),
        ("POST", "/api/play/balance", "GET, OPTIONS"),
    ):
        answer = world.api.http.request(method, path)
        assert _error(answer) == (405, "METHOD_NOT_ALLOWED", "method not allowed on this route")
        assert set(answer.headers["allow"].split(", ")) == set(allowed.split(", ")), path

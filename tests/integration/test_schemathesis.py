"""Schemathesis over real HTTP against the app's own OpenAPI document (issue 9, part 1).

The live platform (uvicorn on loopback, the real reference wallet beside it) publishes
``/api/schema/openapi.json``; schemathesis loads it from that URL and generates, for every
operation in it, schema-valid (positive) and schema-violating (negative) requests. Every
request is authenticated the way a real client would be, on the final prepared request:

- ``/api/s2s/*``: ``X-Key-Id``/``X-Timestamp``/``X-Signature`` computed over the exact body
  bytes and the exact path that go on the wire (a ``requests`` auth hook, which runs after
  the body is serialised);
- ``/api/play/*``: ``Authorization: Bearer`` with a session minted through a real launch
  (a fresh one for each ``session/logout`` case, so logging out kills only that one).

Two thirds of the positive cases are steered towards known-good values (a funded player,
a configured chance, an owned item, a real round, a fresh launch token) so the deep paths
(debits, grants, cash-back, shipping, round reads, sessions) run too, not only the early
refusals. Each operation is also sent once without credentials: 401 with its code.

Checks on every answer: no 5xx; the status is one the document lists for the operation;
the content type and the body match the documented schema; a refusal is the interface's
error body ``{"error": {"code": str, "message": str}}``, and its code is one the operation
lists under that status (``x-error-codes``, api/openapi_guide.py); negative data is
refused. And the set of operations exercised must equal the set in the document. Counts
are printed.

SQLite only: this checks the HTTP contract (routes, schemas, statuses), which does not
depend on the store; both stores are covered by the other integration tests and the
security matrix. Bounded: 20 positive and 10 negative examples per operation (about 660
requests, 20-25 s on an idle machine; ``UPGRADER_FUZZ_EXAMPLES`` sets the positive count),
derandomised so CI is reproducible (``UPGRADER_FUZZ_SEED=N`` explores another seed).
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import hypothesis
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from api.openapi_guide import status_of
from application.clock import ManualClock
from application.wallet.refusals import WALLET_CODE
from ops.reference_operator.wallet import ThreadedWalletServer
from tests.support.live import Api, LiveServer
from tests.support.signing import signed_headers

KEY_ID, SECRET = "key-a", "secret-a-1"
OPERATOR = "op-a"
PLAYER = "fuzz-player"
MAX_EXAMPLES = int(os.environ.get("UPGRADER_FUZZ_EXAMPLES", "20"))  # negative: half
SEED = os.environ.get("UPGRADER_FUZZ_SEED")
SCHEMA_PATH = "/api/schema/openapi.json"
LOGOUT = "/api/play/session/logout"
SESSION_INIT = "/api/play/session/init"
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


@pytest.fixture
def database_url(tmp_path) -> str:
    """SQLite only (see the module docstring): overrides the two-store fixture."""
    return f"sqlite:///{tmp_path}/store.db"


class Credentials(requests.auth.AuthBase):
    """Signs S2S requests and adds a bearer to player requests, on the prepared request."""

    def __init__(self, api: Api, clock: ManualClock) -> None:
        self.api = api
        self.clock = clock
        self.token = launch_session(api, PLAYER)
        self.sessions_minted = 1

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        path = urlsplit(request.url).path
        if path.startswith("/api/s2s/"):
            body = request.body or b""
            if isinstance(body, str):
                body = body.encode()
            signed = signed_headers(
                KEY_ID, SECRET, int(self.clock.now()), request.method, path, body
            )
            for name in ("X-Key-Id", "X-Timestamp", "X-Signature"):
                request.headers[name] = signed[name]
        elif path.startswith("/api/play/") and path != SESSION_INIT:
            token = self.token
            if path == LOGOUT:
                token = launch_session(self.api, PLAYER)
                self.sessions_minted += 1
            request.headers["Authorization"] = f"Bearer {token}"
        return request


def launch_session(api: Api, player: str) -> str:
    body = json.dumps({"playerExternalId": player, "gameKey": "upgrader", "target": {}}).encode()
    launch = api.s2s("POST", "/api/s2s/launches", body)
    assert launch.status_code == 200, launch.text
    init = api.http.post(SESSION_INIT, json={"launchToken": launch.json()["launchToken"]})
    assert init.status_code == 200, init.text
    return init.json()["sessionToken"]


def seed_world(api: Api, wallet: ThreadedWalletServer) -> dict[str, Any]:
    """A funded player with a few rounds and won items, to steer positive cases at."""
    wallet.ledger.fund(OPERATOR, PLAYER, "EUR", 10_000_000)
    rounds, items = [], []
    for n in range(12):
        body = {
            "playerExternalId": PLAYER,
            "clientActionId": f"seed-{n}",
            "wagerMinor": 1000,
            "chanceBps": 9000,
            "targetItemId": 3,
        }
        answer = api.s2s("POST", "/api/s2s/upgrader/play", json.dumps(body).encode())
        assert answer.status_code == 200, answer.text
        rounds.append(answer.json()["round"]["publicId"])
        if answer.json()["wonItem"]:
            items.append(answer.json()["wonItem"]["inventoryItemId"])
    assert items, "no win in 12 plays at chance 9000"

    def mint_launch_token() -> str:
        body = {"playerExternalId": PLAYER, "gameKey": "upgrader", "target": {}}
        launch = api.s2s("POST", "/api/s2s/launches", json.dumps(body).encode())
        return launch.json()["launchToken"]

    return {"rounds": rounds, "items": items, "mint_launch_token": mint_launch_token}


def error_body_check(ctx: Any, response: schemathesis.Response, case: schemathesis.Case) -> None:
    """Every refusal is the interface's error body (interface 2.8)."""
    if response.status_code < 400:
        return
    body = response.json()
    assert isinstance(body, dict), f"error body is not an object: {response.text[:200]}"
    error = body.get("error")
    assert isinstance(error, dict), f"no error object: {response.text[:200]}"
    assert isinstance(error.get("code"), str) and error["code"], response.text[:200]
    assert isinstance(error.get("message"), str), response.text[:200]


def error_code(response: schemathesis.Response) -> str:
    try:
        return str(response.json()["error"]["code"])
    except (ValueError, KeyError, TypeError):
        return "(no error body)"


def unauthenticated(
    case: schemathesis.Case, base_url: str, session: requests.Session, secured: dict[str, Any]
) -> str:
    """The case sent without credentials: a secured operation answers 401 with its code."""
    label = case.operation.label
    response = case.call(base_url=base_url, session=session)
    if label not in secured:
        assert label == f"POST {SESSION_INIT}", f"{label} declares no security"
        return "public"
    expected = "MISSING_HEADERS" if "hmac" in secured[label] else "SESSION_INVALID"
    assert response.status_code == 401, (label, response.status_code, response.text[:200])
    assert response.json()["error"]["code"] == expected, (label, response.text[:200])
    return expected


def code_is_listed(document: dict[str, Any], label: str, outcome: str) -> bool:
    """A refusal's code is one its operation lists (``x-error-codes``, api/openapi_guide.py)
    under its status; a wallet's own code is listed as INSUFFICIENT_FUNDS' kin."""
    status, code = outcome.split(" ", 1)
    method, path = label.split(" ", 1)
    listed = document["paths"][path][method.lower()]["x-error-codes"]
    if code in listed and str(status_of(code)) == status:
        return True
    wallet_code = WALLET_CODE.fullmatch(code) is not None
    return "INSUFFICIENT_FUNDS" in listed and status in ("403", "422") and wallet_code


COHERENT = {  # a play that passes every check: W=1000 EUR at 9000 bps, band [960, 1055]
    "playerExternalId": PLAYER,
    "wagerMinor": 1000,
    "chanceBps": 9000,
    "targetItemId": 3,
    "currency": "EUR",
    "gameKey": "upgrader",
    "target": {},
    "boxId": 7,  # a purchase of box 7's offered version (3), 3.00 EUR a box
    "boxVersionId": 3,
    "count": 2,
}
CHOICES: dict[str, list[Any]] = {
    "playerExternalId": [PLAYER],
    "chanceBps": [1000, 2500, 5000, 7500, 9000],
    "wagerMinor": [10, 100, 1000, 5000],
    "targetItemId": [1, 2, 3, 4, 5, 6, 7, 9, 11],
    "currency": ["EUR", "USD"],
    "state": ["unresolved", "consumed", "cashed_back", "shipping_requested"],
    "gameKey": ["upgrader"],
    "target": [{}],
    "boxId": [7, 8],
    "boxVersionId": [3, 2],
    "count": [1, 3, 10],
}


def steer(case: schemathesis.Case, data: st.DataObject, world: dict[str, Any]) -> None:
    """Replace generated values by known-good ones (positive cases only, fields the case
    already has): a third of the cases stay as generated, a third get a coherent set (a
    play that can settle, owned items), a third some fields each."""
    how = data.draw(st.sampled_from(["as generated", "coherent", "some fields"]))
    if how == "as generated":
        return
    coherent = how == "coherent"

    def owned() -> list[int]:
        return data.draw(
            st.lists(st.sampled_from(world["items"]), min_size=1, max_size=3, unique=True)
        )

    def steer_mapping(mapping: dict[str, Any]) -> None:
        for name in [n for n in mapping if n in CHOICES]:
            if coherent and name in COHERENT:
                mapping[name] = COHERENT[name]
            elif coherent or data.draw(st.booleans()):
                mapping[name] = data.draw(st.sampled_from(CHOICES[name]))
        for name in ("stakeItemIds", "inventoryItemIds"):
            if name in mapping and (coherent or data.draw(st.booleans())):
                mapping[name] = owned()
        if coherent and "stakeItemIds" in mapping and "targetItemId" in mapping:
            mapping["targetItemId"] = data.draw(st.sampled_from([5, 6, 7, 9]))

    if isinstance(case.body, dict):
        steer_mapping(case.body)
        if "launchToken" in case.body and (coherent or data.draw(st.booleans())):
            case.body["launchToken"] = world["mint_launch_token"]()
    if isinstance(case.query, dict):
        if coherent and "stakeItemIds[]" in case.query:
            case.query["stakeItemIds"] = case.query.pop("stakeItemIds[]")
        steer_mapping(case.query)
    if case.path_parameters and "public_id" in case.path_parameters:
        case.path_parameters["public_id"] = data.draw(st.sampled_from(world["rounds"]))


@pytest.fixture
def fuzz_world(
    api: Api, live: LiveServer, clock: ManualClock, wallet: ThreadedWalletServer
) -> Iterator[tuple[Any, Credentials, dict[str, Any]]]:
    schema = schemathesis.openapi.from_url(live.url + SCHEMA_PATH)
    # Credentials are added on the wire by ``Credentials``; removing them is probed once per
    # operation by the test itself (``unauthenticated``), not by negating security headers.
    schema.config.generation.update(with_security_parameters=False)
    credentials = Credentials(api, clock)
    world = seed_world(api, wallet)
    yield schema, credentials, world


def test_every_operation_answers_as_documented(fuzz_world, live: LiveServer) -> None:
    schema, credentials, world = fuzz_world
    operations = [result.ok() for result in schema.get_all_operations()]
    documented = {operation.label for operation in operations}
    document = requests.get(live.url + SCHEMA_PATH, timeout=10).json()
    in_document = {
        f"{method.upper()} {path}" for path, item in document["paths"].items() for method in item
    }
    assert documented == in_document
    secured = {
        f"{method.upper()} {path}": operation["security"][0]
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if operation.get("security")
    }
    tried: Counter[str] = Counter()
    answers: Counter[tuple[str, str]] = Counter()  # (operation, status or status+code)
    failures: dict[tuple[str, str], str] = {}
    probed: dict[str, str] = {}
    no_negative: list[str] = []
    session = requests.Session()
    started = time.monotonic()

    def runner(operation: Any, mode: GenerationMode, examples: int) -> Any:
        strategy = operation.as_strategy(generation_mode=mode)
        checks = [*CHECKS, negative_data_rejection] if mode is GenerationMode.NEGATIVE else CHECKS

        @hypothesis.settings(
            max_examples=examples,
            deadline=None,
            database=None,
            derandomize=SEED is None,
            suppress_health_check=list(HealthCheck),
            phases=[Phase.explicit, Phase.generate],
        )
        @given(data=st.data())
        def run(data: st.DataObject) -> None:
            case = data.draw(strategy)
            if mode is GenerationMode.POSITIVE:
                steer(case, data, world)
                if operation.label not in probed:
                    probed[operation.label] = unauthenticated(case, live.url, session, secured)
            tried[operation.label] += 1
            response = case.call(base_url=live.url, session=session, auth=credentials)
            outcome = str(response.status_code)
            if response.status_code >= 400:
                outcome += f" {error_code(response)}"
            answers[(operation.label, outcome)] += 1
            try:
                case.validate_response(
                    response,
                    checks=checks,
                    additional_checks=[error_body_check],
                    transport_kwargs={"base_url": live.url, "auth": credentials},
                )
            except (Exception, BaseExceptionGroup) as exc:  # every finding reported, not the first
                key = (operation.label, f"{type(exc).__name__} {str(exc).splitlines()[0][:120]}")
                failures.setdefault(key, f"{mode.value} {response.status_code}: {exc}"[:3000])

        return run if SEED is None else hypothesis.seed(int(SEED))(run)

    for operation in operations:
        runner(operation, GenerationMode.POSITIVE, MAX_EXAMPLES)()
        try:
            runner(operation, GenerationMode.NEGATIVE, max(1, MAX_EXAMPLES // 2))()
        except hypothesis.errors.Unsatisfiable:  # nothing it can violate (no body, free strings)
            no_negative.append(operation.label)

    elapsed = time.monotonic() - started
    server_errors = sum(n for (_, outcome), n in answers.items() if outcome.startswith("5"))
    print(f"\nschemathesis: {len(documented)} operations in {SCHEMA_PATH}, all tried:")
    for label in sorted(tried):
        seen = ", ".join(f"{o} x{n}" for (lab, o), n in sorted(answers.items()) if lab == label)
        print(f"  {label:42} {tried[label]:4} cases: {seen}")
    print(f"  no negative case can be generated for: {', '.join(sorted(no_negative))}")
    print(f"  unauthenticated probes: {dict(Counter(probed.values()))}")
    print(
        f"schemathesis: {sum(tried.values())} cases in {elapsed:.1f} s over "
        f"{len(tried)}/{len(documented)} operations, {server_errors} server errors, "
        f"{len(failures)} failures, {credentials.sessions_minted} sessions minted"
    )
    for (label, _), text in failures.items():
        print(f"FAILURE {label}: {text}\n")
    unlisted = sorted(
        (label, outcome)
        for (label, outcome) in answers
        if outcome[0] in "45" and not code_is_listed(document, label, outcome)
    )
    print(f"  refusals whose code the operation does not list: {unlisted}")
    assert set(tried) == documented
    assert set(probed) == documented
    assert unlisted == []
    assert server_errors == 0
    assert not failures, f"{len(failures)} distinct failures (printed above)"

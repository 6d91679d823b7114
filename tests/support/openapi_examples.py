"""The OpenAPI document's examples, recorded from real answers.

``collect`` plays one scenario through the real app (real HTTP, a real store) against the
reference wallet on loopback: every operation of the platform API once or more, a few
refusals, and the ``round_settled`` webhook the reference receiver got. It returns what
``src/api/openapi_examples.json`` holds::

    {"operations": {"POST /api/s2s/upgrader/play": {
        "parameters": {name: value},          # query and path parameters as sent
        "requestBody": {example name: body},  # as sent
        "responses": {"200": {example name: answer}, "422": {...}}}},
     "webhooks": {"round_settled": {example name: body}}}

``tests/integration/test_openapi_guide.py`` runs ``collect`` again on SQLite and
PostgreSQL and checks that the checked-in file has the same shape as today's answers
(the same fields, the same JSON types: values such as seeds and tokens differ from run to
run) and that every example validates against the document. Regenerate the file with::

    .venv/bin/python -m tests.support.openapi_examples > src/api/openapi_examples.json
"""

from __future__ import annotations

import json
import sys
import tempfile
from typing import Any

from application.clock import ManualClock
from ops.reference_operator.wallet import ThreadedWalletServer
from tests.support.live import Api
from tests.support.waiting import wait_until

OPERATOR = "op-a"
PLAYER = "player-1"
BROKE = "player-2"  # never funded: the wallet refuses its debits
START = 1767225600.0  # 2026-01-01T00:00:00Z, the regenerated file's clock


class Recorder:
    def __init__(self, api: Api) -> None:
        self.api = api
        self.operations: dict[str, dict[str, Any]] = {}
        self.session = ""

    def call(
        self,
        method: str,
        path: str,
        *,
        name: str = "example",
        body: dict[str, Any] | None = None,
        params: dict[str, Any] | None = None,
        path_params: dict[str, Any] | None = None,
        template: str | None = None,
        bearer: str | None = None,
        expect: int = 200,
        s2s_key: tuple[str, str] | None = None,
        record: bool = True,
    ) -> Any:
        """Send one request, check its status, record it under the documented path."""
        raw = json.dumps(body).encode() if body is not None else b""
        if path.startswith("/api/s2s/"):
            key_id, secret = s2s_key or (self.api.key_id, self.api.secret)
            response = self.api.s2s(method, path, raw, params=params, key_id=key_id, secret=secret)
        else:
            headers = {"Authorization": f"Bearer {bearer or self.session}"}
            if path == "/api/play/session/init":
                headers = {}
            if raw:
                headers["Content-Type"] = "application/json"
            response = self.api.http.request(
                method, path, content=raw or None, params=params, headers=headers
            )
        assert response.status_code == expect, (method, path, response.status_code, response.text)
        answer = response.json()
        if record:
            self.record(method, template or path, name, body, params, path_params, expect, answer)
        return answer

    def record(
        self,
        method: str,
        path: str,
        name: str,
        body: dict[str, Any] | None,
        params: dict[str, Any] | None,
        path_params: dict[str, Any] | None,
        expect: int,
        answer: Any,
    ) -> None:
        """Keep the first example of each name."""
        entry = self.operations.setdefault(f"{method} {path}", {})
        if (params or path_params) and "parameters" not in entry:
            entry["parameters"] = {**(path_params or {}), **(params or {})}
        # the request of a refusal too, beside its answer, unless the body is malformed
        malformed = expect != 200 and answer["error"]["code"] == "VALIDATION_ERROR"
        if body is not None and not malformed:
            entry.setdefault("requestBody", {}).setdefault(name, body)
        entry.setdefault("responses", {}).setdefault(str(expect), {}).setdefault(name, answer)


def _launch(rec: Recorder, player: str) -> str:
    body = {"playerExternalId": player, "gameKey": "upgrader", "target": {}}
    return rec.call("POST", "/api/s2s/launches", body=body)["launchToken"]


def _play_until_win(rec: Recorder, path: str, player: str | None, prefix: str) -> dict[str, Any]:
    """Balance plays of 10.00 EUR at 90 % aimed at item 3 until one wins (bounded)."""
    for n in range(40):
        body = {
            "clientActionId": f"{prefix}-{n}",
            "wagerMinor": 1000,
            "chanceBps": 9000,
            "targetItemId": 3,
            "currency": "EUR",
        }
        if player is not None:
            body = {"playerExternalId": player, **body}
        answer = rec.call("POST", path, body=body, record=False)
        if answer["round"]["isWin"]:
            rec.record("POST", path, "win", body, None, None, 200, answer)
            return answer
    raise AssertionError("no win in 40 plays at 90 %")


def _items_play(rec: Recorder, api: str, stake: int, prefix: str) -> None:
    """Prizes for a stake of one item at each preset until one has a prize, then play it."""
    s2s = api == "s2s"
    who = {"playerExternalId": PLAYER} if s2s else {}
    for chance in (9000, 7500, 5000, 2500, 1000):
        params = {**who, "stakeItemIds": [stake], "chanceBps": chance, "currency": "EUR"}
        path = f"/api/{api}/upgrader/prizes-by-items"
        prizes = rec.call("GET", path, params=params, record=False)
        if prizes["prizes"]:
            rec.record("GET", path, "example", None, params, None, 200, prizes)
            body = {
                **who,
                "clientActionId": f"{prefix}-items",
                "stakeItemIds": [stake],
                "chanceBps": chance,
                "targetItemId": prizes["prizes"][0]["itemId"],
                "currency": "EUR",
            }
            rec.call("POST", f"/api/{api}/upgrader/play-with-items", body=body)
            return
    raise AssertionError("no prize for a stake of one item at any preset")


def collect(api: Api, wallet: ThreadedWalletServer) -> dict[str, Any]:
    """Play the scenario (operator op-a, key key-a) and return the examples."""
    wallet.ledger.fund(OPERATOR, PLAYER, "EUR", 1_000_000)
    rec = Recorder(api)
    rec.call("GET", "/api/s2s/health")
    rec.call("GET", "/api/s2s/health", name="wrong secret", expect=401, s2s_key=("key-a", "x"))

    token = _launch(rec, PLAYER)
    rec.call(
        "POST",
        "/api/s2s/launches",
        name="a box target",
        body={"playerExternalId": PLAYER, "gameKey": "upgrader", "target": {"boxId": 7}},
        expect=422,
    )
    init = rec.call("POST", "/api/play/session/init", body={"launchToken": token})
    rec.session = init["sessionToken"]
    rec.call(
        "POST",
        "/api/play/session/init",
        name="used twice",
        body={"launchToken": token},
        expect=401,
    )
    rec.call("GET", "/api/play/balance", params={"currency": "EUR"})

    for api_name, who in (("s2s", {"playerExternalId": PLAYER}), ("play", {})):
        prizes = {**who, "wagerMinor": 1000, "chanceBps": 9000, "currency": "EUR"}
        rec.call("GET", f"/api/{api_name}/upgrader/prizes", params=prizes)
    rec.call(
        "GET",
        "/api/s2s/upgrader/prizes",
        name="wager too small",
        params={"playerExternalId": PLAYER, "wagerMinor": 1, "chanceBps": 9000},
        expect=422,
    )

    won = _play_until_win(rec, "/api/s2s/upgrader/play", PLAYER, "s2s")
    wins = [won["wonItem"]["inventoryItemId"]]
    for n in range(5):  # more items to stake, cash back and ship
        wins.append(
            _play_until_win(rec, "/api/s2s/upgrader/play", PLAYER, f"s2s-more-{n}")["wonItem"][
                "inventoryItemId"
            ]
        )
    refused = {
        "playerExternalId": BROKE,
        "clientActionId": "broke-1",
        "wagerMinor": 1000,
        "chanceBps": 9000,
        "targetItemId": 3,
    }
    rec.call("POST", "/api/s2s/upgrader/play", name="refused debit", body=refused, expect=422)
    as_text = {**refused, "playerExternalId": PLAYER, "wagerMinor": "1000"}
    rec.call("POST", "/api/s2s/upgrader/play", name="malformed", body=as_text, expect=422)
    unsure = {**refused, "playerExternalId": PLAYER, "clientActionId": "unsure-1"}
    wallet.faults.configure(status_5xx=503, only_types={"wallet.debit"}, times=1)
    try:  # the wallet answers 503: the debit is uncertain, rolled back, nothing kept
        rec.call("POST", "/api/s2s/upgrader/play", name="uncertain debit", body=unsure, expect=503)
    finally:
        wallet.faults.configure()
    conflict = {**refused, "playerExternalId": PLAYER, "clientActionId": "s2s-0", "wagerMinor": 999}
    rec.call("POST", "/api/s2s/upgrader/play", name="another body", body=conflict, expect=409)
    _play_until_win(rec, "/api/play/upgrader/play", None, "player")

    public_id = won["round"]["publicId"]
    rec.call(
        "GET",
        f"/api/s2s/rounds/{public_id}",
        template="/api/s2s/rounds/{public_id}",
        path_params={"public_id": public_id},
    )
    missing = "r_" + "0" * 32
    rec.call(
        "GET",
        f"/api/s2s/rounds/{missing}",
        name="no such round",
        template="/api/s2s/rounds/{public_id}",
        expect=404,
    )
    rounds = rec.call("GET", "/api/s2s/rounds", params={"playerExternalId": PLAYER, "limit": 2})
    rec.call("GET", "/api/play/rounds", params={"limit": 2, "cursor": rounds["nextCursor"]})

    rotate = {"clientSeed": "my lucky seed", "clientActionId": "rotate-1"}
    rec.call("POST", "/api/s2s/fairness/rotate", body={"playerExternalId": PLAYER, **rotate})
    rec.call("POST", "/api/play/fairness/rotate", body={"clientActionId": "rotate-2"})
    rec.call("GET", "/api/s2s/fairness", params={"playerExternalId": PLAYER})
    rec.call("GET", "/api/play/fairness")

    _items_play(rec, "s2s", wins[1], "s2s")
    _items_play(rec, "play", wins[2], "player")
    staked_again = {
        "playerExternalId": PLAYER,
        "clientActionId": "s2s-items-again",
        "stakeItemIds": [wins[1]],
        "chanceBps": 7500,
        "targetItemId": 4,
    }
    rec.call(
        "POST",
        "/api/s2s/upgrader/play-with-items",
        name="a consumed stake",
        body=staked_again,
        expect=422,
    )
    rec.call(
        "POST",
        "/api/s2s/cashout",
        body={
            "playerExternalId": PLAYER,
            "clientActionId": "cashout-1",
            "inventoryItemIds": [wins[3]],
            "currency": "EUR",
        },
    )
    rec.call(
        "POST",
        "/api/play/cashout",
        body={"clientActionId": "cashout-2", "inventoryItemIds": [wins[4]]},
    )
    rec.call(
        "POST",
        "/api/play/cashout",
        name="cashed back already",
        body={"clientActionId": "cashout-3", "inventoryItemIds": [wins[4]]},
        expect=422,
    )
    address = {"name": "Ada Lovelace", "street": "1 Example Road", "city": "London"}
    rec.call(
        "POST",
        "/api/s2s/shipping",
        body={
            "playerExternalId": PLAYER,
            "clientActionId": "ship-1",
            "inventoryItemIds": [wins[5]],
            "address": {**address, "postcode": "N1 1AA", "country": "GB"},
        },
    )
    rec.call(
        "GET", "/api/s2s/inventory", params={"playerExternalId": PLAYER, "state": "unresolved"}
    )
    rec.call("GET", "/api/play/inventory")

    for api_name in ("s2s", "play"):
        rec.call("GET", f"/api/{api_name}/boxes", params={"currency": "EUR", "locale": "en"})
        rec.call(
            "GET",
            f"/api/{api_name}/boxes/7/versions/3",
            template=f"/api/{api_name}/boxes/{{box_id}}/versions/{{box_version_id}}",
            path_params={"box_id": 7, "box_version_id": 3},
            params={"currency": "USD"},
        )
    rec.call(
        "GET",
        "/api/s2s/boxes/7/versions/4",
        name="no such version",
        template="/api/s2s/boxes/{box_id}/versions/{box_version_id}",
        expect=404,
    )
    box_round = _boxes(rec)

    rec.call("POST", "/api/play/session/logout")
    rec.call("POST", "/api/play/session/logout", name="logged out already", expect=401)
    rec.call("GET", "/api/play/inventory", name="after logout", expect=401)

    def webhook_of(round_id: str) -> list[dict[str, Any]]:
        hooks = list(wallet.ledger.received_webhooks)
        return [h for h in hooks if h["data"]["round"]["publicId"] == round_id]

    win = wait_until(lambda: webhook_of(public_id), what="the webhook of the first win")
    box = wait_until(lambda: webhook_of(box_round), what="the webhook of a box round")
    return {
        "operations": dict(sorted(rec.operations.items())),
        "webhooks": {"round_settled": {"a win": win[0], "a box round": box[0]}},
    }


def _boxes(rec: Recorder) -> str:
    """A box launch, its session, purchases and opens, a few refusals; the publicId of
    the S2S purchase."""
    box_launch = {"playerExternalId": PLAYER, "gameKey": "boxes", "target": {"boxId": 7}}
    token = rec.call("POST", "/api/s2s/launches", name="a box", body=box_launch)["launchToken"]
    init = rec.call("POST", "/api/play/session/init", name="a box", body={"launchToken": token})
    purchase = {
        "playerExternalId": PLAYER,
        "clientActionId": "box-1",
        "boxId": 7,
        "boxVersionId": 3,
        "count": 3,
        "currency": "EUR",
    }
    bought = rec.call("POST", "/api/s2s/purchase", body=purchase)
    rec.call(
        "POST",
        "/api/s2s/purchase",
        name="no such version",
        body={**purchase, "clientActionId": "box-2", "boxVersionId": 2},
        expect=404,
    )
    rec.call(
        "POST",
        "/api/s2s/purchase",
        name="refused debit",
        body={**purchase, "playerExternalId": BROKE, "count": 1},
        expect=422,
    )
    rec.call(
        "POST",
        "/api/s2s/purchase",
        name="too many boxes",
        body={**purchase, "clientActionId": "box-3", "count": 11},
        expect=422,
    )
    opened = {"clientActionId": "box-4", "boxId": 7, "boxVersionId": 3}
    rec.call("POST", "/api/play/rounds/open", body=opened, bearer=init["sessionToken"])
    rec.call(
        "POST",
        "/api/play/rounds/open",
        name="no such box",
        body={**opened, "clientActionId": "box-5", "boxId": 8},
        bearer=init["sessionToken"],
        expect=404,
    )
    return bought["round"]["publicId"]


def main() -> None:
    from application.platform import Platform
    from entrypoints.app import create_app
    from tests.support.config import OUTBOUND, make_config
    from tests.support.live import LiveServer

    clock = ManualClock(start=START)
    with tempfile.TemporaryDirectory() as folder:
        wallet = ThreadedWalletServer(dict(OUTBOUND)).start()
        config = make_config(f"sqlite:///{folder}/store.db", wallet_url=wallet.url)
        platform = Platform(config, clock=clock)
        platform.record_configuration()
        try:
            with LiveServer(create_app(platform)) as live:
                api = Api(live.url, clock)
                found = collect(api, wallet)
                api.close()
        finally:
            platform.close()
            wallet.stop()
    sys.stdout.write(json.dumps(found, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()

"""Signed S2S, launches and sessions over real HTTP, on SQLite and PostgreSQL."""

from __future__ import annotations

import json

from application.clock import ManualClock
from tests.integration.test_box_catalog import BOX_7
from tests.support.live import Api
from tests.support.signing import signed_headers

LAUNCH = json.dumps({"playerExternalId": "p-1", "gameKey": "upgrader", "target": {}}).encode()


def _error(response) -> tuple[int, str]:
    return response.status_code, response.json()["error"]["code"]


def _launch(api: Api, player: str = "p-1", **kwargs) -> str:
    body = json.dumps({"playerExternalId": player, "gameKey": "upgrader", "target": {}}).encode()
    response = api.s2s("POST", "/api/s2s/launches", body, **kwargs)
    assert response.status_code == 200, response.text
    return response.json()["launchToken"]


def _session(api: Api, token: str):
    return api.http.post("/api/play/session/init", json={"launchToken": token})


def test_signed_health_answers_ok_with_server_time(api: Api, clock: ManualClock) -> None:
    response = api.s2s("GET", "/api/s2s/health")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"
    assert response.json()["time"].endswith("Z")


def test_every_auth_failure_answers_401_with_its_code(api: Api, clock: ManualClock) -> None:
    now = int(clock.now())
    path = "/api/s2s/health"
    good = signed_headers("key-a", "secret-a-1", now, "GET", path)
    for missing in ("X-Key-Id", "X-Timestamp", "X-Signature"):
        headers = {k: v for k, v in good.items() if k != missing}
        assert _error(api.http.get(path, headers=headers)) == (401, "MISSING_HEADERS")
    wrong = {**good, "X-Signature": "0" * 64}
    assert _error(api.http.get(path, headers=wrong)) == (401, "INVALID_SIGNATURE")
    for offset, expected in ((300, 200), (-300, 200), (301, 401), (-301, 401)):
        headers = signed_headers("key-a", "secret-a-1", now + offset, "GET", path)
        response = api.http.get(path, headers=headers)
        assert response.status_code == expected
        if expected == 401:
            assert response.json()["error"]["code"] == "TIMESTAMP_SKEW"


def test_revoked_key_is_refused_exactly_like_an_unknown_key(api: Api) -> None:
    revoked = api.s2s("GET", "/api/s2s/health", key_id="key-a-old", secret="secret-a-0")
    unknown = api.s2s("GET", "/api/s2s/health", key_id="key-zzz", secret="secret-a-0")
    assert revoked.status_code == unknown.status_code == 401
    assert revoked.content == unknown.content


def test_a_changed_body_byte_is_refused_and_launches_nothing(api: Api, clock) -> None:
    headers = signed_headers(
        "key-a", "secret-a-1", int(clock.now()), "POST", "/api/s2s/launches", LAUNCH
    )
    tampered = LAUNCH.replace(b"p-1", b"p-2")
    response = api.http.post("/api/s2s/launches", content=tampered, headers=headers)
    assert _error(response) == (401, "INVALID_SIGNATURE")


def test_launch_answers_a_token_and_a_game_url(api: Api) -> None:
    response = api.s2s("POST", "/api/s2s/launches", LAUNCH)
    body = response.json()
    assert response.status_code == 200
    assert body["launchUrl"].startswith("http://127.0.0.1:8000/game/upgrader?launchToken=")
    assert set(body) == {"launchToken", "expiresAt", "launchUrl"}


def test_launch_refusals_follow_decisions_7(api: Api) -> None:
    box = json.dumps({"playerExternalId": "p", "gameKey": "upgrader", "target": {"boxId": 1}})
    assert _error(api.s2s("POST", "/api/s2s/launches", box.encode())) == (
        422,
        "LAUNCH_TARGET_INVALID",
    )
    unknown = json.dumps({"playerExternalId": "p", "gameKey": "roulette", "target": {}})
    refused = api.s2s("POST", "/api/s2s/launches", unknown.encode())
    assert _error(refused) == (403, "GAME_DISABLED")
    assert refused.json()["error"]["message"] == (
        "the game 'roulette' is unknown or not enabled for this operator"
    )
    disabled = api.s2s("POST", "/api/s2s/launches", LAUNCH, key_id="key-off", secret="secret-off-1")
    assert _error(disabled) == (403, "GAME_DISABLED")
    assert disabled.json()["error"]["message"] == "the Upgrader is not enabled for this operator"


def test_malformed_bodies_answer_validation_error_naming_the_field(api: Api) -> None:
    cases = {
        b"{not json": "malformed request",
        b'{"playerExternalId": 5, "gameKey": "upgrader", "target": {}}': "playerExternalId",
        b'{"gameKey": "upgrader", "target": {}}': "playerExternalId",
        b'{"playerExternalId": "p", "gameKey": "upgrader", "target": {}, "x": 1}': "x",
        json.dumps(
            {"playerExternalId": "p" * 129, "gameKey": "upgrader", "target": {}}
        ).encode(): "playerExternalId",
    }
    for body, named in cases.items():
        response = api.s2s("POST", "/api/s2s/launches", body)
        assert _error(response) == (422, "VALIDATION_ERROR"), body
        assert named in response.json()["error"]["message"], body


def test_session_init_boots_into_the_upgrader_with_its_config(api: Api) -> None:
    response = _session(api, _launch(api))
    body = response.json()
    assert response.status_code == 200
    assert body["player"] == {"operatorId": "op-a", "playerExternalId": "p-1"}
    assert body["idleExpirySeconds"] == 1800
    assert body["game"] == {
        "key": "upgrader",
        "config": {
            "houseEdgeBps": 500,
            "chancePresetsBps": [1000, 2500, 5000, 7500, 9000],
            "defaultChanceBps": 5000,
            "maxChanceBps": 9500,
            "available": True,
            "minWagerMinor": 10,
            "maxWagerMinor": 1000000,
            "currency": "EUR",
            "modes": {"balance": True, "items": True},
        },
    }
    assert body["balance"] == {"balanceMinor": 0, "currency": "EUR"}  # p-1 has no money
    assert len(body["sessionToken"]) >= 43


def test_launch_tokens_are_single_use(api: Api) -> None:
    token = _launch(api)
    assert _session(api, token).status_code == 200
    assert _error(_session(api, token)) == (401, "LAUNCH_TOKEN_INVALID")


def test_launch_tokens_expire(api: Api, clock: ManualClock) -> None:
    token = _launch(api)
    clock.advance(121)
    assert _error(_session(api, token)) == (401, "LAUNCH_TOKEN_INVALID")


def test_launch_tokens_cannot_be_forged(api: Api) -> None:
    token = _launch(api)
    payload, _, mac = token.partition(".")
    forged = payload.replace(payload[5], "A" if payload[5] != "A" else "B") + "." + mac
    for bad in (forged, payload + ".", "garbage", "a.b.c", payload + "." + mac[:-2]):
        assert _error(_session(api, bad)) == (401, "LAUNCH_TOKEN_INVALID")


def test_sessions_expire_on_idle_and_activity_keeps_them(api: Api, clock: ManualClock) -> None:
    token = _session(api, _launch(api)).json()["sessionToken"]
    logout_path = "/api/play/session/logout"
    clock.advance(1700)
    assert api.play("POST", "/api/play/nowhere", token).status_code == 404
    # the unknown route does not touch the session; a guarded call does
    clock.advance(101)
    assert _error(api.play("POST", logout_path, token)) == (401, "SESSION_INVALID")
    fresh = _session(api, _launch(api)).json()["sessionToken"]
    clock.advance(1800)
    assert api.play("POST", logout_path, fresh).status_code == 200


def test_logout_kills_the_session(api: Api) -> None:
    token = _session(api, _launch(api)).json()["sessionToken"]
    assert api.play("POST", "/api/play/session/logout", token).json() == {"status": "logged_out"}
    assert _error(api.play("POST", "/api/play/session/logout", token)) == (401, "SESSION_INVALID")


def test_missing_or_unknown_bearer_is_session_invalid(api: Api) -> None:
    assert _error(api.http.post("/api/play/session/logout")) == (401, "SESSION_INVALID")
    assert _error(api.play("POST", "/api/play/session/logout", "nope")) == (401, "SESSION_INVALID")


def test_a_launch_is_always_for_the_keys_own_operator(api: Api) -> None:
    token = _launch(api, player="shared-name", key_id="key-b", secret="secret-b-1")
    body = _session(api, token).json()
    assert body["player"] == {"operatorId": "op-b", "playerExternalId": "shared-name"}


def test_boxes_need_catalog_access(api: Api) -> None:
    response = api.s2s("GET", "/api/s2s/boxes")
    assert response.json() == {"boxes": [BOX_7]}  # tests/integration/test_box_catalog.py
    denied = api.s2s("GET", "/api/s2s/boxes", key_id="key-b", secret="secret-b-1")
    assert _error(denied) == (403, "CATALOG_ACCESS_DENIED")


def test_player_api_is_cors_open_and_s2s_is_not(api: Api) -> None:
    preflight = api.http.options(
        "/api/play/session/init",
        headers={"Origin": "https://casino.example", "Access-Control-Request-Method": "POST"},
    )
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == "*"
    assert "Authorization" in preflight.headers["access-control-allow-headers"]
    init = api.http.post(
        "/api/play/session/init",
        json={"launchToken": "x"},
        headers={"Origin": "https://casino.example"},
    )
    assert init.headers["access-control-allow-origin"] == "*"
    s2s = api.s2s("GET", "/api/s2s/health", headers={"Origin": "https://casino.example"})
    assert "access-control-allow-origin" not in s2s.headers


def test_unknown_routes_answer_not_found(api: Api) -> None:
    assert _error(api.http.get("/api/nothing")) == (404, "NOT_FOUND")
    assert _error(api.s2s("GET", "/api/s2s/nothing")) == (404, "NOT_FOUND")


def test_openapi_documents_routes_security_and_error_body(api: Api) -> None:
    document = api.http.get("/api/schema/openapi.json").json()
    assert {"hmac", "bearer"} <= set(document["components"]["securitySchemes"])
    for path in ("/api/s2s/health", "/api/s2s/launches", "/api/play/session/init"):
        assert path in document["paths"]
    assert "ErrorBody" in document["components"]["schemas"]
    schemas = document["components"]["schemas"]
    balance = document["paths"]["/api/play/balance"]["get"]
    assert balance["security"] == [{"bearer": []}]
    assert balance["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/BalanceAnswer"
    }
    assert schemas["BalanceAnswer"]["required"] == ["balanceMinor", "currency"]
    assert "balance" in schemas["SessionInitAnswer"]["required"]
    default_chance = schemas["UpgraderConfigWire"]["properties"]["defaultChanceBps"]
    assert "0 when available is false" in default_chance["description"]


def test_the_game_page_may_be_framed_only_by_the_operators_origins(
    database_url, wallet, clock
) -> None:
    from application.platform import Platform
    from entrypoints.app import create_app
    from tests.support.config import make_config, raw_config
    from tests.support.live import LiveServer

    raw = raw_config(database_url)
    raw["operators"][0]["allowed_frame_origins"] = [
        "https://casino.example",
        "http://127.0.0.1:8001",
    ]
    raw["operators"][1]["allowed_frame_origins"] = ["https://other.example"]
    platform = Platform(make_config(database_url, raw, wallet_url=wallet.url), clock=clock)
    platform.record_configuration()
    with LiveServer(create_app(platform)) as live:
        api = Api(live.url, clock)
        token = _launch(api)
        page = api.http.get("/game/upgrader", params={"launchToken": token})
        policy = page.headers["content-security-policy"]
        assert policy.endswith("frame-ancestors https://casino.example http://127.0.0.1:8001")
        assert "script-src 'self'" in policy
        assert page.headers["x-content-type-options"] == "nosniff"
        assert page.headers["referrer-policy"] == "no-referrer"
        other = _launch(api, key_id="key-b", secret="secret-b-1")
        assert (
            api.http.get("/game/upgrader", params={"launchToken": other})
            .headers["content-security-policy"]
            .endswith("frame-ancestors https://other.example")
        )
        # without a verifiable token: any configured operator's origins ('*' for the rest)
        assert (
            api.http.get("/game/upgrader", params={"launchToken": "forged.x"})
            .headers["content-security-policy"]
            .endswith("frame-ancestors *")
        )
        api.close()
    platform.close()

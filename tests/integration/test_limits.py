"""Abuse limits: 429 RATE_LIMITED with Retry-After, shared through the store (``rate_limits
= "store"``) or counted by each process (the default); 413 bodies."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from application.clock import ManualClock
from application.platform import Platform
from entrypoints.app import create_app
from tests.support.config import make_config, raw_config
from tests.support.live import Api, LiveServer


def _limited_config(database_url: str, wallet_url: str, mode: str = "store", **limits: int):
    raw = raw_config(database_url)
    raw["operators"][0]["limits"] = {
        "requests_per_second_per_key": 1000,
        "requests_per_second_per_session": 1000,
        "plays_per_second_per_player": 1000,
        **limits,
    }
    raw["service"]["max_body_bytes"] = 2048
    raw["service"]["rate_limits"] = mode
    return make_config(
        database_url,
        raw,
        wallet_url=wallet_url,
        wallet_timeout_seconds=1,
        uncertain_debit_grace_seconds=30,
    )


@pytest.fixture
def servers(request, database_url: str, wallet) -> Iterator[tuple[list[Api], ManualClock]]:
    """Two independent platforms (own pools, own apps) on one store, like two processes."""
    limits = dict(getattr(request, "param", {}))
    clock = ManualClock(start=1_900_000_000.5)
    platforms = [
        Platform(_limited_config(database_url, wallet.url, **limits), clock=clock) for _ in range(2)
    ]
    platforms[0].record_configuration()
    platforms[1].record_configuration()
    with LiveServer(create_app(platforms[0])) as one, LiveServer(create_app(platforms[1])) as two:
        apis = [Api(one.url, clock), Api(two.url, clock)]
        yield apis, clock
        for api in apis:
            api.close()
    for platform in platforms:
        platform.close()


def _health(api: Api):
    return api.s2s("GET", "/api/s2s/health")


@pytest.mark.parametrize("servers", [{"requests_per_second_per_key": 5}], indirect=True)
def test_requests_per_key_are_limited_across_processes(servers) -> None:
    (one, two), clock = servers
    statuses = [_health(api).status_code for api in (one, two, one, two, one)]
    assert statuses == [200] * 5
    refused = _health(two)
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "RATE_LIMITED"
    assert refused.headers["Retry-After"] == "1"
    assert _health(one).status_code == 429
    other_key = one.s2s("GET", "/api/s2s/health", key_id="key-b", secret="secret-b-1")
    assert other_key.status_code == 200
    clock.advance(1)
    assert _health(one).status_code == 200


@pytest.mark.parametrize("servers", [{"requests_per_second_per_session": 3}], indirect=True)
def test_requests_per_session_are_limited(servers) -> None:
    (one, two), clock = servers
    body = json.dumps({"playerExternalId": "p-1", "gameKey": "upgrader", "target": {}}).encode()
    launch = one.s2s("POST", "/api/s2s/launches", body).json()["launchToken"]
    token = one.http.post("/api/play/session/init", json={"launchToken": launch}).json()[
        "sessionToken"
    ]
    codes = [api.play("GET", "/api/play/rounds", token).status_code for api in (one, two, one, two)]
    assert codes == [200, 200, 200, 429]
    clock.advance(1)
    assert two.play("GET", "/api/play/rounds", token).status_code == 200


@pytest.mark.parametrize("servers", [{"plays_per_second_per_player": 2}], indirect=True)
def test_plays_per_player_are_limited_and_refused_plays_move_nothing(servers, wallet) -> None:
    (one, two), clock = servers
    wallet.ledger.fund("op-a", "p-1", "EUR", 100_000)
    wallet.ledger.fund("op-a", "p-2", "EUR", 100_000)

    def play(api: Api, player: str, action: str):
        body = {
            "playerExternalId": player,
            "clientActionId": action,
            "wagerMinor": 1000,
            "chanceBps": 5000,
            "targetItemId": 7,
        }
        return api.s2s("POST", "/api/s2s/upgrader/play", json.dumps(body).encode())

    assert play(one, "p-1", "a").status_code == 200
    assert play(two, "p-1", "b").status_code == 200
    refused = play(one, "p-1", "c")
    assert refused.status_code == 429
    assert refused.headers["Retry-After"] == "1"
    assert play(two, "p-2", "d").status_code == 200
    assert len(wallet.ledger.requests_of("wallet.debit")) == 3
    clock.advance(1)
    assert play(one, "p-1", "c").status_code == 200


def test_a_body_over_the_cap_answers_413_before_anything_else(servers) -> None:
    (one, _), _ = servers
    body = json.dumps(
        {"playerExternalId": "p" * 3000, "gameKey": "upgrader", "target": {}}
    ).encode()
    response = one.s2s("POST", "/api/s2s/launches", body)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "PAYLOAD_TOO_LARGE"


def test_negative_limits_and_bad_frame_origins_stop_start_up() -> None:
    from application.config.shape import ConfigError

    raw = raw_config("sqlite:///x.db")
    raw["operators"][0]["limits"] = {"plays_per_second_per_player": -1}
    with pytest.raises(ConfigError, match=r"operators\[0\]\.limits\.plays_per_second_per_player"):
        make_config("sqlite:///x.db", raw)
    raw = raw_config("sqlite:///x.db")
    raw["operators"][0]["allowed_frame_origins"] = ["casino.example"]
    with pytest.raises(ConfigError, match=r"operators\[0\]\.allowed_frame_origins"):
        make_config("sqlite:///x.db", raw)


@pytest.mark.parametrize(
    "servers", [{"requests_per_second_per_key": 3, "mode": "process"}], indirect=True
)
def test_counted_in_process_memory_each_process_enforces_the_full_limit(servers) -> None:
    """The default mode (README "Processes"): each process counts its own requests
    against the whole limit, so two processes let through up to twice the limit."""
    (one, two), clock = servers
    assert [_health(one).status_code for _ in range(3)] == [200] * 3
    assert [_health(two).status_code for _ in range(3)] == [200] * 3
    refused = [_health(api) for api in (one, two)]
    assert [r.status_code for r in refused] == [429, 429]
    assert refused[0].json() == {
        "error": {
            "code": "RATE_LIMITED",
            "message": "too many requests for this key; retry after 1 s",
        }
    }
    clock.advance(1)
    assert _health(two).status_code == 200

"""What docs/scaling.md claims, on one PostgreSQL server: operators spread over
deployments, one per database (here two schemas, ``?schema=``), share nothing but the
server: each operator's plays, read models, webhooks and keys stay in its deployment,
and the API processes of one deployment are interchangeable (stateless)."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator
from typing import Any
from uuid import UUID

import pytest

from application.clock import ManualClock
from application.platform import Platform
from entrypoints.app import create_app
from tests.conftest import fresh_postgres_url
from tests.support.config import make_config, raw_config
from tests.support.live import Api, LiveServer
from tests.support.waiting import wait_until

pytestmark = pytest.mark.postgres


def _deployment_config(url: str, operator: str, wallet: Any) -> Any:
    """A deployment's configuration: the platform's, with only ``operator``."""
    raw = raw_config(url)
    raw["operators"] = [copy.deepcopy(o) for o in raw["operators"] if o["id"] == operator]
    return make_config(url, raw, wallet_url=wallet.url)


@pytest.fixture
def deployments(wallet) -> Iterator[dict[str, Any]]:
    """Deployment A (op-a, two API processes, the loops in the first) and deployment B
    (op-b, one process), each in its own schema."""
    urls_a, urls_b = fresh_postgres_url(), fresh_postgres_url()
    url_a, url_b = next(urls_a), next(urls_b)
    clock = ManualClock(start=float(int(time.time())))
    a1 = Platform(_deployment_config(url_a, "op-a", wallet), clock=clock)
    a2 = Platform(_deployment_config(url_a, "op-a", wallet), clock=clock)
    b = Platform(_deployment_config(url_b, "op-b", wallet), clock=clock)
    for platform in (a1, a2, b):
        platform.record_configuration()
    wallet.ledger.fund("op-a", "p-1", "EUR", 100_000)
    wallet.ledger.fund("op-b", "p-1", "EUR", 100_000)
    try:
        with (
            LiveServer(create_app(a1)) as server_a1,
            LiveServer(create_app(a2, workers=())) as server_a2,
            LiveServer(create_app(b)) as server_b,
        ):
            yield {
                "a1": (Api(server_a1.url, clock), a1),
                "a2": (Api(server_a2.url, clock), a2),
                "b": (Api(server_b.url, clock, key_id="key-b", secret="secret-b-1"), b),
            }
    finally:
        for platform in (a1, a2, b):
            platform.close()
        next(urls_a, None)
        next(urls_b, None)


def _play(api: Api, action: str, **credentials: str) -> Any:
    body = json.dumps(
        {
            "playerExternalId": "p-1",
            "clientActionId": action,
            "wagerMinor": 1000,
            "chanceBps": 5000,
            "targetItemId": 7,
        }
    ).encode()
    return api.s2s("POST", "/api/s2s/upgrader/play", body, **credentials)


def _rounds(platform: Platform) -> list[tuple[str, str]]:
    with platform.db.transaction() as cur:
        cur.execute("SELECT operator_id, public_id FROM round_history ORDER BY public_id")
        return [tuple(row) for row in cur.fetchall()]


def _opened_rounds(platform: Platform) -> set[UUID]:
    recorder = platform.events.recorder
    notifications = recorder.select_notifications(1, recorder.max_notification_id() or 1)
    return {n.originator_id for n in notifications if n.topic == "domain.round:Round.Opened"}


def test_each_operators_plays_stay_in_its_deployment(deployments, wallet) -> None:
    api_a1, a1 = deployments["a1"]
    api_a2, a2 = deployments["a2"]
    api_b, b = deployments["b"]
    played_a = _play(api_a1, "same-id")
    played_b = _play(api_b, "same-id")  # the same clientActionId, another operator
    assert (played_a.status_code, played_b.status_code) == (200, 200)
    round_a = played_a.json()["round"]["publicId"]
    round_b = played_b.json()["round"]["publicId"]
    assert round_a != round_b

    # either API process of deployment A answers for its operator: the same answer
    replayed = _play(api_a2, "same-id")
    assert (replayed.status_code, replayed.content) == (200, played_a.content)
    listed = api_a2.s2s("GET", "/api/s2s/rounds", params={"playerExternalId": "p-1"})
    assert [r["publicId"] for r in listed.json()["rounds"]] == [round_a]

    # a key is known only to its own deployment
    assert _play(api_b, "x", key_id="key-a", secret="secret-a-1").status_code == 401
    assert _play(api_a1, "x", key_id="key-b", secret="secret-b-1").status_code == 401

    wait_until(lambda: _rounds(a1) and _rounds(b), what="both deployments' round history")
    assert _rounds(a1) == [("op-a", round_a)]
    assert _rounds(b) == [("op-b", round_b)]
    # each log holds its own operator's round and not the other's (comparing the logs'
    # lengths said nothing: two logs of equally many events have equal last ids)
    assert _opened_rounds(a1) == _opened_rounds(a2) != _opened_rounds(b)
    assert len(_opened_rounds(a1)) == len(_opened_rounds(b)) == 1
    assert len(wallet.ledger.requests_of("wallet.debit")) == 2
    assert wallet.ledger.net_debits("op-a") == wallet.ledger.net_debits("op-b") == 1000

    # each deployment's dispatcher sends its own operator's webhook, once
    wait_until(lambda: len(wallet.ledger.received_webhooks) == 2, what="both webhooks")
    sent = sorted(
        (hook["operatorId"], hook["data"]["round"]["publicId"])
        for hook in wallet.ledger.received_webhooks
    )
    assert sent == sorted([("op-a", round_a), ("op-b", round_b)])

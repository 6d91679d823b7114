"""Rounds name their game (decisions §10: "Upgrader rounds gain ``game: "upgrader"``"),
right after ``status``, on SQLite and PostgreSQL, over real HTTP:

* the play answer and round history (a page and one round) give the same round, with
  ``game`` third;
* a history row stored before rounds named their game (its view has no ``game``, as the
  projection wrote it then) is answered with ``game: "upgrader"`` in the same place: the
  round the play answers now; the stored row itself is left as it was;
* a voided round stays ``{publicId, status}`` (interface 2.1), in the refusal and in
  history.
"""

from __future__ import annotations

import json
from typing import Any

from application.platform import Platform
from ops.reference_operator.wallet import ThreadedWalletServer
from tests.support.live import Api

PLAY = "/api/s2s/upgrader/play"
ROUNDS = "/api/s2s/rounds"


def _play(api: Api, player: str, action: str) -> Any:
    body = {
        "playerExternalId": player,
        "clientActionId": action,
        "wagerMinor": 1000,
        "chanceBps": 9000,
        "targetItemId": 3,
    }
    return api.s2s("POST", PLAY, json.dumps(body).encode())


def _history(api: Api, player: str) -> list[dict[str, Any]]:
    response = api.s2s("GET", ROUNDS, params={"playerExternalId": player})
    assert response.status_code == 200, response.text
    return response.json()["rounds"]


def _one(api: Api, public_id: str) -> dict[str, Any]:
    response = api.s2s("GET", f"{ROUNDS}/{public_id}")
    assert response.status_code == 200, response.text
    return response.json()


def _stored_view(platform: Platform, public_id: str) -> str:
    with platform.db.transaction() as cur:
        cur.execute("SELECT view FROM round_history WHERE public_id = ?", (public_id,))
        return cur.fetchone()[0]


def test_a_round_names_its_game_after_its_status(
    api: Api, platform: Platform, wallet: ThreadedWalletServer
) -> None:
    wallet.ledger.fund("op-a", "g-1", "EUR", 5000)
    answer = _play(api, "g-1", "first")
    assert answer.status_code == 200, answer.text
    round_ = answer.json()["round"]
    assert list(round_)[:3] == ["publicId", "status", "game"]
    assert (round_["status"], round_["game"]) == ("settled", "upgrader")
    assert _history(api, "g-1") == [round_]
    assert list(_history(api, "g-1")[0]) == list(round_)
    assert _one(api, round_["publicId"]) == round_
    # what the projection stores is the view as answered: compact, ASCII, in field order
    stored = _stored_view(platform, round_["publicId"])
    assert stored == json.dumps(round_, separators=(",", ":"))


def test_a_row_stored_before_rounds_named_their_game_is_answered_with_it(
    api: Api, platform: Platform, wallet: ThreadedWalletServer
) -> None:
    wallet.ledger.fund("op-a", "g-2", "EUR", 5000)
    played = [_play(api, "g-2", f"old-{n}").json()["round"] for n in range(2)]
    assert _history(api, "g-2") == played[::-1]  # caught up: both rows are stored
    old = played[0]
    before = {key: value for key, value in old.items() if key != "game"}
    assert list(before)[:3] == ["publicId", "status", "mode"]
    old_text = json.dumps(before, separators=(",", ":"))  # as the projection wrote it then
    with platform.db.transaction() as cur:
        cur.execute(
            "UPDATE round_history SET view = ? WHERE public_id = ?", (old_text, old["publicId"])
        )
    page = _history(api, "g-2")
    assert page == played[::-1]
    assert [list(r) for r in page] == [list(r) for r in played[::-1]]  # game third in each
    one = _one(api, old["publicId"])
    assert (one, list(one)) == (old, list(old))
    assert _stored_view(platform, old["publicId"]) == old_text  # read, never rewritten
    # a copy of the action answers the round as it renders now, the same as history
    assert _play(api, "g-2", "old-0").json()["round"] == one


def test_a_voided_round_is_still_its_public_id_and_status(api: Api) -> None:
    refused = _play(api, "g-unfunded", "poor")
    assert refused.status_code == 422, refused.text
    voided = refused.json()["round"]
    assert (voided, refused.json()["error"]["code"]) == (
        {"publicId": voided["publicId"], "status": "voided"},
        "INSUFFICIENT_FUNDS",
    )
    assert _history(api, "g-unfunded") == [voided]
    assert _one(api, voided["publicId"]) == voided

"""The answers rendered from recorded rounds (``application/games/upgrader/answers.py``: the play
answer, its replay, round history and the webhook's data) are what the API's wire structs
(``api/schemas_upgrader.py``, the OpenAPI document) declare: no key more, none missing."""

from __future__ import annotations

import json

import msgspec

from api.schemas_items import PlayItemsAnswer
from api.schemas_upgrader import PlayAnswer, RoundWire
from application.games.upgrader.answers import play_answer, round_wire
from application.wallet.refusals import voided_round_wire
from domain.upgrader_round import UpgraderOpening, UpgraderSettlement
from tests.golden.snapshot import load_log


def _settled_rounds() -> list[tuple[UpgraderOpening, UpgraderSettlement]]:
    openings: dict[str, UpgraderOpening] = {}
    settled = []
    for event in load_log():
        state = json.loads(event["state"])
        if event["topic"].endswith("Round.Opened"):
            openings[event["originator_id"]] = UpgraderOpening.of(state["opening"])
        elif event["topic"].endswith("Round.RoundSettled"):
            opening = openings[event["originator_id"]]
            settled.append((opening, UpgraderSettlement.of(state["settlement"])))
    return settled


def test_every_recorded_round_answers_as_the_wire_structs_declare() -> None:
    rounds = _settled_rounds()
    modes = sorted({opening.mode for opening, _ in rounds})
    assert (len(rounds), modes) == (33, ["balance", "items"])
    for opening, settlement in rounds:
        answer = play_answer(opening, settlement)
        wire = PlayItemsAnswer if opening.mode == "items" else PlayAnswer
        typed = msgspec.convert(answer, wire)
        assert msgspec.to_builtins(typed) == answer
        view = round_wire(opening, settlement)  # what round history stores
        assert msgspec.to_builtins(msgspec.convert(view, RoundWire)) == view


def test_a_voided_round_is_its_public_id_and_status() -> None:
    voided = msgspec.convert(voided_round_wire("r_1"), RoundWire)
    assert (voided.public_id, voided.status, voided.mode, voided.target) == (
        "r_1",
        "voided",
        None,
        None,
    )

"""One definition of each answer view (issue 16): the structs of
``application/games/upgrader/views.py``, ``application/games/boxes/round_answers.py``,
``application/inventory/views.py`` and ``application/rounds/views.py`` are what the
application renders (``answers.py``, ``inventory/items.py``, ``rounds/fairness.py``),
what the routes return, what round history and the webhook outbox store, and what the
OpenAPI document describes.

* Every wire struct is defined once: no two share a name or the same fields, and the
  API's schema modules define none of the application's views again (they import them).
* Every round recorded in the golden log renders through those structs: the play answer
  is the struct the OpenAPI document names for its mode and its bytes decode back as it
  (unknown fields refused); the webhook's data holds the same round, won item and facts;
  round history's view and the webhook's body are, byte for byte, what the golden
  projections stored (``tests/golden/expected.json``).
* A voided round is its publicId and status alone (interface 2.1).
"""

from __future__ import annotations

import inspect
import json
from collections import Counter
from typing import Any
from uuid import UUID

import msgspec

import api.app  # every route module, so every wire struct, is loaded
import api.schemas_items
import api.schemas_upgrader
import application.games.boxes.round_answers
import application.games.upgrader.views
import application.inventory.views
import application.rounds.views
from api.openapi_doc import _wire_structs
from application.games.upgrader.answers import play_answer, round_wire, webhook_data
from application.games.upgrader.views import (
    PlayAnswer,
    PlayItemsAnswer,
    RoundSettledWebhook,
    RoundWire,
)
from application.wallet.refusals import voided_round_wire
from application.wire import Wire
from domain.upgrader_round import UpgraderOpening, UpgraderSettlement
from projections.outbox import render_payload, webhook_id
from tests.golden.snapshot import EXPECTED_FILE, load_log

VIEW_MODULES = (
    application.games.upgrader.views,
    application.games.boxes.round_answers,
    application.inventory.views,
    application.rounds.views,
)
API_MODULES = (api.schemas_upgrader, api.schemas_items)


def _classes(module: Any) -> dict[str, type]:
    return {
        name: value
        for name, value in vars(module).items()
        if inspect.isclass(value) and issubclass(value, Wire)
    }


def test_every_wire_struct_is_defined_once() -> None:
    structs = _wire_structs()  # every Wire struct, and the error bodies and box answers
    names = Counter(struct.__name__ for struct in structs)
    assert [name for name, n in names.items() if n > 1] == []
    # a shape is the fields with their types: a box round's facts have the Upgrader's
    # field names (decisions §10) with other types
    shapes = Counter(
        tuple(sorted((f.encode_name, repr(f.type)) for f in msgspec.structs.fields(struct)))
        for struct in structs
    )
    assert [shape for shape, n in shapes.items() if n > 1] == []
    views = {name for module in VIEW_MODULES for name in _classes(module)}
    assert {"RoundWire", "PlayAnswer", "InventoryItemWire", "RoundSettledWebhook"} <= views
    assert {"FairnessAnswer", "RotateAnswer", "CashoutAnswer", "ShippingAnswer"} <= views
    for module in API_MODULES:  # what they name of the views is the application's class
        for name, struct in _classes(module).items():
            assert (name in views) == struct.__module__.startswith("application."), name


def _settled_rounds() -> list[tuple[UUID, UpgraderOpening, UpgraderSettlement]]:
    openings: dict[str, UpgraderOpening] = {}
    settled = []
    for event in load_log():
        state = json.loads(event["state"])
        if event["topic"].endswith("Round.Opened"):
            openings[event["originator_id"]] = UpgraderOpening.of(state["opening"])
        elif event["topic"].endswith("Round.RoundSettled"):
            opening = openings[event["originator_id"]]
            settlement = UpgraderSettlement.of(state["settlement"])
            settled.append((UUID(event["originator_id"]), opening, settlement))
    return settled


def _stored(table: str, key: str, value: str) -> dict[str, str]:
    spec = json.loads(EXPECTED_FILE.read_text(encoding="utf-8"))["tables"][table]
    k, v = spec["columns"].index(key), spec["columns"].index(value)
    return {row[k]: row[v] for row in spec["rows"]}


def test_every_recorded_round_renders_through_the_views() -> None:
    rounds = _settled_rounds()
    assert (len(rounds), sorted({opening.mode for _, opening, _ in rounds})) == (
        33,
        ["balance", "items"],
    )
    history = _stored("round_history", "round_id", "view")
    outbox = _stored("webhook_outbox", "round_id", "payload")
    for rid, opening, settlement in rounds:
        answer = play_answer(opening, settlement)
        documented = PlayItemsAnswer if opening.mode == "items" else PlayAnswer
        assert type(answer) is documented
        encoded = msgspec.json.encode(answer)
        assert msgspec.json.encode(msgspec.json.decode(encoded, type=documented)) == encoded
        assert (answer.round.status, answer.round.game) == ("settled", "upgrader")

        view = round_wire(opening, settlement)
        assert view == answer.round
        stored = json.dumps(msgspec.to_builtins(view), separators=(",", ":"))
        assert stored == history[rid.hex]  # what round history stores

        data = webhook_data(opening, settlement)
        assert (data.round, data.won_item, data.facts) == (
            answer.round,
            answer.won_item,
            answer.facts,
        )
        assert data.stake == (answer.stake if opening.mode == "items" else None)
        stored_opening = json.dumps(opening.record())  # its text as a projection stores it
        payload = render_payload(webhook_id(rid), stored_opening, settlement.record())
        assert payload == outbox[rid.hex]  # what the outbox stores and sends
        body = msgspec.json.decode(payload, type=RoundSettledWebhook)
        assert (body.id, body.data) == (webhook_id(rid), data)


def test_a_voided_round_is_its_public_id_and_status() -> None:
    voided = voided_round_wire("r_1")
    assert msgspec.json.encode(voided) == b'{"publicId":"r_1","status":"voided"}'
    as_documented = msgspec.json.decode(msgspec.json.encode(voided), type=RoundWire)
    assert (as_documented.public_id, as_documented.status, as_documented.game) == (
        "r_1",
        "voided",
        None,
    )
    assert msgspec.json.encode(as_documented) == msgspec.json.encode(voided)

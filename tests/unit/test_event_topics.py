"""Event topics are a stored format: pinned here, wherever the classes live.

Every stored event names its class by a topic, and the created event of an aggregate
also names the aggregate (``originator_topic``). They used to be derived from the module
path (``domain.round:Round.Opened``), so moving a class would have broken every recorded
log. Every aggregate and event class now has an explicit topic (``TOPIC`` and
``@event(name, topic=...)``) equal to the string it was stored under then
(``tests/golden/events.jsonl`` was recorded before the change). A class may move or be
renamed in the code: the import below changes, the topic string does not.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib import import_module
from pathlib import Path

import pytest
from eventsourcing.domain import Aggregate
from eventsourcing.utils import get_topic, resolve_topic

from domain.box_history import BoxCatalogRecord
from domain.cashout import Cashout, Shipment
from domain.config_history import CatalogItemRecord, OperatorProfile
from domain.inventory import InventoryItem
from domain.player_fairness import PlayerFairness
from domain.round import Round
from domain.round_cancel import RoundCancel
from tests.golden.snapshot import BOXES_EXPECTED_FILE, EXPECTED_FILE

SRC = Path(__file__).resolve().parents[2] / "src"

# Every aggregate and event class and the topic it is stored under: never edit a string.
# ``Created`` is the library's default created event: unused, never stored, pinned anyway.
PINNED: dict[str, type] = {
    "domain.round:Round": Round,
    "domain.round:Round.Created": Round.Created,
    "domain.round:Round.Opened": Round.Opened,
    "domain.round:Round.DebitAttempted": Round.DebitAttempted,
    "domain.round:Round.DebitUncertain": Round.DebitUncertain,
    "domain.round:Round.WagerRolledBack": Round.WagerRolledBack,
    "domain.round:Round.RollbackEscalated": Round.RollbackEscalated,
    "domain.round:Round.WagerDebited": Round.WagerDebited,
    "domain.round:Round.RoundSettled": Round.RoundSettled,
    "domain.round:Round.RoundVoided": Round.RoundVoided,
    "domain.round:Round.RoundHeld": Round.RoundHeld,
    "domain.round:Round.CancelCreditAttempted": Round.CancelCreditAttempted,
    "domain.round:Round.CancelCreditUncertain": Round.CancelCreditUncertain,
    "domain.round:Round.CancelCreditRefused": Round.CancelCreditRefused,
    "domain.round:Round.RoundCancelled": Round.RoundCancelled,
    "domain.round_cancel:RoundCancel": RoundCancel,
    "domain.round_cancel:RoundCancel.Created": RoundCancel.Created,
    "domain.round_cancel:RoundCancel.CancelRequested": RoundCancel.CancelRequested,
    "domain.player_fairness:PlayerFairness": PlayerFairness,
    "domain.player_fairness:PlayerFairness.Created": PlayerFairness.Created,
    "domain.player_fairness:PlayerFairness.SeedPairStarted": PlayerFairness.SeedPairStarted,
    "domain.player_fairness:PlayerFairness.NonceUsed": PlayerFairness.NonceUsed,
    "domain.player_fairness:PlayerFairness.SeedRotated": PlayerFairness.SeedRotated,
    "domain.inventory:InventoryItem": InventoryItem,
    "domain.inventory:InventoryItem.Created": InventoryItem.Created,
    "domain.inventory:InventoryItem.ItemGranted": InventoryItem.ItemGranted,
    "domain.inventory:InventoryItem.ItemConsumed": InventoryItem.ItemConsumed,
    "domain.inventory:InventoryItem.ItemHeldForCashout": InventoryItem.ItemHeldForCashout,
    "domain.inventory:InventoryItem.ItemReleased": InventoryItem.ItemReleased,
    "domain.inventory:InventoryItem.ItemCashedBack": InventoryItem.ItemCashedBack,
    "domain.inventory:InventoryItem.ItemShippingRequested": InventoryItem.ItemShippingRequested,
    "domain.inventory:InventoryItem.ItemShipped": InventoryItem.ItemShipped,
    "domain.inventory:InventoryItem.ItemCancelled": InventoryItem.ItemCancelled,
    "domain.cashout:Cashout": Cashout,
    "domain.cashout:Cashout.Created": Cashout.Created,
    "domain.cashout:Cashout.CashoutRequested": Cashout.CashoutRequested,
    "domain.cashout:Cashout.CreditAttempted": Cashout.CreditAttempted,
    "domain.cashout:Cashout.CreditUncertain": Cashout.CreditUncertain,
    "domain.cashout:Cashout.CashoutCredited": Cashout.CashoutCredited,
    "domain.cashout:Cashout.CreditRefused": Cashout.CreditRefused,
    "domain.cashout:Shipment": Shipment,
    "domain.cashout:Shipment.Created": Shipment.Created,
    "domain.cashout:Shipment.ShippingRequested": Shipment.ShippingRequested,
    "domain.cashout:Shipment.ShipmentDispatched": Shipment.ShipmentDispatched,
    "domain.config_history:OperatorProfile": OperatorProfile,
    "domain.config_history:OperatorProfile.Created": OperatorProfile.Created,
    "domain.config_history:OperatorProfile.Registered": OperatorProfile.Registered,
    "domain.config_history:OperatorProfile.SettingsChanged": OperatorProfile.SettingsChanged,
    "domain.config_history:OperatorProfile.KeyAdded": OperatorProfile.KeyAdded,
    "domain.config_history:OperatorProfile.KeyRevoked": OperatorProfile.KeyRevoked,
    "domain.config_history:OperatorProfile.RateSet": OperatorProfile.RateSet,
    "domain.config_history:OperatorProfile.CurrencyRemoved": OperatorProfile.CurrencyRemoved,
    "domain.config_history:CatalogItemRecord": CatalogItemRecord,
    "domain.config_history:CatalogItemRecord.Created": CatalogItemRecord.Created,
    "domain.config_history:CatalogItemRecord.Listed": CatalogItemRecord.Listed,
    "domain.config_history:CatalogItemRecord.Priced": CatalogItemRecord.Priced,
    "domain.config_history:CatalogItemRecord.Changed": CatalogItemRecord.Changed,
    "domain.box_history:BoxCatalogRecord": BoxCatalogRecord,
    "domain.box_history:BoxCatalogRecord.Created": BoxCatalogRecord.Created,
    "domain.box_history:BoxCatalogRecord.Started": BoxCatalogRecord.Started,
    "domain.box_history:BoxCatalogRecord.VersionRecorded": BoxCatalogRecord.VersionRecorded,
    "domain.box_history:BoxCatalogRecord.VersionActiveChanged": (
        BoxCatalogRecord.VersionActiveChanged
    ),
    "domain.box_history:BoxCatalogRecord.VersionDisplayChanged": (
        BoxCatalogRecord.VersionDisplayChanged
    ),
}
AGGREGATES = [cls for cls in PINNED.values() if issubclass(cls, Aggregate)]
# the event that creates each aggregate (its ``__init__``'s)
CREATED_BY = {
    Round: "domain.round:Round.Opened",
    RoundCancel: "domain.round_cancel:RoundCancel.CancelRequested",
    PlayerFairness: "domain.player_fairness:PlayerFairness.SeedPairStarted",
    InventoryItem: "domain.inventory:InventoryItem.ItemGranted",
    Cashout: "domain.cashout:Cashout.CashoutRequested",
    Shipment: "domain.cashout:Shipment.ShippingRequested",
    OperatorProfile: "domain.config_history:OperatorProfile.Registered",
    CatalogItemRecord: "domain.config_history:CatalogItemRecord.Listed",
    BoxCatalogRecord: "domain.box_history:BoxCatalogRecord.Started",
}


def _event_classes(aggregate: type) -> list[type]:
    """The event classes an aggregate defines (its base ``Event`` class is never stored)."""
    return [
        value
        for name, value in vars(aggregate).items()
        if isinstance(value, type) and issubclass(value, Aggregate.Event) and name != "Event"
    ]


def _modules_defining_events() -> list[str]:
    """Every module under src/ that could define an aggregate or event class."""
    return sorted(
        ".".join(path.relative_to(SRC).with_suffix("").parts)
        for path in SRC.rglob("*.py")
        if re.search(r"eventsourcing\.domain", path.read_text(encoding="utf-8"))
    )


def test_each_class_writes_and_resolves_its_pinned_topic() -> None:
    for topic, cls in PINNED.items():
        assert topic == cls.TOPIC, cls  # explicit, not derived from the module path
        assert get_topic(cls) == topic, cls
        assert resolve_topic(topic) is cls, topic
    for aggregate in AGGREGATES:
        assert "TOPIC" in vars(aggregate), aggregate


def test_the_pinned_list_is_every_aggregate_and_event_class_in_src() -> None:
    found = set()
    for name in _modules_defining_events():
        for value in vars(import_module(name)).values():
            defined_here = isinstance(value, type) and value.__module__ == name
            if defined_here and issubclass(value, Aggregate):
                found |= {value, *_event_classes(value)}
    assert found == set(PINNED.values())


def test_new_events_are_stored_under_the_pinned_topics() -> None:
    """What the store writes for a new aggregate: the event's topic and the aggregate's."""
    profile = OperatorProfile("op-x")
    profile.change_settings({"base_currency": "EUR"})
    created, changed = profile.collect_events()
    assert (get_topic(type(created)), get_topic(type(changed))) == (
        "domain.config_history:OperatorProfile.Registered",
        "domain.config_history:OperatorProfile.SettingsChanged",
    )
    assert created.originator_topic == "domain.config_history:OperatorProfile"


def test_the_golden_log_topics_are_all_pinned() -> None:
    """Both golden logs: the first (the Upgrader) and the second (box rounds, the box
    catalogue and cancels)."""
    for path in (EXPECTED_FILE, BOXES_EXPECTED_FILE):
        recorded = json.loads(path.read_text(encoding="utf-8"))["topics"]
        assert set(recorded) <= set(PINNED), path.name


# A module's source loaded under another module path, in a fresh interpreter, never
# importing the old path: its classes still write and resolve the old topics, and an
# aggregate saved and loaded again (the created event names the aggregate) round-trips.
MOVED = r"""
import importlib.util, json, sys
from eventsourcing.application import Application
from eventsourcing.domain import Aggregate
from eventsourcing.utils import get_topic, resolve_topic

old, path = sys.argv[1], sys.argv[2]
spec = importlib.util.spec_from_file_location("moved.elsewhere", path)
moved = importlib.util.module_from_spec(spec)
sys.modules["moved.elsewhere"] = moved
spec.loader.exec_module(moved)
assert old not in sys.modules, "the old module path was imported"
KEY = {"operator_id": "o", "player_external_id": "p", "client_action_id": "a"}
MAKE = {
    "Round": lambda c: c(dict(KEY)),
    "RoundCancel": lambda c: c(dict(KEY)),
    "PlayerFairness": lambda c: c("o", "p", "hash", "seed", 1.0),
    "InventoryItem": lambda c: c({"inventory_item_id": 7}),
    "Cashout": lambda c: c(dict(KEY)),
    "Shipment": lambda c: c(dict(KEY)),
    "OperatorProfile": lambda c: c("o"),
    "CatalogItemRecord": lambda c: c(7, {"value_minor": 1}),
    "BoxCatalogRecord": lambda c: c(),
}
app = Application(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
topics, saved = {}, {}
for cls in list(vars(moved).values()):
    if not isinstance(cls, type) or cls.__module__ != "moved.elsewhere":
        continue
    if not issubclass(cls, Aggregate):
        continue
    for name, value in [("", cls), *vars(cls).items()]:
        if isinstance(value, type) and name != "Event":
            assert resolve_topic(get_topic(value)) is value
            topics[get_topic(value)] = value.__module__
    aggregate = MAKE[cls.__name__](cls)
    app.save(aggregate)
    (stored,) = app.recorder.select_events(aggregate.id)
    again = app.repository.get(aggregate.id)
    assert type(again) is cls and again.version == 1
    saved[cls.__name__] = [stored.topic, json.loads(stored.state)["originator_topic"]]
print(json.dumps({"topics": topics, "saved": saved}))
"""


@pytest.mark.parametrize("module", sorted({cls.__module__ for cls in AGGREGATES}))
def test_a_class_moved_to_another_module_keeps_its_topics(module: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", MOVED, module, sys.modules[module].__file__ or ""],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    mine = {topic for topic, cls in PINNED.items() if cls.__module__ == module}
    assert answer["topics"] == dict.fromkeys(mine, "moved.elsewhere")
    assert answer["saved"] == {
        cls.__name__: [CREATED_BY[cls], get_topic(cls)]
        for cls in AGGREGATES
        if cls.__module__ == module
    }

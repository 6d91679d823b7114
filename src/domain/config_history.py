"""What the configuration said, and when: operator profiles and catalogue items as events.

At start-up the loaded file is compared with these aggregates and only the differences
are appended, so an auditor can tell which settings, keys, rates and prices a past round
saw. Secrets are never recorded: keys and the outbound secret appear as fingerprints.
Stored format: each event is stored under its explicit topic (``TOPIC``, ``@event(...,
topic=...)``), the string it had when topics were module paths. The classes and this
module may move; topics, event names and fields never change
(``tests/unit/test_event_topics.py`` pins the topics).
"""

from __future__ import annotations

from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import Aggregate, event

NAMESPACE = uuid5(NAMESPACE_URL, "urn:upgrader-platform")


class OperatorProfile(Aggregate):
    TOPIC = "domain.config_history:OperatorProfile"

    class Created(Aggregate.Created):  # the library's default, unused: a topic all the same
        TOPIC = "domain.config_history:OperatorProfile.Created"

    @staticmethod
    def create_id(operator_id: str) -> UUID:
        return uuid5(NAMESPACE, f"operator-profile:{operator_id}")

    @event("Registered", topic="domain.config_history:OperatorProfile.Registered")
    def __init__(self, operator_id: str) -> None:
        self.operator_id = operator_id
        self.settings: dict[str, Any] = {}
        self.keys: dict[str, dict[str, Any]] = {}
        self.rates: dict[str, dict[str, Any]] = {}

    @event("SettingsChanged", topic="domain.config_history:OperatorProfile.SettingsChanged")
    def change_settings(self, settings: dict[str, Any]) -> None:
        self.settings = settings

    @event("KeyAdded", topic="domain.config_history:OperatorProfile.KeyAdded")
    def add_key(self, key_id: str, catalog_access: bool, secret_fingerprint: str) -> None:
        self.keys[key_id] = {
            "catalog_access": catalog_access,
            "secret_fingerprint": secret_fingerprint,
            "revoked": False,
        }

    @event("KeyRevoked", topic="domain.config_history:OperatorProfile.KeyRevoked")
    def revoke_key(self, key_id: str) -> None:
        self.keys[key_id] = {**self.keys[key_id], "revoked": True}

    @event("RateSet", topic="domain.config_history:OperatorProfile.RateSet")
    def set_rate(self, code: str, rate: str, exponent: int) -> None:
        self.rates[code] = {"rate": rate, "exponent": exponent}

    @event("CurrencyRemoved", topic="domain.config_history:OperatorProfile.CurrencyRemoved")
    def remove_currency(self, code: str) -> None:
        del self.rates[code]


class CatalogItemRecord(Aggregate):
    TOPIC = "domain.config_history:CatalogItemRecord"

    class Created(Aggregate.Created):  # the library's default, unused: a topic all the same
        TOPIC = "domain.config_history:CatalogItemRecord.Created"

    @staticmethod
    def create_id(item_id: int) -> UUID:
        return uuid5(NAMESPACE, f"catalog-item:{item_id}")

    @event("Listed", topic="domain.config_history:CatalogItemRecord.Listed")
    def __init__(self, item_id: int, item: dict[str, Any]) -> None:
        self.item_id = item_id
        self.item = item

    @event("Priced", topic="domain.config_history:CatalogItemRecord.Priced")
    def reprice(self, value_minor: int) -> None:
        self.item = {**self.item, "value_minor": value_minor}

    @event("Changed", topic="domain.config_history:CatalogItemRecord.Changed")
    def change(self, item: dict[str, Any]) -> None:
        self.item = item

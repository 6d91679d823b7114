"""Test configurations: a small two-operator setup on a given database URL."""

from __future__ import annotations

import copy
from typing import Any

from application.config.load import parse_config
from application.config.shape import Config

BASE: dict[str, Any] = {
    "service": {
        "base_url": "http://127.0.0.1:8000",
        "database_url": "sqlite:///var/test.db",
        "session_idle_seconds": 1800,
        "launch_token_ttl_seconds": 120,
        "uncertain_debit_grace_seconds": 60,
        "wallet_timeout_seconds": 10,
        # admission's store-wait check off: how long store calls queue depends on what
        # else runs on the machine (parallel test workers), so it would refuse plays at
        # random; tests/integration/test_admission.py turns it on where it is the subject
        "overload_store_wait_ms": 0,
    },
    "operators": [
        {
            "id": "op-a",
            "base_currency": "EUR",
            "limits": {
                "requests_per_second_per_key": 100000,
                "requests_per_second_per_session": 100000,
                "plays_per_second_per_player": 100000,
            },
            "outbound_secret": "outbound-a-secret",
            "enabled_games": ["upgrader", "boxes"],
            "keys": [
                {"key_id": "key-a", "secret": "secret-a-1", "catalog_access": True},
                {"key_id": "key-a-old", "secret": "secret-a-0", "revoked": True},
            ],
            "currencies": [
                {"code": "EUR", "rate": "1", "exponent": 2},
                {"code": "USD", "rate": "1.1", "exponent": 2},
            ],
            "upgrader": {
                "house_edge_bps": 500,
                "chance_presets_bps": [1000, 2500, 5000, 7500, 9000],
                "default_chance_bps": 5000,
                "max_chance_bps": 9500,
                "min_wager_minor": 10,
                "max_wager_minor": 1_000_000,
            },
        },
        {
            "id": "op-b",
            "base_currency": "EUR",
            "outbound_secret": "outbound-b-secret",
            "enabled_games": ["upgrader"],
            "keys": [{"key_id": "key-b", "secret": "secret-b-1", "catalog_access": False}],
            "currencies": [{"code": "EUR", "rate": "1", "exponent": 2}],
        },
        {
            "id": "op-items-only",
            "base_currency": "EUR",
            "outbound_secret": "outbound-i-secret",
            "enabled_games": ["upgrader"],
            "keys": [{"key_id": "key-i", "secret": "secret-i-1"}],
            "currencies": [{"code": "EUR", "rate": "1", "exponent": 2}],
            "upgrader": {"balance_mode": False, "items_mode": True},
        },
        {
            "id": "op-off",
            "base_currency": "EUR",
            "outbound_secret": "outbound-off-secret",
            "enabled_games": [],
            "keys": [{"key_id": "key-off", "secret": "secret-off-1"}],
            "currencies": [{"code": "EUR", "rate": "1", "exponent": 2}],
        },
    ],
    "catalog": {
        "items": [
            {
                "item_id": i,
                "name": {"en": f"Item {i}", "de": f"Ding {i}"},
                "value_minor": v,
                "cashback_bps": 9000,
            }
            for i, v in [
                (1, 500),
                (2, 960),
                (3, 1000),
                (4, 1055),
                (5, 1728),
                (6, 1800),
                (7, 1900),
                (8, 1901),
                (9, 9000),
                (10, 9500),
                (11, 20000),
            ]
        ]
        + [
            {"item_id": 12, "name": {"en": "Retired"}, "value_minor": 1850, "active": False},
            {
                "item_id": 13,
                "name": {"en": "Digital only"},
                "value_minor": 1750,
                "fulfillable": False,
            },
        ],
        "boxes": [
            {
                "box_id": 7,
                "box_version_id": 3,
                "name": {"en": "Box"},
                "price_minor": 300,
                "items": [{"item_id": 1, "weight": 1}],
            }
        ],
    },
}

KEYS = {
    "key-a": "secret-a-1",
    "key-a-old": "secret-a-0",
    "key-b": "secret-b-1",
    "key-off": "secret-off-1",
}


def raw_config(database_url: str) -> dict[str, Any]:
    raw = copy.deepcopy(BASE)
    raw["service"]["database_url"] = database_url
    return raw


def make_config(
    database_url: str,
    raw: dict[str, Any] | None = None,
    wallet_url: str | None = None,
    **service: Any,
) -> Config:
    """A test config; ``wallet_url`` (and webhooks beside it) for every operator."""
    raw = copy.deepcopy(raw) if raw is not None else raw_config(database_url)
    raw["service"]["database_url"] = database_url
    raw["service"].update(service)
    if wallet_url is not None:
        for operator in raw["operators"]:
            operator["wallet_url"] = wallet_url
            operator["webhook_url"] = wallet_url.rsplit("/", 1)[0] + "/webhooks"
    return parse_config(raw, source="test-config", env={})


KEYS["key-i"] = "secret-i-1"
OUTBOUND = {
    "op-a": "outbound-a-secret",
    "op-b": "outbound-b-secret",
    "op-items-only": "outbound-i-secret",
    "op-off": "outbound-off-secret",
}

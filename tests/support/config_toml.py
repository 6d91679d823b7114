"""Configuration files (TOML) for tests that run real ``upgrader`` processes.

Each helper returns one part of a file (the ``[service]`` table, one operator, catalog
items); ``balance_config`` joins them into the one-operator, balance-mode setup the
end-to-end and fault tests share. Values a test chooses (URLs, secrets) are written as
JSON string literals, which are valid TOML basic strings.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


def toml_string(value: str) -> str:
    """``value`` as a TOML basic string (a JSON string literal is one)."""
    return json.dumps(value)


def service(database_url: str, *, grace_seconds: int, wallet_timeout_seconds: int) -> str:
    """The ``[service]`` table on loopback, with the given store, grace and wallet timeout."""
    return f"""\
[service]
base_url = "http://127.0.0.1:8000"
host = "127.0.0.1"
port = 8000
database_url = {toml_string(database_url)}
session_idle_seconds = 1800
launch_token_ttl_seconds = 120
uncertain_debit_grace_seconds = {grace_seconds}
wallet_timeout_seconds = {wallet_timeout_seconds}
"""


@dataclass(frozen=True)
class Key:
    """One inbound key of an operator (``catalog_access`` and ``revoked`` written if set)."""

    key_id: str
    secret: str
    catalog_access: bool = False
    revoked: bool = False


# W=1000, p=5000, fee 500 bps: target band [1728, 1900] (item 6 of BAND_CATALOG)
BALANCE_UPGRADER = """\
  [operators.upgrader]
  house_edge_bps = 500
  chance_presets_bps = [1000, 2500, 5000, 7500, 9000]
  default_chance_bps = 5000
  max_chance_bps = 9500
  min_wager_minor = 10
  max_wager_minor = 1000000
  balance_mode = true
"""


def operator(
    operator_id: str,
    *,
    wallet_url: str,
    outbound_secret: str,
    keys: Sequence[Key],
    webhook_url: str | None = None,
    upgrader: str = "",
    limits: Mapping[str, int] | None = None,
) -> str:
    """One ``[[operators]]`` entry in EUR with the upgrader enabled: its keys, then
    ``upgrader`` (a table such as ``BALANCE_UPGRADER``) and ``limits`` when given."""
    lines = [
        "[[operators]]",
        f"id = {toml_string(operator_id)}",
        'base_currency = "EUR"',
        f"wallet_url = {toml_string(wallet_url)}",
    ]
    if webhook_url is not None:
        lines.append(f"webhook_url = {toml_string(webhook_url)}")
    lines += [f"outbound_secret = {toml_string(outbound_secret)}", 'enabled_games = ["upgrader"]']
    for key in keys:
        lines += [
            "",
            "  [[operators.keys]]",
            f"  key_id = {toml_string(key.key_id)}",
            f"  secret = {toml_string(key.secret)}",
        ]
        lines += ["  catalog_access = true"] if key.catalog_access else []
        lines += ["  revoked = true"] if key.revoked else []
    lines += ["", "  [[operators.currencies]]", '  code = "EUR"', '  rate = "1"', "  exponent = 2"]
    text = "\n".join(lines) + "\n"
    if upgrader:
        text += "\n" + upgrader
    if limits:
        text += "\n  [operators.limits]\n"
        text += "".join(f"  {name} = {value}\n" for name, value in limits.items())
    return text


def catalog_item(item_id: int, name: str, value_minor: int, *, image_url: str = "") -> str:
    """One ``[[catalog.items]]`` entry (English name, 90 % cash-back)."""
    text = f"""\
[[catalog.items]]
item_id = {item_id}
name = {{ en = {toml_string(name)} }}
value_minor = {value_minor}
cashback_bps = 9000
"""
    return text + (f"image_url = {toml_string(image_url)}\n" if image_url else "")


BAND_CATALOG = "\n".join(
    [
        catalog_item(1, "Small", 500),
        catalog_item(6, "In band", 1800),
        catalog_item(9, "Large", 9000),
    ]
)


def join(*parts: str) -> str:
    """The parts of a configuration file, a blank line between each."""
    return "\n".join(parts)


def balance_config(
    database_url: str,
    *,
    operator_id: str,
    key: Key,
    wallet_url: str,
    outbound_secret: str,
    grace_seconds: int,
    wallet_timeout_seconds: int,
    webhook_url: str | None = None,
    limits: Mapping[str, int] | None = None,
) -> str:
    """One operator with one key (catalog access), balance mode (``BALANCE_UPGRADER``),
    and the items of ``BAND_CATALOG``."""
    return join(
        service(
            database_url, grace_seconds=grace_seconds, wallet_timeout_seconds=wallet_timeout_seconds
        ),
        operator(
            operator_id,
            wallet_url=wallet_url,
            outbound_secret=outbound_secret,
            keys=[key],
            webhook_url=webhook_url,
            upgrader=BALANCE_UPGRADER,
            limits=limits,
        ),
        BAND_CATALOG,
    )

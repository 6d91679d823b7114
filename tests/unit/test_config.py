"""The configuration contract: strict decoding, one line naming the key, env overrides."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest

from application.config.load import load_config, parse_config
from application.config.shape import ConfigError
from tests.support.config import BASE

ROOT = Path(__file__).resolve().parents[2]


def _bad(mutate) -> str:
    raw = copy.deepcopy(BASE)
    mutate(raw)
    with pytest.raises(ConfigError) as caught:
        parse_config(raw, source="cfg.toml", env={})
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_the_demo_config_loads() -> None:
    config = load_config(ROOT / "ops" / "demo" / "config.toml", env={})
    assert [o.id for o in config.operators] == ["demo"]
    assert config.service.database_url == "sqlite:///var/upgrader.db"


def test_unknown_key_names_the_key() -> None:
    message = _bad(lambda raw: raw["operators"][0]["upgrader"].__setitem__("house_edge", 5))
    assert message == "cfg.toml: operators[0].upgrader.house_edge: unknown key"


def test_wrong_type_names_the_key() -> None:
    message = _bad(lambda raw: raw["operators"][0]["upgrader"].__setitem__("house_edge_bps", "5"))
    assert message == ("cfg.toml: operators[0].upgrader.house_edge_bps: expected `int`, got `str`")


def test_duplicate_key_id_names_the_key() -> None:
    def mutate(raw: dict) -> None:
        raw["operators"][1]["keys"].append({"key_id": "key-a", "secret": "x"})

    assert _bad(mutate) == "cfg.toml: operators[1].keys[1].key_id: duplicate key id 'key-a'"


def test_preset_above_10000_names_the_key() -> None:
    def mutate(raw: dict) -> None:
        raw["operators"][0]["upgrader"]["chance_presets_bps"] = [5000, 10001]

    assert _bad(mutate) == (
        "cfg.toml: operators[0].upgrader.chance_presets_bps: preset 10001 is outside 1..10000"
    )


def test_currency_without_rate_names_the_key() -> None:
    message = _bad(lambda raw: raw["operators"][0]["currencies"][1].pop("rate"))
    assert message == (
        "cfg.toml: operators[0].currencies[1].rate: object missing required field `rate`"
    )


def test_catalogue_item_without_name_names_the_key() -> None:
    message = _bad(lambda raw: raw["catalog"]["items"][2].pop("name"))
    assert message == "cfg.toml: catalog.items[2].name: object missing required field `name`"


def test_bad_rate_and_missing_base_currency_are_named() -> None:
    assert _bad(lambda raw: raw["operators"][0]["currencies"][1].__setitem__("rate", "1e3")) == (
        "cfg.toml: operators[0].currencies[1].rate: '1e3' is not a positive decimal string"
    )
    assert _bad(lambda raw: raw["operators"][1].__setitem__("base_currency", "GBP")) == (
        "cfg.toml: operators[1].base_currency: 'GBP' has no entry in currencies"
    )


def test_environment_overrides_the_file() -> None:
    config = parse_config(
        copy.deepcopy(BASE),
        env={
            "UPGRADER_DATABASE_URL": "sqlite:///elsewhere.db",
            "UPGRADER_HOST": "0.0.0.0",
            "UPGRADER_PORT": "9100",
        },
    )
    assert (config.service.database_url, config.service.host, config.service.port) == (
        "sqlite:///elsewhere.db",
        "0.0.0.0",
        9100,
    )
    with pytest.raises(ConfigError, match="UPGRADER_PORT: expected an integer port"):
        parse_config(copy.deepcopy(BASE), env={"UPGRADER_PORT": "http"})


def test_secrets_never_appear_in_reprs() -> None:
    config = parse_config(copy.deepcopy(BASE), env={})
    text = repr(config) + repr(config.operators) + repr(config.operators[0].keys)
    for secret in ("secret-a-1", "secret-a-0", "outbound-a-secret", "secret-b-1"):
        assert secret not in text


def test_a_bad_file_stops_start_up_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    text = (ROOT / "ops" / "demo" / "config.toml").read_text()
    bad.write_text(text.replace("house_edge_bps = 500", "house_edge_bps = 500\nsurprise = 1"))
    result = subprocess.run(
        [sys.executable, "-m", "entrypoints.cli", "serve", "--config", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"upgrader: configuration error: {bad}: operators[0].upgrader.surprise: unknown key"
    ]


def test_the_debit_grace_must_exceed_the_wallet_timeout() -> None:
    message = _bad(lambda raw: raw["service"].__setitem__("uncertain_debit_grace_seconds", 10))
    assert message == (
        "cfg.toml: service.uncertain_debit_grace_seconds: must be greater than "
        "wallet_timeout_seconds"
    )

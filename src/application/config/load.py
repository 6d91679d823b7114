"""Reading the configuration file: TOML decoded strictly into the structs of
``shape.py``, overridden from the environment, then checked (``rules.py``);
anything wrong raises ``ConfigError`` with one line naming the key."""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path

import msgspec

from application.config.rules import first_problem
from application.config.shape import Config, ConfigError

DEFAULT_CONFIG_PATH = Path(__file__).resolve().parents[3] / "ops" / "demo" / "config.toml"
ENV_OVERRIDES = ("UPGRADER_DATABASE_URL", "UPGRADER_HOST", "UPGRADER_PORT")


def load_config(path: str | Path | None = None, env: dict[str, str] | None = None) -> Config:
    """Read, decode, override from the environment and validate; ConfigError on any fault."""
    path = Path(path) if path is not None else DEFAULT_CONFIG_PATH
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the file ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    return parse_config(raw, source=str(path), env=os.environ if env is None else env)


def parse_config(raw: dict, source: str = "config", env: dict | None = None) -> Config:
    _apply_env_overrides(raw, env or {})
    try:
        config = msgspec.convert(raw, Config)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{source}: {_humanise(str(exc))}") from None
    problem = first_problem(config)
    if problem is not None:
        raise ConfigError(f"{source}: {problem}")
    return config


def _apply_env_overrides(raw: dict, env: dict) -> None:
    service = raw.setdefault("service", {})
    if not isinstance(service, dict):
        return
    if env.get("UPGRADER_DATABASE_URL"):
        service["database_url"] = env["UPGRADER_DATABASE_URL"]
    if env.get("UPGRADER_HOST"):
        service["host"] = env["UPGRADER_HOST"]
    if env.get("UPGRADER_PORT"):
        value = env["UPGRADER_PORT"]
        if not value.isdigit():
            raise ConfigError(f"UPGRADER_PORT: expected an integer port, got {value!r}")
        service["port"] = int(value)


def _humanise(message: str) -> str:
    """msgspec says '... - at `$.operators[0].keys[1]`'; lead with the key instead."""
    match = re.search(r"^(.*) - at `\$\.?(.*)`$", message)
    if not match:
        return message
    what, where = match.groups()
    field = re.search(r"field `([^`]+)`", what)
    if field and "missing required" in what:
        where = f"{where}.{field.group(1)}" if where else field.group(1)
    if field and "unknown field" in what:
        where = f"{where}.{field.group(1)}" if where else field.group(1)
        what = "unknown key"
    return f"{where}: {what[0].lower()}{what[1:]}"

"""Cross-field rules of the configuration file; each finding is one line naming the key."""

from __future__ import annotations

import re
from collections.abc import Iterator

from application.config.boxes import box_problems, boxes_settings_problems
from application.config.shape import Config, OperatorConfig, UpgraderConfig
from domain.money import parse_rate

KNOWN_GAMES = frozenset({"upgrader", "boxes"})
_CURRENCY_CODE = re.compile(r"^[A-Z]{3}$")
_ORIGIN = re.compile(r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?$")


def first_problem(config: Config) -> str | None:
    return next(_problems(config), None)


def _problems(config: Config) -> Iterator[str]:
    yield from _service_problems(config)
    seen_operators: set[str] = set()
    seen_keys: set[str] = set()
    for index, operator in enumerate(config.operators):
        where = f"operators[{index}]"
        if not operator.id or operator.id in seen_operators:
            yield f"{where}.id: operator id {operator.id!r} is empty or used twice"
        seen_operators.add(operator.id)
        for key_index, key in enumerate(operator.keys):
            if key.key_id in seen_keys or not key.key_id:
                yield f"{where}.keys[{key_index}].key_id: duplicate key id {key.key_id!r}"
            if not key.secret:
                yield f"{where}.keys[{key_index}].secret: must not be empty"
            seen_keys.add(key.key_id)
        yield from _operator_problems(where, operator)
    yield from _catalog_problems(config)


def _service_problems(config: Config) -> Iterator[str]:
    service = config.service
    if not 0 < service.port < 65536:
        yield f"service.port: {service.port} is not a TCP port"
    url = service.database_url
    if not (url.startswith("sqlite:///") or url.startswith(("postgresql://", "postgres://"))):
        yield "service.database_url: must start with sqlite:/// or postgresql://"
    for name in ("session_idle_seconds", "launch_token_ttl_seconds", "wallet_timeout_seconds"):
        if getattr(service, name) <= 0:
            yield f"service.{name}: must be above 0"
    if not 1024 <= service.max_body_bytes <= 10_485_760:
        yield "service.max_body_bytes: must be within 1024..10485760"
    for name in ("max_plays_in_flight", "overload_store_wait_ms"):
        if getattr(service, name) < 0:
            yield f"service.{name}: must be 0 or above"
    if service.uncertain_debit_grace_seconds <= service.wallet_timeout_seconds:
        # a shorter grace would roll back debits a live request is still waiting on
        yield ("service.uncertain_debit_grace_seconds: must be greater than wallet_timeout_seconds")


def _operator_problems(where: str, operator: OperatorConfig) -> Iterator[str]:
    if not operator.outbound_secret:
        yield f"{where}.outbound_secret: must not be empty"
    for game in operator.enabled_games:
        if game not in KNOWN_GAMES:
            yield f"{where}.enabled_games: unknown game {game!r}"
    if not 0 <= operator.credits_share_bps <= 10000:
        yield f"{where}.credits_share_bps: must be within 0..10000"
    codes: set[str] = set()
    for index, currency in enumerate(operator.currencies):
        at = f"{where}.currencies[{index}]"
        if not _CURRENCY_CODE.match(currency.code) or currency.code in codes:
            yield f"{at}.code: {currency.code!r} is not a 3-letter code or is listed twice"
        codes.add(currency.code)
        try:
            rate = parse_rate(currency.rate)
        except ValueError:
            yield f"{at}.rate: {currency.rate!r} is not a positive decimal string"
            continue
        if currency.code == operator.base_currency and rate != 1:
            yield f"{at}.rate: the base currency's rate must be 1"
        if not 0 <= currency.exponent <= 6:
            yield f"{at}.exponent: must be within 0..6"
    if operator.base_currency not in codes:
        yield f"{where}.base_currency: {operator.base_currency!r} has no entry in currencies"
    yield from _upgrader_problems(f"{where}.upgrader", operator.upgrader)
    yield from boxes_settings_problems(where, operator)
    for name in (
        "requests_per_second_per_key",
        "requests_per_second_per_session",
        "plays_per_second_per_player",
    ):
        if getattr(operator.limits, name) < 0:
            yield f"{where}.limits.{name}: must not be negative (0 switches the limit off)"
    for origin in operator.allowed_frame_origins:
        if origin != "*" and not _ORIGIN.match(origin):
            yield (
                f"{where}.allowed_frame_origins: {origin!r} is not '*' or an origin "
                "like https://casino.example"
            )


def _upgrader_problems(where: str, upgrader: UpgraderConfig) -> Iterator[str]:
    if not 0 <= upgrader.house_edge_bps < 10000:
        yield f"{where}.house_edge_bps: must be within 0..9999"
    for preset in upgrader.chance_presets_bps:
        if not 1 <= preset <= 10000:
            yield f"{where}.chance_presets_bps: preset {preset} is outside 1..10000"
    for name in ("default_chance_bps", "max_chance_bps"):
        if not 1 <= getattr(upgrader, name) <= 10000:
            yield f"{where}.{name}: must be within 1..10000"
    if upgrader.min_wager_minor < 1 or upgrader.max_wager_minor < upgrader.min_wager_minor:
        yield f"{where}.max_wager_minor: need 1 <= min_wager_minor <= max_wager_minor"
    if not 1 <= upgrader.prize_list_limit <= 100:
        yield f"{where}.prize_list_limit: must be within 1..100"
    if not 0 <= upgrader.nuggets_cost_percent <= 99:
        yield f"{where}.nuggets_cost_percent: must be within 0..99"


def _catalog_problems(config: Config) -> Iterator[str]:
    item_ids: set[int] = set()
    for index, item in enumerate(config.catalog.items):
        at = f"catalog.items[{index}]"
        if item.item_id in item_ids:
            yield f"{at}.item_id: {item.item_id} is listed twice"
        item_ids.add(item.item_id)
        if not item.name or not all(item.name.values()):
            yield f"{at}.name: an item needs a non-empty name"
        if item.value_minor < 0:
            yield f"{at}.value_minor: must not be negative"
        if item.cashback_bps is not None and not 0 <= item.cashback_bps <= 10000:
            yield f"{at}.cashback_bps: must be within 0..10000"
    yield from box_problems(config)

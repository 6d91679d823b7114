"""Record the loaded configuration as events: only the differences, in one transaction."""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec
from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import IntegrityError

from application.config.box_records import box_catalog_changes
from application.config.shape import CatalogItemConfig, Config, OperatorConfig
from domain.config_history import CatalogItemRecord, OperatorProfile


def secret_fingerprint(secret: str) -> str:
    """A short, one-way fingerprint so the log shows *that* a secret changed, never the secret."""
    return hashlib.sha256(f"upgrader-secret-fingerprint:v1:{secret}".encode()).hexdigest()[:16]


def operator_settings(operator: OperatorConfig) -> dict[str, Any]:
    """The recorded settings; ``boxes`` only when the game is enabled, so that settings
    recorded before the box game existed still compare equal."""
    settings = {
        "base_currency": operator.base_currency,
        "wallet_url": operator.wallet_url,
        "webhook_url": operator.webhook_url,
        "outbound_secret_fingerprint": secret_fingerprint(operator.outbound_secret),
        "enabled_games": list(operator.enabled_games),
        "credits_share_bps": operator.credits_share_bps,
        "upgrader": msgspec.to_builtins(operator.upgrader),
    }
    if "boxes" in operator.enabled_games:
        settings["boxes"] = msgspec.to_builtins(operator.boxes)
    return settings


def record_config(app: Application, config: Config, attempts: int = 5) -> int:
    """Append the events that bring the recorded state to ``config``; returns how many.

    Several processes starting at once may race: the loser's save conflicts, and it
    recomputes the difference against what the winner recorded. A changed or dropped
    box version raises ConfigError before anything is appended.
    """
    for attempt in range(attempts):
        changed = [
            *_operator_changes(app, config),
            *_catalog_changes(app, config),
            *box_catalog_changes(app, config),
        ]
        pending = sum(len(a.pending_events) for a in changed)
        if not changed:
            return 0
        try:
            app.save(*changed)
        except IntegrityError:
            if attempt == attempts - 1:
                raise
            continue
        return pending
    return 0


def _get(app: Application, aggregate_id: Any) -> Any:
    try:
        return app.repository.get(aggregate_id)
    except AggregateNotFoundError:
        return None


def _operator_changes(app: Application, config: Config) -> list[OperatorProfile]:
    changed = []
    for operator in config.operators:
        profile = _get(app, OperatorProfile.create_id(operator.id))
        if profile is None:
            profile = OperatorProfile(operator.id)
        settings = operator_settings(operator)
        if profile.settings != settings:
            profile.change_settings(settings)
        _sync_keys(profile, operator)
        _sync_rates(profile, operator)
        if profile.pending_events:
            changed.append(profile)
    return changed


def _sync_keys(profile: OperatorProfile, operator: OperatorConfig) -> None:
    wanted = {key.key_id: key for key in operator.keys}
    for key_id, key in wanted.items():
        recorded = profile.keys.get(key_id)
        fingerprint = secret_fingerprint(key.secret)
        if key.revoked:
            if recorded is not None and not recorded["revoked"]:
                profile.revoke_key(key_id)
            continue
        if recorded is None or recorded != {
            "catalog_access": key.catalog_access,
            "secret_fingerprint": fingerprint,
            "revoked": False,
        }:
            profile.add_key(key_id, key.catalog_access, fingerprint)
    for key_id, recorded in list(profile.keys.items()):
        if key_id not in wanted and not recorded["revoked"]:
            profile.revoke_key(key_id)


def _sync_rates(profile: OperatorProfile, operator: OperatorConfig) -> None:
    wanted = {c.code: c for c in operator.currencies}
    for code, currency in wanted.items():
        entry = {"rate": currency.rate, "exponent": currency.exponent}
        if profile.rates.get(code) != entry:
            profile.set_rate(code, currency.rate, currency.exponent)
    for code in list(profile.rates):
        if code not in wanted:
            profile.remove_currency(code)


def catalog_item_record(item: CatalogItemConfig) -> dict[str, Any]:
    return msgspec.to_builtins(item)


def _catalog_changes(app: Application, config: Config) -> list[CatalogItemRecord]:
    changed = []
    for item in config.catalog.items:
        wanted = catalog_item_record(item)
        record = _get(app, CatalogItemRecord.create_id(item.item_id))
        if record is None:
            record = CatalogItemRecord(item.item_id, wanted)
        elif record.item != wanted:
            if {**record.item, "value_minor": item.value_minor} == wanted:
                record.reprice(item.value_minor)
            else:
                record.change(wanted)
        if record.pending_events:
            changed.append(record)
    return changed


def recorded_versions(app: Application, config: Config) -> tuple[dict[str, int], dict[int, int]]:
    """The aggregate versions of each operator profile and catalogue item, as recorded.

    A round records these so an auditor can tell which settings and prices it saw.
    """
    operators = {}
    for operator in config.operators:
        profile = _get(app, OperatorProfile.create_id(operator.id))
        operators[operator.id] = profile.version if profile is not None else 0
    items = {}
    for item in config.catalog.items:
        record = _get(app, CatalogItemRecord.create_id(item.item_id))
        items[item.item_id] = record.version if record is not None else 0
    return operators, items

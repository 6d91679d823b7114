"""The auditor's checks of a box round's opening (decisions §10), against the box
catalogue as recorded (``BoxCatalogRecord`` events, replayed in log order) and the
settings recorded before it; ``boxes.py`` says what is checked and adds the draws.
"""

from __future__ import annotations

from typing import Any

from application.audit.config import pinned_currencies
from application.audit.replay import Replay, _Round
from domain.box_history import BoxCatalogRecord
from domain.boxes import BoxEntry, odds_hash

GAME = "boxes"
DEFAULT_MAX_BOXES = 10


class BoxOpeningChecks(Replay):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # (box_id, box_version_id) -> price_minor, items, odds_hash, active
        self.box_versions: dict[tuple[int, int], dict[str, Any]] = {}
        self.box_offered: dict[int, int | None] = {}

    def _box_handlers(self) -> dict[type, Any]:
        return {
            BoxCatalogRecord.VersionRecorded: self._box_version_recorded,
            BoxCatalogRecord.VersionActiveChanged: self._box_active_changed,
        }

    # -- the recorded catalogue --------------------------------------------------------------

    def _box_version_recorded(self, event: Any, position: int) -> None:
        key = (event.box_id, event.box_version_id)
        items = [(item_id, weight) for item_id, weight in event.items]
        if key in self.box_versions:
            self._event("box", position, f"box {key[0]} version {key[1]} was recorded twice")
        self.box_versions[key] = {
            "price_minor": event.price_minor,
            "items": items,
            "odds_hash": event.odds_hash,
            "active": event.active,
        }
        entries = [BoxEntry(item_id, weight) for item_id, weight in items]
        if odds_hash(key[0], key[1], event.price_minor, entries) != event.odds_hash:
            self._event(
                "box",
                position,
                f"the recorded oddsHash of box {key[0]} version {key[1]} is not the hash of "
                "its recorded price and table",
            )
        self._box_offer(key[0])

    def _box_active_changed(self, event: Any, position: int) -> None:
        key = (event.box_id, event.box_version_id)
        version = self.box_versions.get(key)
        if version is None:
            self._event("box", position, f"box {key[0]} version {key[1]} was never recorded")
            return
        version["active"] = event.active
        self._box_offer(key[0])

    def _box_offer(self, box_id: int) -> None:
        versions = self.box_versions.items()
        active = [v for (b, v), entry in versions if b == box_id and entry["active"]]
        self.box_offered[box_id] = max(active) if active else None

    # -- the opening -------------------------------------------------------------------------

    def _check_box_opening(self, r: _Round) -> None:
        o = r.opening
        profile, problem = self.history.profile(o["operator_id"], o.get("config_version"))
        if problem:
            self._round(r, "config", f"operator settings: {problem}")
        if profile is not None:
            settings = profile.settings
            if GAME not in settings.get("enabled_games", []):
                self._round(r, "config", "the box game was not enabled for the operator")
            most = (settings.get("boxes") or {}).get("max_boxes_per_round", DEFAULT_MAX_BOXES)
            if not 1 <= o["count"] <= most:
                self._round(r, "box", f"{o['count']} boxes opened, the limit was 1..{most}")
            if o["credits_share_bps"] != settings.get("credits_share_bps", 10000):
                self._round(r, "config", "the recorded credits share differs from the settings")
        if o["mode"] != "balance":
            self._round(r, "config", f"a box round in mode {o['mode']!r}, not balance")
        if profile is None:
            return
        base, currency, problems = pinned_currencies(o, profile)
        for kind, message in problems:
            self._round(r, kind, message)
        self._check_box_version(r)
        if base is None or currency is None:
            return
        reprice = profile.reprice
        price = reprice(o["price_base_minor"], base, currency)
        if o["price_minor"] != price:
            self._round(
                r,
                "price",
                f"a box priced {o['price_minor']} {currency.code}, the base price "
                f"{o['price_base_minor']} {base.code} reprices to {price}",
            )
        if o["wager_minor"] != o["count"] * o["price_minor"]:
            self._round(
                r,
                "bet",
                f"bet {o['wager_minor']} {currency.code} for {o['count']} boxes at "
                f"{o['price_minor']}: {o['count'] * o['price_minor']} was due",
            )
        for index, entry in enumerate(o["entries"]):
            value = reprice(entry["value_base_minor"], base, currency)
            self._check_box_item(r, index, entry, value)

    def _check_box_version(self, r: _Round) -> None:
        o = r.opening
        box_id, version_id = o["box_id"], o["box_version_id"]
        which = f"box {box_id} version {version_id}"
        recorded = self.box_versions.get((box_id, version_id))
        if recorded is None:
            self._round(r, "box", f"{which} was not in the recorded catalogue")
            return
        if self.box_offered.get(box_id) != version_id:
            self._round(
                r,
                "box",
                f"{which} was not the box's offered version (active, highest id): "
                f"{self.box_offered.get(box_id)}",
            )
        if o["odds_hash"] != recorded["odds_hash"]:
            self._round(
                r,
                "box",
                f"oddsHash {o['odds_hash']} pinned, the recorded catalogue's for {which} is "
                f"{recorded['odds_hash']}",
            )
        total = sum(weight for _, weight in recorded["items"])
        if o["total_tickets"] != total:
            self._round(
                r,
                "box",
                f"totalTickets {o['total_tickets']} pinned, the recorded table of {which} has "
                f"{total}",
            )
        pinned = [(entry["item_id"], entry["weight"]) for entry in o["entries"]]
        if pinned != recorded["items"]:
            self._round(
                r, "box", f"the pinned table (item, weight) is not the recorded table of {which}"
            )
        if o["price_base_minor"] != recorded["price_minor"]:
            self._round(
                r,
                "price",
                f"base price {o['price_base_minor']} pinned, {which} was recorded at "
                f"{recorded['price_minor']}",
            )

    def _check_box_item(self, r: _Round, index: int, entry: dict[str, Any], value: int) -> None:
        item_id = entry["item_id"]
        where = f"entry {index + 1} (item {item_id})"
        states = self.history.item_snapshots(item_id)
        if not states:
            self._round(r, "box", f"{where}: catalogue item {item_id} was never recorded")
            return
        if not (states[0].get("active", True) and states[0].get("fulfillable", True)):
            self._round(r, "box", f"{where} was not active and fulfillable")
        terms = (entry["value_base_minor"], entry["cashback_bps"], entry["collectible"])
        if not any(
            terms == (item["value_minor"], item.get("cashback_bps"), item.get("collectible", False))
            for item in states
        ):
            item = states[0]
            self._round(
                r,
                "price",
                f"{where} pinned at {entry['value_base_minor']} (cash-back "
                f"{entry['cashback_bps']} bps), the catalogue said {item['value_minor']} "
                f"(cash-back {item.get('cashback_bps')} bps)",
            )
        if entry["value_minor"] != value:
            self._round(
                r,
                "price",
                f"{where} pinned at {entry['value_minor']} {r.opening['currency']}, its base "
                f"value reprices to {value}",
            )

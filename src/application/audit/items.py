"""The auditor's checks of inventory items: granted by a settled win, then consumed,
cashed back or shipped at most once, and never moved while resolved."""

from __future__ import annotations

from typing import Any

from application.audit.boxes import BoxChecks
from application.audit.replay import RESOLVED, _Item
from domain.ids import inventory_item_id


class ItemChecks(BoxChecks):
    # -- items ----------------------------------------------------------------------------------

    def _known_item(self, event: Any, position: int) -> _Item | None:
        item = self.item_of.get(event.originator_id)
        if item is None:
            self._event(
                "item_state",
                position,
                f"event {position} ({type(event).__name__}) moves an item never granted",
            )
        return item

    def _granted(self, event: Any, position: int) -> None:
        grant = event.grant
        number = grant["inventory_item_id"]
        in_scope = self.scope.covers(
            grant["operator_id"], grant["player_external_id"], grant.get("granted_at")
        )
        item = _Item(number, grant, in_scope)
        if number in self.items:
            self._item(item, "item_reused", f"item {number} was granted twice")
            return
        self.items[number] = item
        self.item_of[event.originator_id] = item
        if in_scope:
            self.report.items_checked += 1
        if inventory_item_id(number) != event.originator_id:
            self._item(item, "grant", "the item's id does not name its aggregate")
        r = self.by_public.get(grant.get("round_public_id", ""))
        if r is not None and r.box is not None:
            self._box_granted(item, r, grant)
            return
        if r is None or r.settlement is None or not r.settlement.get("is_win"):
            self._item(
                item, "grant", f"granted by {grant.get('round_public_id')}, not a settled win"
            )
            return
        r.grants += 1
        o = r.opening
        if r.grants > 1:
            self._round(r, "grant", "the round granted more than one item")
        if (
            grant["item_id"],
            grant["value_minor"],
            grant["grant_value_base_minor"],
            grant["currency"],
        ) != (
            o["target"]["item_id"],
            o["target"]["value_minor"],
            o["target_value_base_minor"],
            o["currency"],
        ):
            self._item(item, "grant", f"the grant differs from round {r.public_id}'s target")

    def _resolve(self, item: _Item, state: str, what: str) -> None:
        if item.state in RESOLVED:
            self._item(
                item, "item_reused", f"item {item.number} {what} after it was {item.resolution}"
            )
            return
        if item.held_by is not None and state != "cashed_back":
            self._item(
                item, "item_state", f"item {item.number} {what} while held by {item.held_by}"
            )
        item.state = state
        item.resolution = what

    def _consumed(self, event: Any, position: int) -> None:
        item = self._known_item(event, position)
        if item is None:
            return
        self._resolve(item, "consumed", f"consumed by {event.round_public_id}")
        r = self.by_public.get(event.round_public_id)
        if r is None or item.number not in r.stake_ids:
            self._item(
                item, "stake", f"consumed by {event.round_public_id}, which did not stake it"
            )
            return
        r.consumed.add(item.number)

    def _held(self, event: Any, position: int) -> None:
        item = self._known_item(event, position)
        if item is None:
            return
        if item.state in RESOLVED:
            self._item(item, "item_reused", f"held for a cash-back after it was {item.resolution}")
        elif item.held_by is not None:
            self._item(item, "item_state", f"held twice ({item.held_by})")
        item.held_by = event.cashout_public_id

    def _released(self, event: Any, position: int) -> None:
        item = self._known_item(event, position)
        if item is None:
            return
        if item.held_by != event.cashout_public_id:
            self._item(item, "item_state", "released by a cash-back that did not hold it")
        item.held_by = None

    def _cashed_back(self, event: Any, position: int) -> None:
        item = self._known_item(event, position)
        if item is None:
            return
        if item.state == "unresolved" and item.held_by != event.cashout_public_id:
            self._item(item, "item_state", "cashed back without being held by that cash-back")
        self._resolve(item, "cashed_back", f"cashed back by {event.cashout_public_id}")
        item.held_by = None

    def _shipping_requested(self, event: Any, position: int) -> None:
        item = self._known_item(event, position)
        if item is None:
            return
        self._resolve(
            item, "shipping_requested", f"shipping requested ({event.shipment_public_id})"
        )

    def _shipped(self, event: Any, position: int) -> None:
        item = self._known_item(event, position)
        if item is None:
            return
        if item.state == "shipped":
            self._item(item, "item_reused", f"item {item.number} shipped twice")
        elif item.state != "shipping_requested":
            self._item(item, "item_state", f"shipped while {item.state}")
        item.state = "shipped"
        item.resolution = "shipped"

    def _cashout_requested(self, event: Any, position: int) -> None:
        request = event.request
        if self.scope.covers(request["operator_id"], request["player_external_id"], None):
            self.report.cashouts_checked += 1

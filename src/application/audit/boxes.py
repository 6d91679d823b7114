"""The auditor's checks of box rounds (decisions §10).

A box round is a balance-mode round whose opening has ``game == "boxes"``
(``domain/box_round.py``); its money saga (debit attempts, rollbacks, the one accepted
debit before the settle) is checked by ``money.py`` as any round's. Here:

* the box catalogue as recorded (``BoxCatalogRecord`` events, replayed in log order): a
  recorded ``oddsHash`` must be the hash of its recorded price and table;
* the opening, against the catalogue and settings recorded before it: the game enabled,
  balance mode, the pinned rate, ``count`` within ``max_boxes_per_round``; the version
  recorded, active and the box's offered one; ``oddsHash``, ``totalTickets`` and every
  pinned entry's (``item_id``, ``weight``) those of the recorded table; the base price the
  recorded one, the price per box repriced from it and the bet ``count x price``; each
  pinned item active and fulfillable, its value, cash-back terms and repriced value as a
  recorded state of the catalogue item said (any state recorded by then: a process may
  still run the previous file while a restart records the next);
* the settle: one reel per box, nonces consecutive from the first, each ticket within
  ``0..totalTickets-1`` and naming the entry (and item) whose range holds it, each reel's
  item number ``inventory_item_number(round, salt=k)``, the won items those entries,
  ``payoutMinor`` = the sum of their values;
* fairness: one ``NonceUsed`` per box, each one of the reels' nonces (with the seed pair
  the settle names); once the pair's seed is revealed every ticket is drawn again from it;
* grants: one ``ItemGranted`` per reel, with the reel's item, value and currency.

Finding kinds beyond the Upgrader's: ``box`` (the catalogue, the version, the commitment)
and ``ticket`` (a drawn ticket, or the entry a ticket names).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from application.audit.box_opening import GAME, BoxOpeningChecks
from application.audit.replay import _Item, _Pair, _Round
from domain.fairness import ALGORITHM_KEY, draw
from domain.ids import inventory_item_number

__all__ = ["GAME", "BoxChecks", "BoxState", "box_state"]


@dataclass(slots=True)
class BoxState:
    """What the audit keeps of a box round: its size, and from its settle one tuple per
    reel ``(nonce, ticket, inventory_item_id, item_id, value_minor, value_base_minor)``,
    the item being the one whose range holds the recorded ticket."""

    count: int
    total: int
    currency: str
    reels: list[tuple[int, int, int, int | None, int | None, int | None]] = field(
        default_factory=list
    )
    reel_of_item: dict[int, int] = field(default_factory=dict)
    verified: int = 0
    committed: int = 0
    claims_checked: bool = False


def box_state(opening: dict[str, Any]) -> BoxState:
    return BoxState(opening["count"], opening["total_tickets"], opening["currency"])


class BoxChecks(BoxOpeningChecks):
    # -- the settle ----------------------------------------------------------------------------

    def _box_settled(self, r: _Round, o: dict[str, Any], s: dict[str, Any]) -> None:
        """Keep the reels (for nonces and grants), then check the settle when in scope."""
        box: BoxState = r.box
        entries = o["entries"]
        ends = list(accumulate(entry["weight"] for entry in entries))
        held = []
        for k, reel in enumerate(s["reels"]):
            ticket = reel["ticket"]
            index = bisect_right(ends, ticket) if type(ticket) is int and ticket >= 0 else None
            if index is not None and index >= len(entries):
                index = None
            entry = None if index is None else entries[index]
            held.append(index)
            box.reel_of_item[reel["inventory_item_id"]] = k
            box.reels.append(
                (
                    reel["nonce"],
                    ticket,
                    reel["inventory_item_id"],
                    None if entry is None else entry["item_id"],
                    None if entry is None else entry["value_minor"],
                    None if entry is None else entry["value_base_minor"],
                )
            )
        if r.in_scope:
            self._check_box_settle(r, o, s, held)

    def _check_box_settle(
        self, r: _Round, o: dict[str, Any], s: dict[str, Any], held: list[int | None]
    ) -> None:
        """``held``: per reel, the index of the entry whose range holds its ticket."""
        box: BoxState = r.box
        if s["algorithm_key"] != ALGORITHM_KEY:
            self._round(r, "fairness", f"algorithm {s['algorithm_key']!r} is not {ALGORITHM_KEY}")
        reels, won = s["reels"], s["won_items"]
        if len(reels) != box.count:
            self._round(r, "ticket", f"{len(reels)} reels for {box.count} boxes")
        if len(won) != len(reels):
            self._round(r, "payout", f"{len(won)} won items for {len(reels)} reels")
        for k, reel in enumerate(reels):
            name = f"reel {k + 1}"
            if reel["nonce"] != s["nonce"] + k:
                self._round(
                    r, "nonce", f"{name} has nonce {reel['nonce']}, {s['nonce'] + k} was next"
                )
            index = held[k]
            if index is None:
                self._round(
                    r, "ticket", f"{name}: ticket {reel['ticket']!r} is not in 0..{box.total - 1}"
                )
                continue
            entry = o["entries"][index]
            if (reel["entry_index"], reel["item_id"]) != (index, entry["item_id"]):
                self._round(
                    r,
                    "ticket",
                    f"{name}: ticket {reel['ticket']} is item {entry['item_id']}'s (entry "
                    f"{index + 1}), the reel names item {reel['item_id']} (entry "
                    f"{reel['entry_index'] + 1})",
                )
            if reel["inventory_item_id"] != inventory_item_number(r.uuid, salt=k):
                self._round(r, "grant", f"{name}'s inventory item is not the round's item {k}")
            if k < len(won):
                item = won[k]
                got = (item["inventory_item_id"], item["item_id"], item["value_minor"])
                if got != (reel["inventory_item_id"], entry["item_id"], entry["value_minor"]) or (
                    item["currency"] != o["currency"]
                ):
                    self._round(
                        r,
                        "payout",
                        f"won item {k + 1} is item {item['item_id']} worth "
                        f"{item['value_minor']} {item['currency']}, {name} drew item "
                        f"{entry['item_id']} worth {entry['value_minor']} {o['currency']}",
                    )
        due = sum(o["entries"][index]["value_minor"] for index in held if index is not None)
        if s["payout_minor"] != due or s["payout_minor"] != sum(w["value_minor"] for w in won):
            self._round(
                r,
                "payout",
                f"payout {s['payout_minor']} recorded, the items drawn are worth {due}",
            )

    # -- fairness ------------------------------------------------------------------------------

    def _box_pair_round(
        self, pair: _Pair, r: _Round, nonce: int, seed: str | None, revealed: bool
    ) -> None:
        """One nonce of a box round (one reel), verified when the seed is revealed."""
        box: BoxState = r.box
        r.nonce_uses += 1  # their number is checked at the end (``_finish_box``)
        s = r.settlement
        if s is None:
            self._round(r, "nonce", f"nonce {nonce} used by a round that did not settle")
            return
        if not r.in_scope:
            return
        if not box.claims_checked:
            box.claims_checked = True
            if (s["server_seed_hash"], s["client_seed"]) != (
                pair.server_seed_hash,
                pair.client_seed,
            ):
                self._round(
                    r,
                    "fairness",
                    f"settled with seed hash {s['server_seed_hash'][:16]}... and client seed "
                    f"{s['client_seed']!r}, but the seed pair recorded "
                    f"{pair.server_seed_hash[:16]}... and {pair.client_seed!r}",
                )
        k = nonce - s["nonce"] if type(s["nonce"]) is int else -1
        if not 0 <= k < len(box.reels) or box.reels[k][0] != nonce:
            self._round(r, "nonce", f"nonce {nonce} is not one of the round's reels")
            return
        if not revealed:
            box.committed += 1
            if box.committed == box.count:
                self.report.fairness_committed += 1
            return
        if seed is None:
            return  # the reveal failed: reported on the rotation event
        ticket = box.reels[k][1]
        recomputed = draw(seed, pair.client_seed, nonce, box.total)
        if recomputed != ticket:
            self._round(
                r,
                "ticket",
                f"reel {k + 1} (nonce {nonce}): ticket {ticket} recorded, the revealed server "
                f"seed gives {recomputed}",
            )
            return
        box.verified += 1
        self.report.reels_verified += 1
        if box.verified == box.count:
            self.report.fairness_verified += 1

    # -- grants and the end ----------------------------------------------------------------------

    def _box_granted(self, item: _Item, r: _Round, grant: dict[str, Any]) -> None:
        box: BoxState = r.box
        if r.settlement is None:
            self._item(item, "grant", f"granted by {r.public_id}, not a settled round")
            return
        r.grants += 1
        k = box.reel_of_item.get(item.number)
        if k is None:
            self._item(item, "grant", f"item {item.number} is none of round {r.public_id}'s reels")
            return
        _, _, _, item_id, value, value_base = box.reels[k]
        if (
            grant["item_id"],
            grant["value_minor"],
            grant["grant_value_base_minor"],
            grant["currency"],
        ) != (item_id, value, value_base, box.currency):
            self._item(
                item,
                "grant",
                f"the grant (item {grant['item_id']} worth {grant['value_minor']} "
                f"{grant['currency']}) differs from reel {k + 1} of round {r.public_id} "
                f"(item {item_id} worth {value} {box.currency})",
            )

    def _finish_box(self, r: _Round) -> None:
        box: BoxState = r.box
        if r.nonce_uses != box.count:
            self._round(
                r,
                "nonce",
                f"{box.count} box{'es' if box.count != 1 else ''} opened, "
                f"{r.nonce_uses} NonceUsed events record the round's nonces",
            )
        if r.grants != box.count:
            opened = f"{box.count} box{'es' if box.count != 1 else ''} opened"
            granted = f"{r.grants} item{'s' if r.grants != 1 else ''} granted"
            self._round(r, "grant", f"{opened}, {granted}")

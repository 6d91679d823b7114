"""The auditor: replay the whole event log in notification order and re-check the rules.

For every round (decisions §2-§6):

* the configuration it was opened under, rebuilt from the recorded ``OperatorProfile`` /
  ``CatalogItemRecord`` events (the version the round pinned, which must be recorded
  before it): game and mode enabled, currency and pinned rate, fee, no-loss and Nuggets
  cost, chance among the offered presets, bet within the limits, the band recomputed
  from bet, fee, chance and Nuggets cost, the target eligible, priced as the catalogue
  said and repriced into the band; in items mode the stake's items owned, unresolved and
  counted as decisions §5 says;
* the money saga: every balance-mode settle follows an accepted debit (``WagerDebited``)
  of the bet; every uncertain debit has an acknowledged rollback (``WagerRolledBack``),
  or is still being retried (listed as open, not a violation) or escalated (listed);
* the outcome: ``isWin = rolled < chance``, payout (the target's value on a win, else
  0), Nuggets (the bet on a lost no-loss round, else 0), the won item granted;
* provable fairness: per seed pair the nonces are 0, 1, 2, ... (``NonceUsed``) and each
  matches one settled round; the revealed server seed (``SeedRotated``) hashes to the
  committed hash and recomputes every roll of its pair. Rounds of a pair not yet revealed
  are counted as committed, not verified;
* items: no item consumed, cashed back, shipped or cancelled twice (or moved while
  resolved);
* cancels (``cancels.py``): a held round was a settled balance-mode round, its items all
  cancelled with it, its bet credited back at most once, and cancelled only then;
* the log itself: aggregate versions contiguous, and the hash chain (``event_chain``)
  recomputed, naming the first changed, deleted or inserted event.

The checks are split by concern: the opening here, the money saga and outcome in
``money.py``, fairness in ``fairness.py``, items in ``items.py``, the replay loop and its
state in ``replay.py``, the hash chain in ``chain.py``, the recorded configuration in
``config.py``, the events read in ``decode.py`` and the findings in ``report.py``.

Read-only: nothing is written. ``upgrader audit`` (``entrypoints/cli_audit.py``) is the command.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from eventsourcing.application import Application

from application.audit.boxes import GAME as BOX_GAME
from application.audit.boxes import box_state
from application.audit.cancels import CancelChecks
from application.audit.config import ProfileSnapshot, catalog_item, pinned_currencies
from application.audit.fairness import FairnessChecks
from application.audit.items import ItemChecks
from application.audit.money import MoneyChecks
from application.audit.replay import _Round
from application.audit.report import AuditReport, AuditScope
from domain.cashout import Cashout
from domain.catalog import CatalogItem, is_eligible
from domain.ids import round_public_id
from domain.inventory import InventoryItem
from domain.money import Currency, reprice_fraction
from domain.player_fairness import PlayerFairness
from domain.round import Round
from domain.stake_counting import count_item
from domain.upgrader_checks import chance_refusal, game_refusal, mode_refusal, wager_refusal
from domain.upgrader_rules import target_band


class Auditor(MoneyChecks, FairnessChecks, ItemChecks, CancelChecks):
    def _event_handlers(self) -> dict[type, Callable[[Any, int], None]]:
        return {
            Round.Opened: self._opened,
            Round.DebitAttempted: self._debit_attempted,
            Round.DebitUncertain: self._debit_uncertain,
            Round.WagerRolledBack: self._rolled_back,
            Round.RollbackEscalated: self._escalated,
            Round.WagerDebited: self._debited,
            Round.RoundVoided: self._voided,
            Round.RoundSettled: self._settled,
            Round.RoundHeld: self._round_held,
            Round.CancelCreditAttempted: self._cancel_attempted,
            Round.CancelCreditUncertain: self._cancel_uncertain,
            Round.CancelCreditRefused: self._cancel_refused,
            Round.RoundCancelled: self._round_cancelled,
            InventoryItem.ItemCancelled: self._item_cancelled,
            PlayerFairness.SeedPairStarted: self._pair_started,
            PlayerFairness.NonceUsed: self._nonce_used,
            PlayerFairness.SeedRotated: self._seed_rotated,
            InventoryItem.ItemGranted: self._granted,
            InventoryItem.ItemConsumed: self._consumed,
            InventoryItem.ItemHeldForCashout: self._held,
            InventoryItem.ItemReleased: self._released,
            InventoryItem.ItemCashedBack: self._cashed_back,
            InventoryItem.ItemShippingRequested: self._shipping_requested,
            InventoryItem.ItemShipped: self._shipped,
            Cashout.CashoutRequested: self._cashout_requested,
            **self._box_handlers(),
        }

    # -- rounds: opening ----------------------------------------------------------------------

    def _opened(self, event: Any, position: int) -> None:
        opening = event.opening
        at = opening.get("opened_at")
        in_scope = self.scope.covers(opening["operator_id"], opening["player_external_id"], at)
        r = _Round(event.originator_id, opening, position, in_scope)
        if event.originator_id in self.rounds:
            self._round(r, "round_state", "the round was opened twice")
            return
        self.rounds[event.originator_id] = r
        self.by_public[r.public_id] = r
        for entry in (opening.get("stake") or {}).get("items") or []:
            r.stake_ids.add(entry["inventoryItemId"])
        if "game" in opening and opening["game"] == BOX_GAME:
            r.box = box_state(opening)
        if not in_scope:
            return
        self.report.rounds_checked += 1
        if r.public_id != round_public_id(event.originator_id):
            self._round(r, "round_state", "the round's public id does not name its aggregate")
        if r.box is None:
            self._check_opening(r)
        else:
            self.report.box_rounds_checked += 1
            self._check_box_opening(r)

    def _check_opening(self, r: _Round) -> None:
        o = r.opening
        profile, problem = self.history.profile(o["operator_id"], o.get("config_version"))
        if problem:
            self._round(r, "config", f"operator settings: {problem}")
        if profile is None:
            return
        settings = profile.settings
        try:
            ups = profile.upgrader()
        except (KeyError, TypeError, ValueError) as exc:
            self._round(r, "config", f"the recorded Upgrader settings are unusable: {exc}")
            return
        if game_refusal(settings.get("enabled_games", [])):
            self._round(r, "config", "the Upgrader was not enabled for the operator")
        if mode_refusal(ups, o["mode"]):
            self._round(r, "config", f"mode {o['mode']!r} was not enabled for the operator")
        base, currency = self._currencies(r, profile)
        if base is None or currency is None:
            return
        if o["fee_bps"] != ups.house_edge_bps:
            self._round(
                r,
                "fee",
                f"fee {o['fee_bps']} bps recorded, the settings said {ups.house_edge_bps} bps",
            )
        if bool(o["no_loss"]) != ups.no_loss or o["nuggets_cost_percent"] != ups.nuggets_cost:
            self._round(
                r,
                "nuggets",
                f"no-loss {o['no_loss']} with Nuggets cost {o['nuggets_cost_percent']}% "
                f"recorded, the settings said {ups.no_loss} with {ups.nuggets_cost}%",
            )
        if o.get("credits_share_bps", settings.get("credits_share_bps")) != settings.get(
            "credits_share_bps", 10000
        ):
            self._round(r, "config", "the recorded credits share differs from the settings")
        selector = profile.selector(base, currency)
        chance, wager = o["chance_bps"], o["wager_minor"]
        if chance_refusal(selector, chance):
            self._round(
                r,
                "chance",
                f"chance {chance} bps was not an offered preset "
                f"{list(selector.chance_presets_bps)}",
            )
        if wager_refusal(selector, wager):
            self._round(
                r,
                "bet",
                f"bet {wager} {currency.code} is outside the limits "
                f"{selector.min_wager_minor}..{selector.max_wager_minor}",
            )
        try:
            band = target_band(
                wager, ups.house_edge_bps, chance, ups.nuggets_cost_percent, ups.no_loss
            )
        except ValueError as exc:
            self._round(r, "band", f"no band can be computed: {exc}")
            return
        recorded = o.get("band") or {}
        if (recorded.get("lower_minor"), recorded.get("upper_minor")) != (
            band.lower_minor,
            band.upper_minor,
        ):
            self._round(
                r,
                "band",
                f"recorded band {recorded.get('lower_minor')}..{recorded.get('upper_minor')} is "
                f"not the band {band.lower_minor}..{band.upper_minor} of bet {wager} at chance "
                f"{chance} bps, fee {ups.house_edge_bps} bps, Nuggets cost {ups.nuggets_cost}%",
            )
        self._check_target(r, profile, base, currency, band)
        if o["mode"] == "items":
            self._check_stake(r, settings, base, currency)

    def _currencies(
        self, r: _Round, profile: ProfileSnapshot
    ) -> tuple[Currency | None, Currency | None]:
        base, currency, problems = pinned_currencies(r.opening, profile)
        for kind, message in problems:
            self._round(r, kind, message)
        return base, currency

    def _check_target(
        self, r: _Round, profile: ProfileSnapshot, base: Currency, currency: Currency, band: Any
    ) -> None:
        o = r.opening
        target = o["target"]
        item, problem = self.history.item(target["item_id"], o.get("catalog_version"))
        if problem:
            self._round(r, "target", f"target item {target['item_id']}: {problem}")
        if item is None:
            return
        listed = self._catalog_item(item)
        if not is_eligible(listed):
            self._round(r, "target", f"target item {listed.item_id} was not active and fulfillable")
        value = profile.reprice(listed.value_minor, base, currency)
        if o["target_value_base_minor"] != listed.value_minor or target["value_minor"] != value:
            self._round(
                r,
                "price",
                f"target item {listed.item_id} recorded at {target['value_minor']} "
                f"{currency.code} ({o['target_value_base_minor']} {base.code}), the catalogue "
                f"said {value} {currency.code} ({listed.value_minor} {base.code})",
            )
        if not band.contains(value) or not band.contains(target["value_minor"]):
            self._round(
                r,
                "target_out_of_band",
                f"target item {listed.item_id} worth {value} {currency.code} is outside the "
                f"band {band.lower_minor}..{band.upper_minor}",
            )
        if (o.get("target_cashback_bps"), o.get("target_collectible")) != (
            listed.cashback_bps,
            listed.collectible,
        ):
            self._round(r, "target", "the target's cash-back terms differ from the catalogue's")

    def _catalog_item(self, item: dict[str, Any]) -> CatalogItem:
        """``catalog_item(item)``, built once per recorded item snapshot (never mutated)."""
        entry = self._listed.get(id(item))
        if entry is None or entry[0] is not item:  # kept with its dict: the id stays its own
            entry = self._listed[id(item)] = (item, catalog_item(item))
        return entry[1]

    def _check_stake(
        self, r: _Round, settings: dict[str, Any], base: Currency, currency: Currency
    ) -> None:
        o = r.opening
        stake = o.get("stake") or {}
        staked = stake.get("items") or []
        if not staked:
            self._round(r, "stake", "an items-mode round without staked items")
        total = 0
        for entry in staked:
            number = entry["inventoryItemId"]
            total += entry["valueMinor"]
            item = self.items.get(number)
            if item is None:
                self._round(r, "stake", f"staked item {number} was never granted")
                continue
            owner = (item.grant["operator_id"], item.grant["player_external_id"])
            if owner != (o["operator_id"], o["player_external_id"]):
                self._round(r, "stake", f"staked item {number} is not the player's")
            if item.state != "unresolved" or item.held_by is not None:
                self._round(
                    r, "stake", f"staked item {number} was {item.state} or held when staked"
                )
            grant = item.grant
            listed = self.history.current_item(grant["item_id"])
            if listed is None:
                price, collectible, cashback = (
                    grant["grant_value_base_minor"],
                    grant["collectible"],
                    grant["cashback_bps"],
                )
            else:
                price = listed["value_minor"]
                collectible = listed.get("collectible", False)
                cashback = listed.get("cashback_bps")
            counted = count_item(
                grant["grant_value_base_minor"],
                price,
                collectible,
                cashback,
                settings.get("credits_share_bps", 10000),
            )
            # displayed(counted, base, currency)[0]: the Uncredited part is not checked here
            value = reprice_fraction(counted.credited_exact, base, currency)
            if value != entry["valueMinor"]:
                self._round(
                    r,
                    "stake",
                    f"staked item {number} counted {entry['valueMinor']} {currency.code}, "
                    f"the rules give {value}",
                )
        wager = o["wager_minor"]
        if total != wager or stake.get("totalMinor", wager) != wager:
            self._round(
                r,
                "bet",
                f"the stake's items sum to {total} {currency.code}, the recorded bet is {wager}",
            )
        if o.get("stake_counted_minor", wager) != wager:
            self._round(r, "bet", "the counted stake differs from the bet")

    # -- the end --------------------------------------------------------------------------------

    def finish(self) -> None:
        for pair in self.pairs.values():
            for public_id, nonce in pair.rounds:
                self._pair_round(pair, public_id, nonce, None, False)
        report = self.report
        for r in self.rounds.values():
            if not r.in_scope:
                continue
            if r.status == "settled":
                report.rounds_settled += 1
            elif r.status == "voided":
                report.rounds_voided += 1
            elif r.status in ("held", "cancelled"):
                report.rounds_held += r.status == "held"
                report.rounds_cancelled += r.status == "cancelled"
                self._finish_cancel(r)
            else:
                report.rounds_open += 1
            for attempt, entry in sorted(r.attempts.items()):
                if entry["state"] not in ("uncertain", "in_flight"):
                    continue
                listed = {
                    "round": r.public_id,
                    "attempt": attempt,
                    "debitKey": entry["key"],
                    "amountMinor": entry["amount"],
                    "currency": r.opening["currency"],
                    "state": entry["state"],
                }
                if entry["escalated"]:
                    report.escalated_rollbacks.append(listed)
                else:
                    report.open_rollbacks.append(listed)
            if r.status not in ("settled", "held", "cancelled"):
                continue
            if r.box is not None:
                self._finish_box(r)
                continue
            if r.nonce_uses == 0:
                self._round(r, "nonce", "no NonceUsed event records the round's nonce")
            if r.settlement and r.settlement.get("is_win") and r.grants == 0:
                self._round(r, "grant", "a win that granted no item")
            for number in sorted(r.stake_ids - r.consumed):
                self._round(r, "stake", f"staked item {number} was not consumed")
        self.chain.finish()
        for finding in self.chain.findings:
            self._event(finding.kind, finding.position, finding.message)
        report.chain = self.chain.summary()


# -- opening a store ------------------------------------------------------------------------


def open_store(database_url: str) -> tuple[Application, Any]:
    """The event store and our tables at ``database_url``, without a configuration."""
    from application.platform import EventStore
    from application.store.database_url import parse_database_url
    from application.store.sql import open_database

    location = parse_database_url(database_url)
    env = location.eventsourcing_env()
    if location.kind == "postgresql":  # one reader: a small pool (the server keeps its own)
        env.update({"POSTGRES_POOL_SIZE": "2", "POSTGRES_MAX_OVERFLOW": "2"})
    events = EventStore(env=env)
    return events, open_database(location, pool_size=2)


def audit(
    events: Application,
    db: Any,
    scope: AuditScope | None = None,
    expected_heads: dict[int, str] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> AuditReport:
    return Auditor(events, db, scope, expected_heads).run(progress)

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
* items: no item consumed, cashed back or shipped twice (or moved while resolved);
* the log itself: aggregate versions contiguous, and the hash chain (``event_chain``)
  recomputed, naming the first changed, deleted or inserted event.

Read-only: nothing is written. ``upgrader audit`` (``api/cli_audit.py``) is the command.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from eventsourcing.application import Application

from application.audit_chain import ChainVerifier
from application.audit_config import ConfigHistory, ProfileSnapshot, catalog_item
from application.audit_decode import EventDecoder
from domain.cashout import Cashout
from domain.catalog import CatalogItem, is_eligible
from domain.config_history import CatalogItemRecord, OperatorProfile
from domain.fairness import ROLL_SPACE, is_valid_server_seed, roll, seed_hash
from domain.ids import inventory_item_id, round_public_id
from domain.inventory import InventoryItem
from domain.money import Currency, reprice_fraction
from domain.player_fairness import PlayerFairness
from domain.round import Round
from domain.stake_counting import count_item
from domain.upgrader_checks import chance_refusal, game_refusal, mode_refusal, wager_refusal
from domain.upgrader_rules import target_band

RESOLVED = ("consumed", "cashed_back", "shipping_requested", "shipped")
# what a finished round keeps for the checks of later events (grants, nonces, rollbacks)
OPENING_KEPT = (
    "public_id",
    "operator_id",
    "player_external_id",
    "mode",
    "currency",
    "wager_minor",
    "chance_bps",
    "target",
    "target_value_base_minor",
)
SETTLEMENT_KEPT = ("server_seed_hash", "client_seed", "nonce", "rolled_bps", "is_win")


# -- results ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Violation:
    kind: str
    ref_type: str  # "round", "item" or "event"
    ref: Any
    message: str

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, self.ref_type: self.ref, "message": self.message}


@dataclass
class AuditReport:
    rounds_checked: int = 0
    rounds_settled: int = 0
    rounds_voided: int = 0
    rounds_open: int = 0
    fairness_verified: int = 0
    fairness_committed: int = 0
    events_replayed: int = 0
    items_checked: int = 0
    cashouts_checked: int = 0
    open_rollbacks: list[dict[str, Any]] = field(default_factory=list)
    escalated_rollbacks: list[dict[str, Any]] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    chain: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.violations

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "roundsChecked": self.rounds_checked,
            "roundsSettled": self.rounds_settled,
            "roundsVoided": self.rounds_voided,
            "roundsOpen": self.rounds_open,
            "fairnessVerified": self.fairness_verified,
            "fairnessCommitted": self.fairness_committed,
            "eventsReplayed": self.events_replayed,
            "itemsChecked": self.items_checked,
            "cashoutsChecked": self.cashouts_checked,
            "openRollbacks": self.open_rollbacks,
            "escalatedRollbacks": self.escalated_rollbacks,
            "chain": self.chain,
            "seconds": round(self.seconds, 3),
            "violations": [v.as_json() for v in self.violations],
        }


@dataclass(frozen=True)
class AuditScope:
    """Which rounds and items are checked (the log is always replayed whole)."""

    operator_id: str | None = None
    player: str | None = None
    since: float | None = None  # rounds opened / items granted at or after (epoch seconds)

    def covers(self, operator_id: str, player: str, at: float | None) -> bool:
        if self.operator_id is not None and operator_id != self.operator_id:
            return False
        if self.player is not None and player != self.player:
            return False
        return self.since is None or at is None or at >= self.since


def parse_since(text: str) -> float:
    """An ISO date or date-time (UTC unless it names an offset) as epoch seconds."""
    moment = datetime.fromisoformat(text.strip())
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


# -- replay state -------------------------------------------------------------------------


@dataclass
class _Round:
    uuid: UUID
    opening: dict[str, Any]
    position: int
    in_scope: bool
    status: str = "open"
    attempts: dict[int, dict[str, Any]] = field(default_factory=dict)
    settlement: dict[str, Any] | None = None
    nonce_uses: int = 0
    grants: int = 0
    stake_ids: set[int] = field(default_factory=set)
    consumed: set[int] = field(default_factory=set)

    @property
    def public_id(self) -> str:
        opening = self.opening  # as .get(key, default), without computing the default
        return opening["public_id"] if "public_id" in opening else round_public_id(self.uuid)


@dataclass
class _Pair:
    operator_id: str
    player: str
    server_seed_hash: str
    client_seed: str
    next_nonce: int = 0
    rounds: list[tuple[str, int]] = field(default_factory=list)


@dataclass
class _Item:
    number: int
    grant: dict[str, Any]
    in_scope: bool
    state: str = "unresolved"
    held_by: str | None = None
    resolution: str = ""


# -- the auditor --------------------------------------------------------------------------


class Auditor:
    def __init__(
        self,
        events: Application,
        db: Any = None,
        scope: AuditScope | None = None,
        expected_heads: dict[int, str] | None = None,
        check_chain: bool = True,
        batch_size: int = 5000,
    ) -> None:
        self.events = events
        self.db = db
        self.scope = scope or AuditScope()
        self.batch_size = batch_size
        self.report = AuditReport()
        self.chain = ChainVerifier(db if check_chain else None, dict(expected_heads or {}))
        self.history = ConfigHistory()
        self.rounds: dict[UUID, _Round] = {}
        self.by_public: dict[str, _Round] = {}
        self.pairs: dict[UUID, _Pair] = {}
        self.items: dict[int, _Item] = {}
        self.item_of: dict[UUID, _Item] = {}
        self.versions: dict[Any, int] = {}
        self.decoder = EventDecoder(events.mapper)
        self._listed: dict[int, tuple[dict[str, Any], CatalogItem]] = {}
        self._handlers: dict[type, Callable[[Any, int], None]] = {
            Round.Opened: self._opened,
            Round.DebitAttempted: self._debit_attempted,
            Round.DebitUncertain: self._debit_uncertain,
            Round.WagerRolledBack: self._rolled_back,
            Round.RollbackEscalated: self._escalated,
            Round.WagerDebited: self._debited,
            Round.RoundVoided: self._voided,
            Round.RoundSettled: self._settled,
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
        }

    # -- driving ------------------------------------------------------------------------------

    def run(self, progress: Callable[[int, int], None] | None = None) -> AuditReport:
        started = datetime.now(UTC)
        recorder = self.events.recorder
        head = recorder.max_notification_id() or 0
        position = 0
        # The replay state only grows (rounds, items, pairs: long-lived, never cyclic
        # garbage), and the automatic collector would traverse all of it again and again
        # (about a quarter of the replay's CPU). It is paused while the log is replayed;
        # the young generations are collected once per page instead.
        collecting = gc.isenabled()
        gc.disable()
        try:
            while True:
                batch = recorder.select_notifications(position + 1, self.batch_size)
                if not batch:
                    break
                step = self.step
                for notification in batch:
                    step(notification)
                position = batch[-1].id
                del batch
                gc.collect(1)
                if progress is not None:
                    progress(position, max(head, position))
        finally:
            if collecting:
                gc.enable()
        self.finish()
        self.report.seconds = (datetime.now(UTC) - started).total_seconds()
        return self.report

    def step(self, notification: Any) -> None:
        self.report.events_replayed += 1
        self.chain.step(notification)
        self._check_version(notification)
        try:
            event = self.decoder.decode(notification)
        except Exception as exc:  # a stored event that no longer decodes
            self._event(
                "event_unreadable",
                notification.id,
                f"event {notification.id} ({notification.topic}) cannot be decoded: {exc}",
            )
            return
        handler = self._handlers.get(type(event))
        try:
            if handler is not None:
                handler(event, notification.id)
            elif isinstance(event, OperatorProfile.Event | CatalogItemRecord.Event):
                self.history.apply(event)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            self._event(
                "event_malformed",
                notification.id,
                f"event {notification.id} ({notification.topic}) lacks what it should hold: "
                f"{type(exc).__name__}: {exc}",
            )

    def _check_version(self, notification: Any) -> None:
        key = notification.originator_id
        slot = key.int if type(key) is UUID else key  # an int hashes in C, a UUID in Python
        last = self.versions.get(slot, 0)
        version = notification.originator_version
        if version != last + 1:
            self._event(
                "version_gap",
                notification.id,
                f"event {notification.id} is version {version} of {_hex(key)}, "
                f"but the log's previous event of it is version {last}",
            )
        self.versions[slot] = max(last, version)

    # -- recording findings -------------------------------------------------------------------

    def _round(self, r: _Round, kind: str, message: str) -> None:
        if r.in_scope:
            self.report.violations.append(Violation(kind, "round", r.public_id, message))

    def _item(self, item: _Item, kind: str, message: str) -> None:
        if item.in_scope:
            self.report.violations.append(Violation(kind, "item", item.number, message))

    def _event(self, kind: str, position: int, message: str) -> None:
        self.report.violations.append(Violation(kind, "event", position, message))

    def _known_round(self, event: Any, position: int) -> _Round | None:
        r = self.rounds.get(event.originator_id)
        if r is None:
            self._event(
                "round_state",
                position,
                f"event {position} ({type(event).__name__}) belongs to a round never opened",
            )
        return r

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
        if not in_scope:
            return
        self.report.rounds_checked += 1
        if r.public_id != round_public_id(event.originator_id):
            self._round(r, "round_state", "the round's public id does not name its aggregate")
        self._check_opening(r)

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
        o = r.opening
        base_code = profile.settings.get("base_currency")
        base = profile.currency(base_code) if base_code else None
        currency = profile.currency(o["currency"])
        if base is None:
            self._round(r, "config", f"base currency {base_code!r} has no recorded rate")
            return None, None
        if currency is None:
            self._round(r, "rate", f"currency {o['currency']} was not configured at the time")
            return base, None
        recorded = profile.rates[o["currency"]]
        if o["fx_rate"] != recorded["rate"] or o["currency_exponent"] != recorded["exponent"]:
            self._round(
                r,
                "rate",
                f"rate {o['fx_rate']} (exponent {o['currency_exponent']}) pinned for "
                f"{o['currency']}, the recorded rate was {recorded['rate']} "
                f"(exponent {recorded['exponent']})",
            )
        if o["base_currency"] != base.code or o["base_exponent"] != base.exponent:
            self._round(r, "rate", f"base currency {o['base_currency']} is not {base.code}")
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

    # -- rounds: the money saga -----------------------------------------------------------------

    def _attempt(self, r: _Round, attempt: int, position: int) -> dict[str, Any] | None:
        entry = r.attempts.get(attempt)
        if entry is None:
            self._round(
                r, "debit", f"event {position} names debit attempt {attempt}, never attempted"
            )
        return entry

    def _debit_attempted(self, event: Any, position: int) -> None:
        r = self._known_round(event, position)
        if r is None:
            return
        o = r.opening
        if r.status != "open" or event.attempt in r.attempts:
            self._round(r, "debit", f"debit attempt {event.attempt} on a {r.status} round")
        r.attempts[event.attempt] = {
            "state": "in_flight",
            "key": event.idempotency_key,
            "amount": event.amount_minor,
            "escalated": False,
        }
        if o["mode"] != "balance":
            self._round(r, "debit", "a wallet debit in an items-mode round")
        if event.amount_minor != o["wager_minor"] or event.currency != o["currency"]:
            self._round(
                r,
                "bet",
                f"debit attempt {event.attempt} asked {event.amount_minor} {event.currency}, "
                f"the round's bet is {o['wager_minor']} {o['currency']}",
            )
        if event.idempotency_key != f"{r.public_id}:{event.attempt}":
            self._round(r, "debit", f"debit attempt {event.attempt} has a foreign key")

    def _debit_uncertain(self, event: Any, position: int) -> None:
        r = self._known_round(event, position)
        entry = r and self._attempt(r, event.attempt, position)
        if r is None or entry is None:
            return
        if entry["state"] != "in_flight":
            self._round(
                r, "debit", f"attempt {event.attempt} turned uncertain from {entry['state']}"
            )
        entry["state"] = "uncertain"

    def _rolled_back(self, event: Any, position: int) -> None:
        r = self._known_round(event, position)
        entry = r and self._attempt(r, event.attempt, position)
        if r is None or entry is None:
            return
        if entry["state"] != "uncertain":
            self._round(
                r,
                "debit",
                f"attempt {event.attempt} was rolled back while {entry['state']}, not uncertain",
            )
        entry["state"] = "rolled_back"

    def _escalated(self, event: Any, position: int) -> None:
        r = self._known_round(event, position)
        entry = r and self._attempt(r, event.attempt, position)
        if r is None or entry is None:
            return
        entry["escalated"] = True

    def _debited(self, event: Any, position: int) -> None:
        r = self._known_round(event, position)
        entry = r and self._attempt(r, event.attempt, position)
        if r is None or entry is None:
            return
        if entry["state"] != "in_flight" or r.status != "open":
            self._round(
                r,
                "debit",
                f"attempt {event.attempt} accepted while {entry['state']} (round {r.status})",
            )
        entry["state"] = "debited"

    def _voided(self, event: Any, position: int) -> None:
        r = self._known_round(event, position)
        entry = r and self._attempt(r, event.attempt, position)
        if r is None:
            return
        if r.status != "open" or (entry is not None and entry["state"] != "in_flight"):
            self._round(r, "round_state", f"voided while {r.status}")
        if entry is not None:
            entry["state"] = "refused"
        r.status = "voided"
        r.opening = {key: r.opening.get(key) for key in OPENING_KEPT}

    # -- rounds: the outcome ---------------------------------------------------------------------

    def _settled(self, event: Any, position: int) -> None:
        r = self._known_round(event, position)
        if r is None:
            return
        if r.status != "open":
            self._round(r, "round_state", f"settled while {r.status}")
            return
        r.status = "settled"
        s = event.settlement
        r.settlement = {key: s.get(key) for key in SETTLEMENT_KEPT}
        o = r.opening
        r.opening = {key: o.get(key) for key in OPENING_KEPT}  # memory: keep what is used later
        if not r.in_scope:
            return
        debited = [a for a, e in r.attempts.items() if e["state"] == "debited"]
        if o["mode"] == "balance" and len(debited) != 1:
            self._round(
                r,
                "debit_missing",
                "a balance-mode round settled without an accepted debit of its bet"
                if not debited
                else f"a balance-mode round settled with {len(debited)} accepted debits",
            )
        if o["mode"] == "items" and r.attempts:
            self._round(r, "debit", "an items-mode round settled after a wallet debit")
        rolled = s["rolled_bps"]
        chance = o["chance_bps"]
        if not isinstance(rolled, int) or not 0 <= rolled < ROLL_SPACE:
            self._round(r, "roll", f"rolled {rolled!r} is not in 0..{ROLL_SPACE - 1}")
            return
        won = rolled < chance
        if s["is_win"] is not won:
            self._round(
                r,
                "outcome",
                f"isWin {s['is_win']} recorded, but rolled {rolled} "
                f"{'<' if won else '>='} chance {chance}",
            )
        payout = o["target"]["value_minor"] if s["is_win"] else 0
        if s["payout_minor"] != payout:
            self._round(
                r, "payout", f"payout {s['payout_minor']} recorded, the rules give {payout}"
            )
        nuggets = o["wager_minor"] if (o["no_loss"] and not s["is_win"]) else 0
        if (s.get("nuggets_minor") or 0) != nuggets:
            self._round(
                r, "nuggets", f"Nuggets {s.get('nuggets_minor')} recorded, the rules give {nuggets}"
            )
        won_item = s.get("won_item")
        if s["is_win"] and (won_item is None or won_item.get("item_id") != o["target"]["item_id"]):
            self._round(r, "payout", "a win whose won item is not the target")
        if not s["is_win"] and won_item is not None:
            self._round(r, "payout", "a loss that names a won item")

    # -- fairness ---------------------------------------------------------------------------------

    def _pair_scope(self, pair: _Pair) -> bool:
        return self.scope.covers(pair.operator_id, pair.player, None)

    def _pair_started(self, event: Any, position: int) -> None:
        self.pairs[event.originator_id] = _Pair(
            event.operator_id, event.player_external_id, event.server_seed_hash, event.client_seed
        )

    def _nonce_used(self, event: Any, position: int) -> None:
        pair = self.pairs.get(event.originator_id)
        if pair is None:
            self._event("nonce", position, f"event {position} uses a nonce of no seed pair")
            return
        if event.nonce != pair.next_nonce:
            r = self.by_public.get(event.round_public_id)
            message = (
                f"nonce {event.nonce} used where {pair.next_nonce} was next "
                f"(seed pair {pair.server_seed_hash[:16]}...)"
            )
            if r is not None:
                self._round(r, "nonce", message)
            elif self._pair_scope(pair):
                self._event("nonce", position, message)
        pair.next_nonce = event.nonce + 1
        pair.rounds.append((event.round_public_id, event.nonce))

    def _seed_rotated(self, event: Any, position: int) -> None:
        pair = self.pairs.get(event.originator_id)
        if pair is None:
            self._event("seed_hash", position, f"event {position} rotates no seed pair")
            return
        seed = event.server_seed
        valid = is_valid_server_seed(seed) and seed_hash(seed) == pair.server_seed_hash
        if self._pair_scope(pair):
            if not valid or event.server_seed_hash != pair.server_seed_hash:
                self._event(
                    "seed_hash",
                    position,
                    f"the revealed server seed does not hash to the committed "
                    f"{pair.server_seed_hash}",
                )
            if event.client_seed != pair.client_seed:
                self._event("seed_hash", position, "the rotation names another client seed")
            expected_last = pair.next_nonce - 1 if pair.next_nonce else None
            if event.last_nonce != expected_last:
                self._event(
                    "nonce",
                    position,
                    f"the rotation says the last nonce was {event.last_nonce}, "
                    f"the log's NonceUsed events say {expected_last}",
                )
        for public_id, nonce in pair.rounds:
            self._pair_round(pair, public_id, nonce, seed if valid else None, True)
        self.pairs[event.originator_id] = _Pair(
            pair.operator_id,
            pair.player,
            event.next_server_seed_hash,
            event.next_client_seed,
        )

    def _pair_round(
        self, pair: _Pair, public_id: str, nonce: int, seed: str | None, revealed: bool
    ) -> None:
        """One round of a seed pair: matched with its settlement, verified when revealed."""
        r = self.by_public.get(public_id)
        if r is None:
            if self._pair_scope(pair):
                self.report.violations.append(
                    Violation("nonce", "round", public_id, f"nonce {nonce} used by no round")
                )
            return
        r.nonce_uses += 1
        if r.nonce_uses > 1:
            self._round(r, "nonce", "the round used more than one nonce")
        s = r.settlement
        if s is None:
            self._round(r, "nonce", f"nonce {nonce} used by a round that did not settle")
            return
        if not r.in_scope:
            return
        claimed = (s["server_seed_hash"], s["client_seed"], s["nonce"])
        if claimed != (pair.server_seed_hash, pair.client_seed, nonce):
            self._round(
                r,
                "fairness",
                f"settled with seed hash {s['server_seed_hash'][:16]}..., client seed "
                f"{s['client_seed']!r} and nonce {s['nonce']}, but the seed pair recorded "
                f"{pair.server_seed_hash[:16]}..., {pair.client_seed!r} and nonce {nonce}",
            )
        if not revealed:
            self.report.fairness_committed += 1
            return
        if seed is None:
            return  # the reveal failed: reported on the rotation event
        recomputed = roll(seed, pair.client_seed, nonce)
        if recomputed != s["rolled_bps"]:
            self._round(
                r,
                "roll",
                f"rolled {s['rolled_bps']} recorded, the revealed server seed gives {recomputed}",
            )
        else:
            self.report.fairness_verified += 1

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
            if r.status != "settled":
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


def _hex(key: Any) -> str:
    return key.hex if isinstance(key, UUID) else str(key)


# -- opening a store ------------------------------------------------------------------------


def open_store(database_url: str) -> tuple[Application, Any]:
    """The event store and our tables at ``database_url``, without a configuration."""
    from application.database_url import parse_database_url
    from application.platform import EventStore
    from application.sql import open_database

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


def chain_head_of_day(events: Application, day: str) -> dict[str, Any] | None:
    """Recompute the chain from the log: the last link of the UTC ``day`` (or None)."""
    from projections.hash_chain import GENESIS, notification_link, utc_day

    recorder = events.recorder
    previous = GENESIS
    found: dict[str, Any] | None = None
    position = 0
    while True:
        batch = recorder.select_notifications(position + 1, 1000)
        if not batch:
            return found
        for notification in batch:
            previous = notification_link(previous, notification)
            event = events.mapper.to_domain_event(notification)
            if utc_day(event.timestamp) == day:
                found = {
                    "day": day,
                    "position": notification.id,
                    "link": previous.hex(),
                    "events": (found or {}).get("events", 0) + 1,
                }
        position = batch[-1].id

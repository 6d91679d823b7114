"""Fault-injection suite: real ``upgrader`` processes on PostgreSQL, the real reference
wallet and webhook receiver on loopback, and the invariants checked after every scenario.

After each scenario (``FaultStack.check``):

(a) money: once no debit is in flight or owed a rollback, no cancel credit waits for the
    wallet, and the wallet has answered every call, the wallet's net debits equal the sum
    of ``betMinor`` over the settled balance-mode rounds of the event log (a cancelled
    round was settled and debited); key by key, the debits the wallet holds (applied and
    not rolled back) are exactly the debits the log records as taken by a settled round,
    and none of those was also rolled back; the wallet's cancel credits are exactly one
    credit of each cancelled round's bet (decisions §11);
(b) webhooks: every settled round's ``round_settled`` arrived once or more, always with
    the same ``id`` (the one derived from the round), nothing arrived for a round that
    did not settle, and per player the first arrivals are in settle order; every
    cancelled round's ``round_cancelled`` arrived, under its own stable ``id``, after its
    ``round_settled``, and none for a round that was not cancelled.

A one-line summary per scenario (plays, debits, rollbacks, webhooks, seconds) is printed
at the end of the run.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock
from uuid import UUID, uuid4

import httpx
import psycopg
import pytest

from ops.reference_operator.wallet import Ledger, ThreadedWalletServer
from tests.conftest import POSTGRES_URL, SKIP_POSTGRES
from tests.faults import private_postgres
from tests.support import config_toml
from tests.support.processes import ChildProcess, ServerProcess, WorkerProcess, run_cli
from tests.support.signing import signed_headers
from tests.support.waiting import wait_until

OPERATOR = "faults-op"
KEY_ID = "faults-key"
CURRENCY = "EUR"
WAGER = 1000
CHANCE_BPS = 5000  # W=1000, p=5000, fee 500 bps: target band [1728, 1900]
TARGET_ITEM = 6  # value 1800, in the band
FUNDS = 10_000_000
PLAY_PATH = "/api/s2s/upgrader/play"
ROUNDS_PATH = "/api/s2s/rounds"
DEBIT, ROLLBACK = "wallet.debit", "wallet.rollback"
WALLET_TIMEOUT_SECONDS = 2
GRACE_SECONDS = 3
QUIET_TIMEOUT = 45.0  # until no debit is in flight or owed a rollback
WEBHOOK_TIMEOUT = 45.0  # a dispatcher lease (2 x timeout + 30 s) may have to expire

SUMMARIES: list[str] = []
FAILED = pytest.StashKey[bool]()  # the test's call phase failed (logs are shown)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if SUMMARIES:
        terminalreporter.section("fault scenarios")
        for line in SUMMARIES:
            terminalreporter.write_line(line)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.stash[FAILED] = report.failed


# --------------------------------------------------------------------------- the log


@dataclass
class LoggedRound:
    round_id: UUID
    public_id: str
    player: str
    mode: str
    bet_minor: int
    attempt_keys: dict[int, str] = field(default_factory=dict)
    debited_key: str | None = None
    rolled_back_keys: set[str] = field(default_factory=set)
    status: str = "open"
    settled_position: int | None = None
    cancel: str | None = None  # "held", then "cancelled" (the status stays "settled")
    cancel_keys: dict[int, str] = field(default_factory=dict)


def read_rounds(platform: Any, operator_id: str) -> dict[UUID, LoggedRound]:
    """Every round of ``operator_id`` as the event log records it (one pass)."""
    from domain.round import Round

    rounds: dict[UUID, LoggedRound] = {}
    recorder, mapper = platform.events.recorder, platform.events.mapper
    position = 0
    while batch := recorder.select_notifications(position + 1, 1000):
        position = batch[-1].id
        for notification in batch:
            if ":Round." not in notification.topic:
                continue
            event = mapper.to_domain_event(notification)
            rid = event.originator_id
            if isinstance(event, Round.Opened):
                opening = event.opening
                if opening["operator_id"] == operator_id:
                    rounds[rid] = LoggedRound(
                        rid,
                        opening["public_id"],
                        opening["player_external_id"],
                        opening["mode"],
                        opening["wager_minor"],
                    )
                continue
            found = rounds.get(rid)
            if found is None:
                continue
            if isinstance(event, Round.DebitAttempted):
                found.attempt_keys[event.attempt] = event.idempotency_key
            elif isinstance(event, Round.WagerDebited):
                found.debited_key = event.idempotency_key
            elif isinstance(event, Round.WagerRolledBack):
                found.rolled_back_keys.add(found.attempt_keys[event.attempt])
            elif isinstance(event, Round.RoundSettled):
                found.status, found.settled_position = "settled", notification.id
            elif isinstance(event, Round.RoundVoided):
                found.status = "voided"
            elif isinstance(event, Round.RoundHeld | Round.RoundCancelled):
                found.cancel = "held" if isinstance(event, Round.RoundHeld) else "cancelled"
            elif isinstance(event, Round.CancelCreditAttempted):
                found.cancel_keys[event.attempt] = event.idempotency_key
    return rounds


# --------------------------------------------------------------------------- the stack


class FaultStack:
    """The reference wallet + receiver, a configuration file, and the processes started."""

    def __init__(self, database_url: str, tmp_path: Path, label: str) -> None:
        self.database_url = database_url
        self.tmp_path = tmp_path
        self.label = label
        self.started = time.monotonic()
        self.inbound = f"in-{secrets.token_hex(16)}"
        self.outbound = f"out-{secrets.token_hex(16)}"
        self.wallet = ThreadedWalletServer({OPERATOR: self.outbound}).start()
        self.config_path = tmp_path / "config.toml"
        self.children: list[ChildProcess] = []
        self._checker: Any = None
        self.write_config()

    @property
    def ledger(self) -> Ledger:
        return self.wallet.ledger

    def write_config(self, webhook_url: str | None = None) -> None:
        self.config_path.write_text(
            config_toml.balance_config(
                self.database_url,
                operator_id=OPERATOR,
                key=config_toml.Key(KEY_ID, self.inbound, catalog_access=True),
                wallet_url=self.wallet.url,
                outbound_secret=self.outbound,
                grace_seconds=GRACE_SECONDS,
                wallet_timeout_seconds=WALLET_TIMEOUT_SECONDS,
                webhook_url=webhook_url or self.wallet.webhook_url,
                limits={"plays_per_second_per_player": 0},
            ),
            encoding="utf-8",
        )

    # -- processes ------------------------------------------------------------------------

    def server(self, *args: str, name: str = "server") -> ServerProcess:
        server = ServerProcess(
            self.config_path,
            self.tmp_path / f"{name}.log",
            key_id=KEY_ID,
            secret=self.inbound,
            redact=[self.outbound],
            args=args,
        )
        self.children.append(server)
        return server

    def worker(self, loop: str) -> WorkerProcess:
        worker = WorkerProcess(
            self.config_path, self.tmp_path / f"worker-{loop}.log", loop, redact=[self.outbound]
        )
        self.children.append(worker)
        return worker

    def cli(self, *args: str) -> str:
        done = run_cli(self.config_path, *args)
        assert done.returncode == 0, f"upgrader {' '.join(args)} failed:\n{done.stderr[-3000:]}"
        return done.stdout

    # -- calls ------------------------------------------------------------------------------

    def fund(self, players: list[str], amount: int = FUNDS) -> None:
        for player in players:
            self.ledger.fund(OPERATOR, player, CURRENCY, amount)

    @staticmethod
    def play_body(player: str, action: str, wager: int = WAGER) -> bytes:
        return json.dumps(
            {
                "playerExternalId": player,
                "clientActionId": action,
                "wagerMinor": wager,
                "chanceBps": CHANCE_BPS,
                "targetItemId": TARGET_ITEM,
                "currency": CURRENCY,
            }
        ).encode()

    def signed(
        self,
        base_url: str,
        method: str,
        path: str,
        body: bytes = b"",
        params: dict[str, Any] | None = None,
        timeout: float = 30.0,
        client: httpx.Client | None = None,
    ) -> httpx.Response:
        headers = signed_headers(KEY_ID, self.inbound, int(time.time()), method, path, body)
        request = client.request if client is not None else httpx.request
        return request(
            method,
            base_url + path,
            content=body or None,
            params=params,
            headers=headers,
            timeout=timeout,
        )

    def play(
        self,
        base_url: str,
        player: str,
        action: str,
        timeout: float = 30.0,
        client: httpx.Client | None = None,
    ) -> httpx.Response:
        body = self.play_body(player, action)
        return self.signed(base_url, "POST", PLAY_PATH, body, timeout=timeout, client=client)

    def listed_rounds(self, base_url: str, player: str) -> dict[str, dict[str, Any]]:
        """Every round of ``player`` that GET /api/s2s/rounds lists (all pages)."""
        listed: dict[str, dict[str, Any]] = {}
        cursor = None
        while True:
            params = {"playerExternalId": player, "limit": 100}
            if cursor:
                params["cursor"] = cursor
            response = self.signed(base_url, "GET", ROUNDS_PATH, params=params)
            assert response.status_code == 200, response.text
            page = response.json()
            for entry in page["rounds"]:
                listed[entry["publicId"]] = entry
            cursor = page["nextCursor"]
            if not cursor:
                return listed

    # -- in-process view of the store (what ``upgrader wallet pending`` reads) -------------

    @property
    def checker(self) -> Any:
        if self._checker is None:
            from application.config.load import load_config
            from application.platform import Platform
            from entrypoints.runtime import Runtime

            # The test's own view is small: its event store pool is 1 (+1) connections
            # (eventsourcing reads UPGRADER_POSTGRES_* before POSTGRES_*), not 8.
            small = {"UPGRADER_POSTGRES_POOL_SIZE": "1", "UPGRADER_POSTGRES_MAX_OVERFLOW": "1"}
            with mock.patch.dict(os.environ, small):
                platform = Platform(load_config(str(self.config_path)), pool_size=2)
            self._checker = Runtime(platform, workers=())
        return self._checker

    def close_checker(self) -> None:
        if self._checker is not None:
            self._checker.platform.close()
            self._checker = None

    def pending_wallet_operations(self) -> list[list[Any]]:
        from entrypoints.cli_ops import pending_wallet_operations

        return pending_wallet_operations(self.checker)

    def wait_quiet(self, timeout: float = QUIET_TIMEOUT) -> None:
        """Until no debit is in flight or owed a rollback and every wallet call is answered."""
        last: list[Any] = []

        def quiet() -> bool:
            nonlocal last
            last = self.pending_wallet_operations()
            applied = self.ledger.applied_debit_keys(OPERATOR)
            unanswered = [  # a late wallet still holding a call it has not applied yet
                r
                for r in self.ledger.requests
                if r.http_status is None and not (r.type == DEBIT and r.idempotency_key in applied)
            ]
            return not last and not unanswered

        try:
            wait_until(quiet, timeout, interval=0.25, what="no wallet operation pending")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; still pending: {last}") from None

    def undelivered(self) -> int:
        """Webhooks the outbox still has to deliver (its ``webhook_deliveries`` rows)."""
        with self.checker.platform.db.transaction() as cur:
            cur.execute("SELECT COUNT(*) FROM webhook_deliveries WHERE state <> 'delivered'")
            return cur.fetchone()[0]

    def rounds(self) -> dict[UUID, LoggedRound]:
        return read_rounds(self.checker.platform, OPERATOR)

    # -- the invariants ------------------------------------------------------------------

    def check_money(self) -> dict[UUID, LoggedRound]:
        from tests.support.ledger import cancel_credits, settled_balance_bets

        self.wait_quiet()
        ledger = self.ledger
        settled_sum = settled_balance_bets(self.checker.platform, OPERATOR)
        assert ledger.net_debits(OPERATOR) == settled_sum, (
            f"wallet net debits {ledger.net_debits(OPERATOR)} != settled bets {settled_sum}"
        )
        rounds = self.rounds()
        settled = [r for r in rounds.values() if r.status == "settled" and r.mode == "balance"]
        assert all(r.debited_key for r in settled)
        taken = {r.debited_key for r in settled}
        held = ledger.open_debit_keys(OPERATOR)
        assert held == taken, (
            f"debits held by the wallet but not taken by a settled round: {held - taken}; "
            f"settled rounds whose debit the wallet does not hold: {taken - held}"
        )
        rolled_back = ledger.rolled_back_keys(OPERATOR)
        assert not taken & rolled_back, f"settled AND rolled back: {taken & rolled_back}"
        attempted = {k for r in rounds.values() for k in r.attempt_keys.values()}
        sent = {r.idempotency_key for r in ledger.requests_of(DEBIT)}
        assert sent <= attempted, f"debits the log never recorded: {sent - attempted}"
        for r in rounds.values():
            assert r.rolled_back_keys <= rolled_back, f"{r.public_id}: rollback not at wallet"
        credited = cancel_credits(ledger, OPERATOR)
        cancelled = {r.public_id: r for r in rounds.values() if r.cancel == "cancelled"}
        assert sorted(key.split(":cancel:")[0] for key in credited) == sorted(cancelled), (
            f"cancel credits {credited} for the cancelled rounds {sorted(cancelled)}"
        )
        for key, amount in credited.items():
            r = cancelled[key.split(":cancel:")[0]]
            assert amount == r.bet_minor and key in r.cancel_keys.values(), (key, r)
        return rounds

    def check_webhooks(
        self, rounds: dict[UUID, LoggedRound], timeout: float = WEBHOOK_TIMEOUT
    ) -> dict[str, int]:
        from projections.outbox import webhook_id

        settled = sorted(
            (r for r in rounds.values() if r.status == "settled"),
            key=lambda r: r.settled_position or 0,
        )
        from projections.outbox_cancels import cancel_webhook_id

        expected = {webhook_id(r.round_id): r for r in settled}
        cancels = {cancel_webhook_id(r.round_id) for r in settled if r.cancel == "cancelled"}
        ledger = self.ledger

        def missing() -> set[str]:
            return (set(expected) | cancels) - {w["id"] for w in list(ledger.received_webhooks)}

        try:
            wait_until(lambda: not missing(), timeout, interval=0.2, what="every webhook")
            # ... and recorded as delivered: a webhook that arrived but whose answer was
            # lost (its dispatcher died) is sent again once the dead one's lease expires.
            wait_until(lambda: self.undelivered() == 0, timeout, interval=0.2, what="deliveries")
        except AssertionError as exc:
            raise AssertionError(
                f"{exc}; {len(missing())} of {len(expected)} missing, "
                f"{self.undelivered()} not recorded as delivered"
            ) from None
        everything = list(ledger.received_webhooks)
        received = [h for h in everything if h["type"] != "round_cancelled"]
        self.check_cancel_webhooks(rounds, everything)
        ids_of: defaultdict[str, set[str]] = defaultdict(set)
        first_arrivals: defaultdict[str, list[str]] = defaultdict(list)
        for hook in received:
            assert hook["type"] == "round_settled" and hook["operatorId"] == OPERATOR
            public_id = hook["data"]["round"]["publicId"]
            if public_id not in ids_of:
                first_arrivals[hook["playerExternalId"]].append(public_id)
            ids_of[public_id].add(hook["id"])
        by_public = {r.public_id: r for r in settled}
        assert set(ids_of) == set(by_public), (
            f"webhooks for rounds that did not settle: {set(ids_of) - set(by_public)}"
        )
        for public_id, ids in ids_of.items():
            assert ids == {webhook_id(by_public[public_id].round_id)}, (
                f"round {public_id} arrived under ids {ids}"
            )
        for player, arrived in first_arrivals.items():
            in_settle_order = [r.public_id for r in settled if r.player == player]
            assert arrived == in_settle_order, f"{player}: webhooks out of settle order"
        copies = Counter(h["id"] for h in received)
        return {
            "webhooks": len(expected),
            "received": len(received),
            "duplicates": sum(n - 1 for n in copies.values()),
            "attempts": ledger.webhook_attempts,
        }

    @staticmethod
    def check_cancel_webhooks(rounds: dict[UUID, LoggedRound], received: list[dict]) -> None:
        """Each cancelled round's ``round_cancelled``, after its ``round_settled``, under
        the id derived from the round; none for another round (decisions §11)."""
        from projections.outbox_cancels import cancel_webhook_id

        cancelled = {r.public_id: r for r in rounds.values() if r.cancel == "cancelled"}
        firsts: dict[tuple[str, str], int] = {}
        for index, hook in enumerate(received):
            key = (hook["type"], hook["data"]["round"]["publicId"])
            firsts.setdefault(key, index)
            if hook["type"] == "round_cancelled":
                r = cancelled[key[1]]
                assert hook["id"] == cancel_webhook_id(r.round_id), hook
                assert hook["data"]["round"]["status"] == "cancelled"
                assert hook["data"]["creditedMinor"] == r.bet_minor
        assert {p for kind, p in firsts if kind == "round_cancelled"} == set(cancelled)
        for public_id in cancelled:
            assert firsts[("round_settled", public_id)] < firsts[("round_cancelled", public_id)]

    def check(self, plays: int, extra: str = "", timeout: float = WEBHOOK_TIMEOUT) -> None:
        """Both invariants, then the scenario's summary line."""
        rounds = self.check_money()
        hooks = self.check_webhooks(rounds, timeout)
        settled = sum(1 for r in rounds.values() if r.status == "settled")
        line = (
            f"{self.label}: plays={plays} settled={settled} "
            f"debits={len(self.ledger.requests_of(DEBIT))} "
            f"rollbacks={len(self.ledger.rolled_back_keys(OPERATOR))} "
            f"webhooks={hooks['webhooks']} (received {hooks['received']}, "
            f"{hooks['duplicates']} duplicates, {hooks['attempts']} attempts) "
            f"{extra}{' ' if extra else ''}in {time.monotonic() - self.started:.1f} s"
        )
        SUMMARIES.append(line)
        print(line)

    # -- teardown ---------------------------------------------------------------------------

    def close(self, failed: bool) -> None:
        for child in self.children:
            child.kill()
        self.close_checker()
        # Let a stalled wallet call finish its sleep (its caller is gone) before the wallet's
        # loop stops, rather than leave its task pending.
        with contextlib.suppress(AssertionError):
            wait_until(
                lambda: all(r.http_status is not None for r in self.ledger.requests),
                8,
                interval=0.1,
            )
        self.wallet.stop()
        if failed:
            for child in self.children:
                print(f"--- {child.log_path.name} (last lines) ---\n{child.log_tail(60)}")
        leaked = [
            child.log_path.name
            for child in self.children
            for secret in (self.inbound, self.outbound)
            if child.log_path.exists() and secret in child.log_path.read_text(errors="replace")
        ]
        assert leaked == [], f"a secret appears in {leaked}"


@pytest.fixture
def make_stack(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Any]:
    """``make_stack(database_url, label)``: a FaultStack torn down after the test."""
    stacks: list[FaultStack] = []

    def make(database_url: str, label: str) -> FaultStack:
        stack = FaultStack(database_url, tmp_path, label)
        stacks.append(stack)
        return stack

    yield make
    failed = request.node.stash.get(FAILED, False)
    for stack in stacks:
        stack.close(failed)


# --------------------------------------------------------------------------- PostgreSQL


@pytest.fixture(scope="session")
def fault_postgres() -> Iterator[str]:
    """The PostgreSQL server the scenarios use.

    The suite runs when ``UPGRADER_TEST_POSTGRES_URL`` is set (like every PostgreSQL
    test). It starts a dozen processes that each keep a pool of connections, so by default
    it runs them on a private throwaway cluster (``private_postgres``) rather than
    crowding the shared server; ``UPGRADER_FAULTS_SHARED_POSTGRES=1``, or a machine where
    no private cluster can be made, uses the shared server instead.
    """
    if not POSTGRES_URL:
        pytest.skip(SKIP_POSTGRES)
    reason = private_postgres.unavailable_reason()
    if os.environ.get("UPGRADER_FAULTS_SHARED_POSTGRES") or reason is not None:
        why = reason or "UPGRADER_FAULTS_SHARED_POSTGRES is set"
        SUMMARIES.append(f"(on the shared server {POSTGRES_URL.split('@')[-1]}: {why})")
        yield POSTGRES_URL
        return
    cluster = private_postgres.PrivatePostgres({"max_connections": "300", "fsync": "off"})
    try:
        cluster.init().start()
        SUMMARIES.append(f"(on a private PostgreSQL 15 cluster, port {cluster.port})")
        yield cluster.url()
    finally:
        cluster.destroy()


def fresh_schema(server_url: str) -> Iterator[str]:
    """A fresh schema on ``server_url`` for one test, dropped afterwards."""
    schema = f"f_{uuid4().hex[:12]}"
    yield f"{server_url}?schema={schema}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture
def fault_db(fault_postgres: str) -> Iterator[str]:
    yield from fresh_schema(fault_postgres)


@pytest.fixture
def stack(fault_db: str, make_stack: Any, request: pytest.FixtureRequest) -> FaultStack:
    return make_stack(fault_db, request.node.name.removeprefix("test_"))

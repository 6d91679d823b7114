"""``upgrader audit`` on a log made by real plays over HTTP, then on tampered copies of it.

The log (once per store): balance plays in EUR and USD, items-mode plays staking won
items, a cash-back, seed rotations, a refused debit, an uncertain debit rolled back and
retried, one rolled back and never retried, one whose rollback fails for 24 h (escalated),
and a no-loss operator awarding Nuggets; the hash-chain projection is caught up. The audit
of it exits 0 with exact counts. Each tampering is applied directly to the stored events
of a COPY of the database (SQLite: the file; PostgreSQL: the schema's tables copied with
``CREATE TABLE ... AS``) and is reported with its violation and exit status 1; the hash
chain names the changed event.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from application.clock import ManualClock
from application.platform import Platform
from domain.ids import round_id
from entrypoints.app import create_app
from entrypoints.cli import main
from ops.reference_operator.wallet import ThreadedWalletServer
from projections.analytics import Analytics
from projections.hash_chain import HashChain
from projections.runner import ProjectionRunner
from tests.conftest import POSTGRES_URL, fresh_postgres_url
from tests.support.config import OUTBOUND, make_config, raw_config
from tests.support.live import Api, LiveServer
from tests.support.waiting import wait_until

PLAY = "/api/s2s/upgrader/play"
PLAY_ITEMS = "/api/s2s/upgrader/play-with-items"
PRIZES = "/api/s2s/upgrader/prizes"
PRIZES_BY_ITEMS = "/api/s2s/upgrader/prizes-by-items"
KEYS = {"op-a": ("key-a", "secret-a-1"), "op-b": ("key-b", "secret-b-1")}
TOPIC = "domain.round:Round."


# -- playing ----------------------------------------------------------------------------------


def no_loss_config(database_url: str, wallet_url: str, changed: bool = False) -> Any:
    """The test config, with op-b on no-loss (Nuggets cost 20 %); ``changed``: op-a's fee,
    USD rate and item 6's price changed (what a restart with a new config file records)."""
    raw = raw_config(database_url)
    raw["operators"][1]["upgrader"] = {"no_loss": True, "nuggets_cost_percent": 20}
    if changed:
        raw["operators"][0]["upgrader"]["house_edge_bps"] = 400
        raw["operators"][0]["currencies"][1]["rate"] = "1.2"
        item = next(i for i in raw["catalog"]["items"] if i["item_id"] == 6)
        item["value_minor"] = 1850
    return make_config(
        database_url,
        raw,
        wallet_url=wallet_url,
        wallet_timeout_seconds=10,  # the faults below answer at once; a loaded machine is slow
        uncertain_debit_grace_seconds=30,
    )


@dataclass
class Session:
    """Real S2S calls, with the bookkeeping the expected audit counts come from."""

    api: Api
    platform: Platform
    settled: list[dict[str, Any]] = field(default_factory=list)
    rates: dict[str, str] = field(default_factory=lambda: {"EUR": "1", "USD": "1.1"})
    voided: int = 0
    open: int = 0
    unresolved: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    cashed_back: list[dict[str, Any]] = field(default_factory=list)

    def _call(self, operator: str, method: str, path: str, body: Any = None, params: Any = None):
        key_id, secret = KEYS[operator]
        raw = json.dumps(body).encode() if body is not None else b""
        return self.api.s2s(method, path, raw, params=params, key_id=key_id, secret=secret)

    def prizes(
        self, operator: str, player: str, wager: int, chance: int, currency: str | None = None
    ) -> list[dict[str, Any]]:
        params = {"playerExternalId": player, "wagerMinor": wager, "chanceBps": chance}
        if currency:
            params["currency"] = currency
        response = self._call(operator, "GET", PRIZES, params=params)
        assert response.status_code == 200, response.text
        return response.json()["prizes"]

    def _record(self, operator: str, player: str, answer: dict[str, Any]) -> None:
        self.settled.append(
            {
                "operator": operator,
                "player": player,
                "revealed": False,
                "fxRate": self.rates[answer["round"]["currency"]],
                **answer,
            }
        )
        won = answer.get("wonItem")
        if won:
            self.unresolved.setdefault((operator, player), []).append(won["inventoryItemId"])

    def play(
        self,
        operator: str,
        player: str,
        action: str,
        wager: int,
        chance: int,
        currency: str | None = None,
        expect: int = 200,
    ) -> Any:
        target = self.prizes(operator, player, wager, chance, currency)[0]["itemId"]
        body = {
            "playerExternalId": player,
            "clientActionId": action,
            "wagerMinor": wager,
            "chanceBps": chance,
            "targetItemId": target,
        }
        if currency:
            body["currency"] = currency
        response = self._call(operator, "POST", PLAY, body)
        assert response.status_code == expect, response.text
        if response.status_code == 200:
            self._record(operator, player, response.json())
        return response

    def play_items(self, operator: str, player: str, action: str, stake: list[int]) -> bool:
        for chance in (7500, 5000, 9000, 2500, 1000):
            params = {"playerExternalId": player, "stakeItemIds": stake, "chanceBps": chance}
            answer = self._call(operator, "GET", PRIZES_BY_ITEMS, params=params)
            assert answer.status_code == 200, answer.text
            prizes = answer.json()["prizes"]
            if prizes:
                break
        else:
            return False
        body = {
            "playerExternalId": player,
            "clientActionId": action,
            "stakeItemIds": stake,
            "chanceBps": chance,
            "targetItemId": prizes[0]["itemId"],
        }
        response = self._call(operator, "POST", PLAY_ITEMS, body)
        assert response.status_code == 200, response.text
        for number in stake:
            self.unresolved[(operator, player)].remove(number)
        self._record(operator, player, response.json())
        return True

    def cash_out(self, operator: str, player: str, action: str, items: list[int]) -> None:
        body = {"playerExternalId": player, "clientActionId": action, "inventoryItemIds": items}
        response = self._call(operator, "POST", "/api/s2s/cashout", body)
        assert response.status_code == 200, response.text
        for number in items:
            self.unresolved[(operator, player)].remove(number)
        self.cashed_back.append(response.json())

    def rotate(self, operator: str, player: str) -> None:
        response = self._call(
            operator, "POST", "/api/s2s/fairness/rotate", {"playerExternalId": player}
        )
        assert response.status_code == 200, response.text
        for entry in self.settled:
            if (entry["operator"], entry["player"]) == (operator, player):
                entry["revealed"] = True

    def attempt_state(self, operator: str, player: str, action: str, attempt: int) -> dict:
        round_ = self.platform.events.repository.get(round_id(operator, player, action))
        return round_.attempts.get(attempt, {})


def play_everything(session: Session, wallet: ThreadedWalletServer, clock: ManualClock) -> None:
    ledger = wallet.ledger
    for operator, player, currency in (
        ("op-a", "p-1", "EUR"),
        ("op-a", "p-1", "USD"),
        ("op-a", "p-2", "EUR"),
        ("op-a", "p-2", "USD"),
        ("op-b", "n-1", "EUR"),
    ):
        ledger.fund(operator, player, currency, 10_000_000)
    # balance mode, EUR at 90 % (mostly wins: items to stake and cash back) and USD
    for i in range(6):
        session.play("op-a", "p-1", f"a-{i}", 1000, 9000)
    for i in range(2):
        session.play("op-a", "p-1", f"usd-{i}", 1100, 5000, currency="USD")
    # items mode: stake won items, one play each
    for i in range(2):
        items = session.unresolved.get(("op-a", "p-1"), [])
        if items:
            session.play_items("op-a", "p-1", f"items-{i}", [items[0]])
    items = session.unresolved.get(("op-a", "p-1"), [])
    if items:
        session.cash_out("op-a", "p-1", "cash-1", [items[0]])
    session.rotate("op-a", "p-1")
    # p-2: losses likely, a refused debit, an uncertain one retried, one never retried
    for i in range(2):
        session.play("op-a", "p-2", f"b-{i}", 1000, 1000)
    wallet.faults.configure(refuse_with="DAILY_LIMIT", times=1)
    session.play("op-a", "p-2", "refused", 1000, 5000, expect=422)
    session.voided += 1
    for action in ("uncertain-retried", "uncertain-open"):
        wallet.faults.configure(only_types={"wallet.debit"}, times=1, status_5xx=503)
        session.play("op-a", "p-2", action, 1000, 5000, expect=503)
        wait_until(
            lambda a=action: (
                session.attempt_state("op-a", "p-2", a, 1).get("state") == "rolled_back"
            ),
            timeout=15,
            what="the rollback acknowledged",
        )
    wallet.faults.configure()
    session.play("op-a", "p-2", "uncertain-retried", 1000, 5000)
    session.open += 1  # uncertain-open: rolled back, never retried
    # the no-loss operator: mostly losses, each awarding Nuggets worth the bet
    for i in range(3):
        session.play("op-b", "n-1", f"n-{i}", 1170, 1000)
    session.play("op-b", "n-1", "n-win", 1000, 9000)
    session.rotate("op-a", "p-2")
    session.rotate("op-b", "n-1")
    session.play("op-a", "p-1", "after-rotation", 1000, 5000)  # committed, not revealed
    # a rollback that fails for 24 h is escalated
    wallet.faults.configure(status_5xx=503, only_types={"wallet.debit", "wallet.rollback"})
    session.play("op-a", "p-2", "escalated", 1000, 5000, expect=503)
    session.open += 1
    clock.advance(24 * 3600 + 1)
    wait_until(
        lambda: session.attempt_state("op-a", "p-2", "escalated", 1).get("escalated"),
        timeout=20,
        tick=lambda: clock.advance(61),
        what="the escalation",
    )
    wallet.faults.configure()


def play_after_the_change(session: Session) -> None:
    session.play("op-a", "p-1", "changed-eur", 1000, 5000)  # committed (p-1 not rotated)
    session.play("op-a", "p-2", "changed-usd", 1100, 5000, currency="USD")
    session.play("op-a", "p-2", "changed-even", 1000, 9000)
    session.rotate("op-a", "p-2")


@dataclass
class Played:
    kind: str
    url: str
    schema: str | None
    directory: Path
    expected: dict[str, Any]
    escalated_key: str
    settled: list[dict[str, Any]]
    cashed_back: list[dict[str, Any]]
    copies: int = 0


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def played(request: pytest.FixtureRequest, tmp_path_factory) -> Iterator[Played]:
    directory = tmp_path_factory.mktemp(f"audit-{request.param}")
    urls = (
        iter([f"sqlite:///{directory}/store.db"])
        if request.param == "sqlite"
        else fresh_postgres_url()
    )
    url = next(urls)
    clock = ManualClock(start=float(int(time.time())))
    wallet = ThreadedWalletServer(dict(OUTBOUND)).start()
    platform = Platform(no_loss_config(url, wallet.url), clock=clock)
    platform.record_configuration()
    try:
        with LiveServer(create_app(platform)) as live:
            api = Api(live.url, clock)
            session = Session(api, platform)
            play_everything(session, wallet, clock)
            api.close()
        platform.close()
        # a restart with a changed configuration: the audit judges each round by its own
        platform = Platform(no_loss_config(url, wallet.url, changed=True), clock=clock)
        assert platform.record_configuration() > 0
        with LiveServer(create_app(platform)) as live:
            session.api = Api(live.url, clock)
            session.platform = platform
            session.rates["USD"] = "1.2"
            play_after_the_change(session)
            session.api.close()
        runner = ProjectionRunner(
            platform.events,
            platform.db,
            [HashChain(platform.events.recorder), Analytics()],
        )
        runner.catch_up()
        revealed = sum(1 for s in session.settled if s["revealed"])
        expected = {
            "roundsChecked": len(session.settled) + session.voided + session.open,
            "roundsSettled": len(session.settled),
            "roundsVoided": session.voided,
            "roundsOpen": session.open,
            "fairnessVerified": revealed,
            "fairnessCommitted": len(session.settled) - revealed,
            "eventsReplayed": count_events(platform),
            "itemsMode": sum(1 for s in session.settled if s["round"]["mode"] == "items"),
            "nuggets": sum(s["round"]["nuggetsAwardedMinor"] for s in session.settled),
            "cashedBack": len(session.cashed_back),
            "byOperator": {
                op: sum(1 for s in session.settled if s["operator"] == op) for op in KEYS
            },
        }
        escalated = f"r_{round_id('op-a', 'p-2', 'escalated').hex}:1"
    finally:
        platform.close()
        wallet.stop()
    yield Played(
        request.param,
        url,
        url.split("schema=")[1] if "schema=" in url else None,
        directory,
        expected,
        escalated,
        session.settled,
        session.cashed_back,
    )
    for _ in urls:  # the PostgreSQL generator drops its schema when resumed
        pass


def count_events(platform: Platform) -> int:
    count, position = 0, 0
    while batch := platform.events.recorder.select_notifications(position + 1, 1000):
        count += len(batch)
        position = batch[-1].id
    return count


def run_cli(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, Any]:
    capsys.readouterr()
    code = main(list(argv))
    out = capsys.readouterr().out.strip()
    try:
        return code, json.loads(out.splitlines()[-1])
    except (ValueError, IndexError):
        return code, out


def audit_json(capsys: pytest.CaptureFixture, url: str, *extra: str) -> tuple[int, dict]:
    return run_cli(capsys, "audit", "--database-url", url, "--json", "--no-progress", *extra)


# -- the clean log ------------------------------------------------------------------------------


def test_the_audit_of_real_plays_holds_with_exact_counts(played: Played, capsys) -> None:
    code, report = audit_json(capsys, played.url)
    assert report["violations"] == []
    assert code == 0
    expected = played.expected
    for key in (
        "roundsChecked",
        "roundsSettled",
        "roundsVoided",
        "roundsOpen",
        "fairnessVerified",
        "fairnessCommitted",
        "eventsReplayed",
    ):
        assert report[key] == expected[key], key
    assert expected["itemsMode"] >= 1, "no items-mode round was played (no win to stake)"
    assert expected["nuggets"] > 0 or expected["byOperator"]["op-b"] == 0
    assert report["fairnessVerified"] > 0 and report["fairnessCommitted"] >= 1
    assert report["openRollbacks"] == []
    assert [r["debitKey"] for r in report["escalatedRollbacks"]] == [played.escalated_key]
    assert report["chain"]["available"] is True
    assert report["chain"]["linksChecked"] == expected["eventsReplayed"]
    assert report["chain"]["unchained"] == 0
    assert report["cashoutsChecked"] == expected["cashedBack"]


def test_filters_choose_the_rounds_checked(played: Played, capsys) -> None:
    code, report = audit_json(capsys, played.url, "--operator", "op-b")
    assert code == 0
    assert report["roundsChecked"] == played.expected["byOperator"]["op-b"]
    assert report["eventsReplayed"] == played.expected["eventsReplayed"]
    code, report = audit_json(capsys, played.url, "--player", "p-2")
    assert code == 0
    assert report["roundsVoided"] == 1 and report["roundsOpen"] == 2
    tomorrow = (datetime.now(UTC) + timedelta(days=3)).date().isoformat()
    code, report = audit_json(capsys, played.url, "--since", tomorrow)
    assert code == 0 and report["roundsChecked"] == 0


def test_the_summary_is_printed_without_json(played: Played, capsys) -> None:
    capsys.readouterr()
    assert main(["audit", "--database-url", played.url]) == 0
    captured = capsys.readouterr()
    assert "OK: every rule holds" in captured.out
    assert f"rounds checked:      {played.expected['roundsChecked']}" in captured.out
    assert "escalated rollbacks (need a person): 1" in captured.out
    assert "audit: replayed up to event" in captured.err  # plain progress when not a TTY


def test_a_daily_chain_head_is_printed_and_checked(played: Played, capsys) -> None:
    today = datetime.now(UTC).date().isoformat()
    code, head = run_cli(
        capsys, "audit", "chain-head", "--day", today, "--database-url", played.url, "--json"
    )
    if head["position"] is None:  # the plays ran just before midnight UTC
        yesterday = (datetime.now(UTC) - timedelta(days=1)).date().isoformat()
        code, head = run_cli(
            capsys,
            "audit",
            "chain-head",
            "--day",
            yesterday,
            "--database-url",
            played.url,
            "--json",
        )
    assert code == 0
    assert head["matchesStored"] is True
    assert head["stored"]["link"] == head["link"]
    code, report = audit_json(
        capsys, played.url, "--expect-head", f"{head['position']}:{head['link']}"
    )
    assert code == 0 and report["chain"]["headsChecked"] == 1
    wrong = "0" * 64
    code, report = audit_json(capsys, played.url, "--expect-head", f"{head['position']}:{wrong}")
    assert code == 1
    assert [v["kind"] for v in report["violations"]] == ["chain_head"]


# -- tampered copies ----------------------------------------------------------------------------


class StoreCopy:
    """A copy of the played store, and direct access to its stored events."""

    def __init__(self, played: Played, name: str) -> None:
        self.played = played
        if played.kind == "sqlite":
            self.path = played.directory / f"{name}.db"
            source = sqlite3.connect(played.url.removeprefix("sqlite:///"))
            target = sqlite3.connect(self.path)
            source.backup(target)
            source.close()
            target.close()
            self.url = f"sqlite:///{self.path}"
        else:
            self.schema = f"{played.schema}_{name}"[:63]
            with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
                conn.execute(f'CREATE SCHEMA "{self.schema}"')
                tables = conn.execute(
                    "SELECT table_name FROM information_schema.tables "
                    "WHERE table_schema = %s AND table_type = 'BASE TABLE'",
                    (played.schema,),
                ).fetchall()
                for (table,) in tables:
                    conn.execute(
                        f'CREATE TABLE "{self.schema}"."{table}" AS '
                        f'TABLE "{played.schema}"."{table}"'
                    )
            self.url = f"{POSTGRES_URL}?schema={self.schema}"

    def close(self) -> None:
        if self.played.kind == "postgres":
            with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')

    def _execute(self, sql: str, params: tuple = ()) -> list[tuple]:
        # eventsourcing names the table stored_events on SQLite, {app name}_events on PostgreSQL
        if self.played.kind == "sqlite":
            conn = sqlite3.connect(self.path)
            try:
                rows = conn.execute(sql.replace("notification_id", "rowid"), params).fetchall()
                conn.commit()
                return rows
            finally:
                conn.close()
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(f'SET search_path TO "{self.schema}"')
            sql = sql.replace("stored_events", "upgrader_events").replace("?", "%s")
            cursor = conn.execute(sql, params)
            return cursor.fetchall() if cursor.description else []

    def events(self, topic_part: str) -> list[dict[str, Any]]:
        rows = self._execute(
            "SELECT notification_id, originator_id, originator_version, topic, state "
            "FROM stored_events ORDER BY notification_id"
        )
        return [
            {
                "id": row[0],
                "originator_id": uuid.UUID(str(row[1])),
                "version": row[2],
                "topic": row[3],
                "state": json.loads(bytes(row[4])),
            }
            for row in rows
            if topic_part in row[3]
        ]

    def update(self, event_id: int, state: dict[str, Any]) -> None:
        self._execute(
            "UPDATE stored_events SET state = ? WHERE notification_id = ?",
            (_bytes(state), event_id),
        )

    def delete(self, event_id: int) -> None:
        self._execute("DELETE FROM stored_events WHERE notification_id = ?", (event_id,))

    def insert(self, originator_id: uuid.UUID, version: int, topic: str, state: dict) -> None:
        if self.played.kind == "sqlite":
            self._execute(
                "INSERT INTO stored_events (originator_id, originator_version, topic, state) "
                "VALUES (?, ?, ?, ?)",
                (originator_id.hex, version, topic, _bytes(state)),
            )
        else:
            self._execute(
                "INSERT INTO stored_events (originator_id, originator_version, topic, state, "
                "notification_id) VALUES (?, ?, ?, ?, "
                "(SELECT MAX(notification_id) + 1 FROM stored_events))",
                (originator_id, version, topic, _bytes(state)),
            )


def _bytes(state: dict[str, Any]) -> bytes:
    return json.dumps(state, separators=(",", ":")).encode()


@pytest.fixture
def copy(played: Played) -> Iterator[StoreCopy]:
    played.copies += 1
    store = StoreCopy(played, f"c{played.copies}")
    yield store
    store.close()


def _settled_revealed(store: StoreCopy) -> dict[str, Any]:
    """The RoundSettled event of the first round whose seed pair was revealed."""
    revealed = {e["state"]["server_seed_hash"] for e in store.events(".SeedRotated")}
    for event in store.events(TOPIC + "RoundSettled"):
        if event["state"]["settlement"]["server_seed_hash"] in revealed:
            return event
    raise AssertionError("no settled round with a revealed seed")


def _opened(store: StoreCopy, **match: Any) -> dict[str, Any]:
    for event in store.events(TOPIC + "Opened"):
        opening = event["state"]["opening"]
        if all(opening.get(k) == v for k, v in match.items()):
            return event
    raise AssertionError(f"no opening with {match}")


def _tampered(capsys, store: StoreCopy) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    code, report = audit_json(capsys, store.url)
    assert code == 1, report
    assert report["violations"]
    chain = [v for v in report["violations"] if v["kind"].startswith(("chain_", "event_"))]
    return report, chain


def _kinds_of(report: dict[str, Any], **ref: Any) -> set[str]:
    ((key, value),) = ref.items()
    return {v["kind"] for v in report["violations"] if v.get(key) == value}


def test_a_changed_roll_is_reported_and_named_by_the_chain(played: Played, copy, capsys) -> None:
    event = _settled_revealed(copy)
    settlement = event["state"]["settlement"]
    opening = _opened(copy, public_id=f"r_{event['originator_id'].hex}")["state"]["opening"]
    rolled, chance = settlement["rolled_bps"], opening["chance_bps"]
    settlement["rolled_bps"] = next(  # another roll with the same outcome
        c for c in (rolled + 1, rolled - 1) if 0 <= c < 10000 and (c < chance) == (rolled < chance)
    )
    copy.update(event["id"], event["state"])
    # the operator's stored daily head, taken before the tampering, no longer matches
    _, head = run_cli(
        capsys,
        "audit",
        "chain-head",
        "--day",
        datetime.now(UTC).date().isoformat(),
        "--database-url",
        played.url,
        "--json",
    )
    report, chain = _tampered(capsys, copy)
    public_id = f"r_{event['originator_id'].hex}"
    assert _kinds_of(report, round=public_id) == {"roll"}
    assert chain[0]["kind"] == "chain_mismatch" and chain[0]["event"] == event["id"]
    if head["position"] is not None and head["position"] >= event["id"]:
        code, again = audit_json(
            capsys, copy.url, "--expect-head", f"{head['position']}:{head['link']}"
        )
        assert code == 1 and "chain_head" in {v["kind"] for v in again["violations"]}


def test_a_changed_chance_is_reported(played: Played, copy, capsys) -> None:
    event = _opened(copy, operator_id="op-a", chance_bps=9000, mode="balance")
    event["state"]["opening"]["chance_bps"] = 7500
    copy.update(event["id"], event["state"])
    report, chain = _tampered(capsys, copy)
    kinds = _kinds_of(report, round=event["state"]["opening"]["public_id"])
    assert "band" in kinds
    assert chain[0]["kind"] == "chain_mismatch" and chain[0]["event"] == event["id"]


def test_a_changed_bet_is_reported(played: Played, copy, capsys) -> None:
    event = _opened(copy, operator_id="op-a", wager_minor=1000, mode="balance")
    event["state"]["opening"]["wager_minor"] = 990
    copy.update(event["id"], event["state"])
    report, chain = _tampered(capsys, copy)
    kinds = _kinds_of(report, round=event["state"]["opening"]["public_id"])
    assert {"bet", "band"} <= kinds
    assert chain[0]["kind"] == "chain_mismatch" and chain[0]["event"] == event["id"]


def test_a_target_moved_out_of_band_is_reported(played: Played, copy, capsys) -> None:
    event = _opened(copy, operator_id="op-a", chance_bps=1000, mode="balance")
    opening = event["state"]["opening"]
    opening["target"] = {**opening["target"], "item_id": 11, "value_minor": 20000}
    opening["target_value_base_minor"] = 20000
    copy.update(event["id"], event["state"])
    report, chain = _tampered(capsys, copy)
    assert "target_out_of_band" in _kinds_of(report, round=opening["public_id"])
    assert chain[0]["kind"] == "chain_mismatch" and chain[0]["event"] == event["id"]


def test_a_deleted_event_is_reported(played: Played, copy, capsys) -> None:
    attempts = copy.events(TOPIC + "DebitAttempted")
    victim = attempts[len(attempts) // 2]
    copy.delete(victim["id"])
    report, chain = _tampered(capsys, copy)
    assert chain[0] == {
        "kind": "event_deleted",
        "event": victim["id"],
        "message": chain[0]["message"],
    }
    assert "no longer in the log" in chain[0]["message"]
    assert "version_gap" in {v["kind"] for v in report["violations"]}


def test_an_item_consumed_twice_is_reported(played: Played, copy, capsys) -> None:
    consumed = copy.events(":InventoryItem.ItemConsumed")[0]
    granted = next(
        e
        for e in copy.events(":InventoryItem.ItemGranted")
        if e["originator_id"] == consumed["originator_id"]
    )
    number = granted["state"]["grant"]["inventory_item_id"]
    last = max(
        e["version"]
        for e in copy.events(":InventoryItem.")
        if e["originator_id"] == consumed["originator_id"]
    )
    copy.insert(consumed["originator_id"], last + 1, consumed["topic"], consumed["state"])
    report, _ = _tampered(capsys, copy)
    assert "item_reused" in _kinds_of(report, item=number)
    assert report["chain"]["unchained"] == 1  # appended after the chain's end


def test_each_round_is_judged_by_the_settings_of_its_time(played: Played, copy, capsys) -> None:
    """Rounds pin the operator profile's version. A round played after the restart (fee
    400 bps) made to pin the first version (fee 500 bps) no longer agrees with it; a round
    made to pin a version recorded only after it was opened is reported as such."""
    openings = copy.events(TOPIC + "Opened")
    first, later = openings[0], next(e for e in openings if e["state"]["opening"]["fee_bps"] == 400)
    old_version = first["state"]["opening"]["config_version"]
    new_version = later["state"]["opening"]["config_version"]
    assert first["state"]["opening"]["fee_bps"] == 500 and new_version > old_version
    later["state"]["opening"]["config_version"] = old_version
    copy.update(later["id"], later["state"])
    first["state"]["opening"]["config_version"] = new_version
    copy.update(first["id"], first["state"])
    report, _ = _tampered(capsys, copy)
    assert {"fee", "band"} <= _kinds_of(report, round=later["state"]["opening"]["public_id"])
    assert _kinds_of(report, round=first["state"]["opening"]["public_id"]) == {"config"}

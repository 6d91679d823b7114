"""Box rounds in ``upgrader audit``, the analyst tables, ``upgrader report`` and
``upgrader verify --round`` (both stores).

The log (once per store): Upgrader plays and box purchases (``POST /api/s2s/purchase``)
over real HTTP with the reference wallet, of three box versions (one retired) in EUR and
USD, 1 to 3 boxes each, for two players; one player's seed is revealed, the other's is
not; the platform's own workers deliver the ``round_settled`` webhooks.

Every expected value is computed here: tickets with hmac/hashlib from the seed
(``reference_draw``, decisions §10), items from the ticket ranges of the tables written
out below, prices and values repriced half-even from the configured rates, ``oddsHash``
with hashlib, RTPs from their definitions (docs/analytics.md). The audit of the log is
clean with exact counts, and the wallet saw one debit of ``count x price`` with reason
``boxes.purchase`` per box round; each tampering of a COPY of the store (a ticket, the
item a reel names, a grant's item, a grant deleted, the ``oddsHash``, the payout, the bet)
is reported on its round or item with its kind, and the hash chain names each event.
``upgrader verify --round`` verifies the stored round's answer, its webhook and its round
history entry against the recorded catalogue, and names a forged item.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any

import pytest

from application.clock import ManualClock
from application.platform import Platform
from entrypoints.app import create_app
from entrypoints.cli import main
from ops.bench.projections import PerEvent
from ops.reference_operator.wallet import ThreadedWalletServer
from projections.analytics import Analytics
from projections.analytics_boxes import PUBLIC_TABLES
from projections.hash_chain import HashChain
from projections.runner import ProjectionRunner, rebuild
from tests.conftest import fresh_postgres_url
from tests.integration.test_audit import StoreCopy, audit_json, count_events
from tests.support.config import BASE, OUTBOUND, make_config, raw_config
from tests.support.live import Api, LiveServer
from tests.support.waiting import wait_until
from tests.unit.test_box_draw import reference_draw
from tests.unit.test_fairness_js import FAIRNESS_JS, NODE, needs_node

RATES = {"EUR": Decimal(1), "USD": Decimal("1.1")}
# (box, version) -> price (EUR minor), table [(item, weight)], active
VERSIONS = {
    (30, 1): (1500, [(1, 50), (3, 30), (11, 20)], False),
    (30, 2): (2000, [(1, 60), (5, 30), (9, 10)], True),
    (31, 1): (500, [(2, 7), (4, 2), (10, 1)], True),
}
ITEMS = {item["item_id"]: item for item in BASE["catalog"]["items"]}
# (player, action, box, version, count, currency); p-1's seed is revealed after these
P1_BOXES = [
    ("p-1", "bx-1", 30, 2, 1, "EUR"),
    ("p-1", "bx-2", 30, 2, 3, "EUR"),
    ("p-1", "bx-3", 31, 1, 2, "EUR"),
    ("p-1", "bx-usd", 30, 2, 2, "USD"),
    ("p-1", "bx-5", 30, 2, 1, "EUR"),
    ("p-1", "bx-6", 31, 1, 1, "EUR"),
    ("p-1", "bx-7", 30, 2, 2, "EUR"),
]
P2_BOXES = [("p-2", "bx-8", 31, 1, 1, "EUR")]


def reprice(base_minor: int, currency: str) -> int:
    return int((base_minor * RATES[currency]).quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


def odds_hash(box: int, version: int) -> str:
    price, table, _ = VERSIONS[(box, version)]
    items = ",".join(f"[{item},{weight}]" for item, weight in table)
    text = f'{{"boxId":{box},"boxVersionId":{version},"priceMinor":{price},"items":[{items}]}}'
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def ranges(box: int, version: int) -> list[tuple[int, int, int]]:
    """(item, first ticket, last ticket) in table order."""
    out, start = [], 0
    for item, weight in VERSIONS[(box, version)][1]:
        out.append((item, start, start + weight - 1))
        start += weight
    return out


def rtps(box: int, version: int) -> tuple[int, int]:
    """(rtpBps, face-value RTP bps) as decisions §10 and docs/analytics.md define them."""
    price, table, _ = VERSIONS[(box, version)]
    tickets = sum(w for _, w in table)
    cashback = sum(w * ITEMS[i]["value_minor"] * ITEMS[i]["cashback_bps"] for i, w in table)
    value = sum(w * ITEMS[i]["value_minor"] for i, w in table)
    return cashback // (tickets * price), 10000 * value // (tickets * price)


@dataclass
class Bought:
    """A box round as the test recomputes it."""

    operator: str
    player: str
    public_id: str
    box: int
    version: int
    count: int
    currency: str
    first_nonce: int
    client_seed: str
    server_seed_hash: str
    day: str
    tickets: list[int] = field(default_factory=list)
    items: list[int] = field(default_factory=list)
    answer: dict[str, Any] = field(default_factory=dict)

    @property
    def price(self) -> int:
        return reprice(VERSIONS[(self.box, self.version)][0], self.currency)

    @property
    def bet(self) -> int:
        return self.count * self.price

    @property
    def payout(self) -> int:
        return sum(reprice(ITEMS[i]["value_minor"], self.currency) for i in self.items)


@dataclass
class Log:
    kind: str
    url: str
    schema: str | None
    directory: Path
    boxes: list[Bought]
    upgrader: list[dict[str, Any]]
    revealed: set[str]
    events: int
    seed: str  # p-1's revealed server seed
    webhooks: list[dict[str, Any]]
    history: dict[str, Any]  # GET /api/s2s/rounds/{publicId} of bx-2
    debits: dict[str, tuple[int, str, str]]  # roundId -> the wallet's debit: amount, ...
    net_debits: int  # what the reference wallet holds as debited, net of rollbacks
    versions: dict[str, dict[str, Any]]  # box 30 version 2 as the catalogue answers it
    copies: int = 0


def box_config(url: str, wallet_url: str) -> Any:
    raw = raw_config(url)
    for (box, version), (price, table, active) in VERSIONS.items():
        raw["catalog"]["boxes"].append(
            {
                "box_id": box,
                "box_version_id": version,
                "name": {"en": f"Box {box}"},
                "price_minor": price,
                "items": [{"item_id": item, "weight": weight} for item, weight in table],
                "active": active,
            }
        )
    return make_config(url, raw, wallet_url=wallet_url, wallet_timeout_seconds=10)


def _s2s(api: Api, method: str, path: str, body: Any = None, params: Any = None) -> Any:
    response = api.s2s(method, path, json.dumps(body).encode() if body else b"", params=params)
    assert response.status_code == 200, response.text
    return response.json()


def _upgrader_play(api: Api, player: str, action: str, chance: int) -> dict[str, Any]:
    params = {"playerExternalId": player, "wagerMinor": 1000, "chanceBps": chance}
    target = _s2s(api, "GET", "/api/s2s/upgrader/prizes", params=params)["prizes"][0]["itemId"]
    body = {
        "playerExternalId": player,
        "clientActionId": action,
        "wagerMinor": 1000,
        "chanceBps": chance,
        "targetItemId": target,
    }
    return _s2s(api, "POST", "/api/s2s/upgrader/play", body)["round"]


def _buy(api: Api, spec: tuple) -> Bought:
    player, action, box, version, count, currency = spec
    body = {
        "playerExternalId": player,
        "clientActionId": action,
        "boxId": box,
        "boxVersionId": version,
        "count": count,
        "currency": currency,
    }
    answer = _s2s(api, "POST", "/api/s2s/purchase", body)
    r = answer["round"]
    return Bought(
        "op-a",
        player,
        r["publicId"],
        box,
        version,
        count,
        currency,
        r["fairness"]["nonce"],
        r["fairness"]["clientSeed"],
        r["fairness"]["serverSeedHash"],
        r["settledAt"][:10],
        answer=answer,
    )


def _history(api: Api, public_id: str) -> dict[str, Any] | None:
    response = api.s2s("GET", f"/api/s2s/rounds/{public_id}")
    return response.json() if response.status_code == 200 else None


def _draw(bought: Bought, server_seed: str) -> None:
    table = ranges(bought.box, bought.version)
    total = table[-1][2] + 1
    for k in range(bought.count):
        ticket = reference_draw(server_seed, bought.client_seed, bought.first_nonce + k, total)[0]
        bought.tickets.append(ticket)
        bought.items.append(next(item for item, lo, hi in table if lo <= ticket <= hi))


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def log(request: pytest.FixtureRequest, tmp_path_factory) -> Iterator[Log]:
    directory = tmp_path_factory.mktemp(f"boxes-{request.param}")
    urls = (
        iter([f"sqlite:///{directory}/store.db"])
        if request.param == "sqlite"
        else fresh_postgres_url()
    )
    url = next(urls)
    clock = ManualClock(start=float(int(time.time())))
    wallet = ThreadedWalletServer(dict(OUTBOUND)).start()
    wallet.ledger.fund("op-a", "p-1", "EUR", 1_000_000)
    wallet.ledger.fund("op-a", "p-2", "EUR", 1_000_000)
    wallet.ledger.fund("op-a", "p-1", "USD", 1_000_000)
    platform = Platform(box_config(url, wallet.url), clock=clock)
    platform.record_configuration()
    try:
        with LiveServer(create_app(platform)) as live:
            api = Api(live.url, clock)
            upgrader = [_upgrader_play(api, "p-1", "up-1", 9000)]
            boxes = [_buy(api, spec) for spec in P1_BOXES]
            rotated = _s2s(api, "POST", "/api/s2s/fairness/rotate", {"playerExternalId": "p-1"})
            revealed = rotated["previous"]["serverSeed"]
            upgrader.append(_upgrader_play(api, "p-2", "up-2", 5000))
            later = [_buy(api, spec) for spec in P2_BOXES]
            settled = len(boxes) + len(later) + len(upgrader)
            webhooks = wait_until(
                lambda: (
                    len(wallet.ledger.received_webhooks) == settled
                    and list(wallet.ledger.received_webhooks)
                ),
                timeout=20,
                what="a round_settled webhook per round",
            )
            versions = {
                currency: _s2s(
                    api, "GET", "/api/s2s/boxes/30/versions/2", params={"currency": currency}
                )
                for currency in RATES
            }
            history = wait_until(
                lambda: _history(api, boxes[1].public_id), timeout=20, what="round history"
            )
            api.close()
        debits = {
            r.body["roundId"]: (r.body["amountMinor"], r.body["currency"], r.body["reason"])
            for r in wallet.ledger.requests_of("wallet.debit")
        }
        with platform.db.transaction() as cur:  # p-2's seed is not revealed: the vault's
            cur.execute("SELECT server_seed FROM seed_vault")
            vault = {hashlib.sha256(r[0].encode()).hexdigest(): r[0] for r in cur.fetchall()}
        for bought in boxes + later:
            _draw(bought, vault[bought.server_seed_hash])
        assert {vault[b.server_seed_hash] for b in boxes} == {revealed}
        ProjectionRunner(
            platform.events, platform.db, [HashChain(platform.events.recorder), Analytics()]
        ).catch_up()
        net = wallet.ledger.net_debits("op-a")
        events = count_events(platform)
    finally:
        platform.close()
        wallet.stop()
    yield Log(
        request.param,
        url,
        url.split("schema=")[1] if "schema=" in url else None,
        directory,
        boxes + later,
        upgrader,
        {b.public_id for b in boxes} | {upgrader[0]["publicId"]},
        events,
        revealed,
        webhooks,
        history,
        debits,
        net,
        versions,
    )
    for _ in urls:  # the PostgreSQL generator drops its schema when resumed
        pass


def _rows(url: str, sql: str) -> list[tuple]:
    from application.audit.auditor import open_store

    events, db = open_store(url)
    try:
        with db.transaction() as cur:
            cur.execute(sql)
            return [
                tuple(int(v) if isinstance(v, Decimal) else v for v in r) for r in cur.fetchall()
            ]
    finally:
        db.close()
        events.close()


# -- the audit of honest rounds ------------------------------------------------------------


def test_the_audit_of_box_rounds_holds_with_exact_counts(log: Log, capsys) -> None:
    code, report = audit_json(capsys, log.url)
    assert report["violations"] == []
    assert code == 0
    rounds = len(log.boxes) + len(log.upgrader)
    verified = len(log.revealed)
    assert (report["roundsChecked"], report["roundsSettled"]) == (rounds, rounds)
    assert report["boxRoundsChecked"] == len(log.boxes)
    assert (report["fairnessVerified"], report["fairnessCommitted"]) == (
        verified,
        rounds - verified,
    )
    assert report["reelsVerified"] == sum(b.count for b in log.boxes if b.public_id in log.revealed)
    granted = sum(b.count for b in log.boxes) + sum(1 for u in log.upgrader if u["isWin"])
    assert report["itemsChecked"] == granted
    assert report["eventsReplayed"] == report["chain"]["linksChecked"] == log.events
    assert report["openRollbacks"] == report["escalatedRollbacks"] == []
    # the money: one debit per round, of count x price with the boxes' reason, all settled
    for b in log.boxes:
        assert log.debits[b.public_id] == (b.bet, b.currency, "boxes.purchase")
    assert log.net_debits == sum(b.bet for b in log.boxes) + sum(
        u["betMinor"] for u in log.upgrader
    )
    capsys.readouterr()
    assert main(["audit", "--database-url", log.url, "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert f"box rounds:          {len(log.boxes)} of them;" in printed
    assert "OK: every rule holds" in printed


def test_box_events_take_the_audits_fast_path(log: Log) -> None:
    """Box rounds' and the box catalogue's events decode with msgspec exactly as the
    mapper decodes them, and the audit reports the same either way."""
    from application.audit.auditor import Auditor, open_store
    from tests.integration.test_audit_fast_paths import notifications, typed

    events, db = open_store(log.url)
    try:
        reports = []
        for fast in (True, False):
            auditor = Auditor(events, db)
            auditor.decoder.enabled = fast
            report = auditor.run().as_json()
            del report["seconds"]
            reports.append(report)
            assert (auditor.decoder.fast, auditor.decoder.slow) == (
                (log.events, 0) if fast else (0, log.events)
            )
        assert reports[0] == reports[1] and reports[0]["ok"] is True
        decoder = Auditor(events, db).decoder
        topics = set()
        for notification in notifications(events):
            if "box" in notification.topic.lower() or "Round." in notification.topic:
                fast, slow = (
                    decoder.decode(notification),
                    events.mapper.to_domain_event(notification),
                )
                assert typed(vars(fast)) == typed(vars(slow)), notification.id
                topics.add(notification.topic.split(":")[1])
        assert {"BoxCatalogRecord.VersionRecorded", "Round.Opened", "Round.RoundSettled"} <= topics
    finally:
        db.close()
        events.close()


# -- tampered copies -------------------------------------------------------------------------


@pytest.fixture
def copy(log: Log) -> Iterator[StoreCopy]:
    log.copies += 1
    store = StoreCopy(log, f"c{log.copies}")  # type: ignore[arg-type]
    yield store
    store.close()


def _event_of(store: StoreCopy, topic: str, public_id: str) -> dict[str, Any]:
    return next(e for e in store.events(topic) if f"r_{e['originator_id'].hex}" == public_id)


def test_each_tampering_is_reported_on_its_round(log: Log, copy: StoreCopy, capsys) -> None:
    by_action = {b.public_id: b for b in log.boxes}
    bought = {spec[1]: b for spec, b in zip(P1_BOXES, log.boxes, strict=False)}
    changed: list[int] = []

    def settled(action: str) -> dict[str, Any]:
        return _event_of(copy, "Round.RoundSettled", bought[action].public_id)

    def update(event: dict[str, Any]) -> None:
        copy.update(event["id"], event["state"])
        changed.append(event["id"])

    # bx-1: its (revealed) ticket moved within its item's range: the seed gives another
    event = settled("bx-1")
    reel = event["state"]["settlement"]["reels"][0]
    _, lo, hi = next(r for r in ranges(30, 2) if r[0] == reel["item_id"])
    reel["ticket"] += 1 if reel["ticket"] < hi else -1
    assert lo <= reel["ticket"] <= hi
    update(event)
    # bx-2: reel 2 names another item than the one its ticket's range holds
    event = settled("bx-2")
    reel = event["state"]["settlement"]["reels"][1]
    other = next(i for i, (item, _, _) in enumerate(ranges(30, 2)) if item != reel["item_id"])
    reel["entry_index"], reel["item_id"] = other, ranges(30, 2)[other][0]
    update(event)
    # bx-3: the first item granted is another catalogue item
    grants = [
        e
        for e in copy.events("InventoryItem.ItemGranted")
        if e["state"]["grant"]["round_public_id"] == bought["bx-3"].public_id
    ]
    grants[0]["state"]["grant"]["item_id"] = 11
    update(grants[0])
    # bx-5: an oddsHash that is not the recorded one
    event = _event_of(copy, "Round.Opened", bought["bx-5"].public_id)
    event["state"]["opening"]["odds_hash"] = odds_hash(30, 1)
    update(event)
    # bx-6: a payout one cent above the won item's value
    event = settled("bx-6")
    event["state"]["settlement"]["payout_minor"] += 1
    update(event)
    # bx-7: one of its two grants deleted
    missing = next(
        e
        for e in copy.events("InventoryItem.ItemGranted")
        if e["state"]["grant"]["round_public_id"] == bought["bx-7"].public_id
    )
    copy.delete(missing["id"])
    # bx-usd: the bet is no longer count x price (the debit asked the right amount)
    event = _event_of(copy, "Round.Opened", bought["bx-usd"].public_id)
    event["state"]["opening"]["wager_minor"] -= 1
    update(event)

    code, report = audit_json(capsys, copy.url)
    assert code == 1

    def kinds(**ref: Any) -> set[str]:
        ((key, value),) = ref.items()
        return {v["kind"] for v in report["violations"] if v.get(key) == value}

    assert kinds(round=bought["bx-1"].public_id) == {"ticket"}
    assert kinds(round=bought["bx-2"].public_id) == {"ticket"}
    assert kinds(item=grants[0]["state"]["grant"]["inventory_item_id"]) == {"grant"}
    assert kinds(round=bought["bx-3"].public_id) == set()
    assert kinds(round=bought["bx-5"].public_id) == {"box"}
    assert kinds(round=bought["bx-6"].public_id) == {"payout"}
    assert kinds(round=bought["bx-7"].public_id) == {"grant"}
    assert kinds(round=bought["bx-usd"].public_id) == {"bet"}
    flagged = {v.get("round") for v in report["violations"]} - {None}
    assert flagged <= set(by_action)
    messages = {v["round"]: v["message"] for v in report["violations"] if "round" in v}
    assert "revealed server seed gives" in messages[bought["bx-1"].public_id]
    assert messages[bought["bx-7"].public_id] == "2 boxes opened, 1 item granted"
    chain = [v for v in report["violations"] if v["kind"].startswith(("chain_", "event_"))]
    assert {v["event"] for v in chain if v["kind"] == "chain_mismatch"} == set(changed)
    assert [v["event"] for v in chain if v["kind"] == "event_deleted"] == [missing["id"]]


# -- the analyst tables ------------------------------------------------------------------------


def _expected_boxes(log: Log) -> dict[tuple, list[int]]:
    """(operator, day, currency, box, version) -> rounds, opens, wagered, paid out, GGR,
    wagered (base), won items' cash-back value x 10000 (base), sum bet x rtpBps, sum bet x
    face-value RTP bps."""
    rows: dict[tuple, list[int]] = {}
    for b in log.boxes:
        key = (b.operator, b.day, b.currency, b.box, b.version)
        rtp, value_rtp = rtps(b.box, b.version)
        price_base = VERSIONS[(b.box, b.version)][0]
        cashback = sum(ITEMS[i]["value_minor"] * ITEMS[i]["cashback_bps"] for i in b.items)
        add = [1, b.count, b.bet, b.payout, b.bet - b.payout, b.count * price_base, cashback]
        add += [b.bet * rtp, b.bet * value_rtp]
        row = rows.setdefault(key, [0] * len(add))
        for index, value in enumerate(add):
            row[index] += value
    return rows


def test_the_box_fact_table_is_one_row_per_box_round(log: Log) -> None:
    facts = {
        row[0]: row[1:]
        for row in _rows(
            log.url,
            "SELECT public_id, player_external_id, currency, box_id, box_version_id, odds_hash, "
            "total_tickets, box_count, price_minor, bet_minor, payout_minor, rtp_bps "
            "FROM analytics_box_rounds",
        )
    }
    assert len(facts) == len(log.boxes)
    for b in log.boxes:
        assert facts[b.public_id] == (
            b.player,
            b.currency,
            b.box,
            b.version,
            odds_hash(b.box, b.version),
            ranges(b.box, b.version)[-1][2] + 1,
            b.count,
            b.price,
            b.bet,
            b.payout,
            rtps(b.box, b.version)[0],
        )


def test_box_daily_rows_are_exact(log: Log) -> None:
    rows = _rows(
        log.url,
        "SELECT operator_id, day, currency, box_id, box_version_id, rounds, opens, "
        "wagered_minor, paid_out_minor, ggr_minor, wagered_base_minor, "
        "won_cashback_bps_base_minor, theoretical_return_bps_minor, expected_return_bps_minor, "
        "realised_rtp, expected_rtp, realised_cashback_rtp, theoretical_rtp "
        "FROM analytics_box_daily",
    )
    expected = _expected_boxes(log)
    assert {row[:5] for row in rows} == set(expected)
    for row in rows:
        sums = expected[row[:5]]
        assert list(row[5:14]) == sums
        wagered, paid, base, cashback = sums[2], sums[3], sums[5], sums[6]
        rtp, value_rtp = rtps(row[3], row[4])
        assert row[14] == pytest.approx(paid / wagered, rel=1e-12)
        assert row[15] == pytest.approx(value_rtp / 10000, rel=1e-12)
        assert row[16] == pytest.approx(cashback / 10000 / base, rel=1e-12)
        assert row[17] == pytest.approx(rtp / 10000, rel=1e-12)
    # the theoretical RTP is the catalogue's: box 30 v2 at 90 % cash-back
    assert rtps(30, 2) == (7732, 8592)


def test_game_daily_rows_are_exact(log: Log) -> None:
    rows = _rows(
        log.url,
        "SELECT operator_id, day, currency, game, mode, rounds, wagered_minor, paid_out_minor, "
        "ggr_minor, realised_rtp FROM analytics_game_daily",
    )
    expected: dict[tuple, list[int]] = {}
    for b in log.boxes:
        row = expected.setdefault(("op-a", b.day, b.currency, "boxes", "balance"), [0, 0, 0])
        row[0], row[1], row[2] = row[0] + 1, row[1] + b.bet, row[2] + b.payout
    for u in log.upgrader:
        key = ("op-a", u["settledAt"][:10], u["currency"], "upgrader", u["mode"])
        row = expected.setdefault(key, [0, 0, 0])
        row[0], row[1], row[2] = row[0] + 1, row[1] + u["betMinor"], row[2] + u["payoutMinor"]
    assert {row[:5]: list(row[5:8]) for row in rows} == expected
    for row in rows:
        assert row[8] == row[6] - row[7]
        assert row[9] == pytest.approx(row[7] / row[6], rel=1e-12)
    # the Upgrader's own table still holds exactly its rounds
    (upgrader,) = _rows(log.url, "SELECT SUM(rounds) FROM analytics_daily")
    assert upgrader == (len(log.upgrader),)


def test_box_tables_rebuild_alike_event_by_event_and_in_batches(log: Log) -> None:
    from application.audit.auditor import open_store

    order = {
        "analytics_game_daily": "operator_id, day, currency, game, mode",
        "analytics_box_rounds": "round_id",
        "analytics_box_daily": "operator_id, day, currency, box_id, box_version_id",
    }
    queries = {t: f"SELECT * FROM {t} ORDER BY {order[t]}" for t in PUBLIC_TABLES}  # noqa: S608
    before = {t: _rows(log.url, sql) for t, sql in queries.items()}
    assert all(before.values())
    events, db = open_store(log.url)
    try:
        for projection, size in ((PerEvent(Analytics()), 500), (Analytics(), 7)):
            runner = ProjectionRunner(events, db, [projection], batch_size=size)
            rebuild(runner, "analytics")
            assert {t: _rows(log.url, sql) for t, sql in queries.items()} == before
    finally:
        db.close()
        events.close()


# -- the report ----------------------------------------------------------------------------------


def test_the_report_shows_games_and_boxes_and_plots_them(log: Log, capsys, tmp_path) -> None:
    days = sorted({b.day for b in log.boxes} | {u["settledAt"][:10] for u in log.upgrader})
    argv = ["report", "--database-url", log.url, "--from", days[0], "--to", days[-1]]
    capsys.readouterr()
    assert main([*argv, "--csv", "--rows", "boxes"]) == 0
    table = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    per_box: dict[tuple, list[int]] = {}
    for (operator, _, currency, box, version), sums in _expected_boxes(log).items():
        row = per_box.setdefault((operator, currency, box, version), [0] * len(sums))
        for index, value in enumerate(sums):
            row[index] += value
    assert [
        (r["operator_id"], r["currency"], int(r["box_id"]), int(r["box_version_id"])) for r in table
    ] == sorted(per_box)
    for r in table:
        sums = per_box[
            (r["operator_id"], r["currency"], int(r["box_id"]), int(r["box_version_id"]))
        ]
        assert [int(r[c]) for c in ("rounds", "opens", "wagered_minor", "paid_out_minor")] == sums[
            :4
        ]
        assert int(r["ggr_minor"]) == sums[4]
        assert r["realised_rtp"] == f"{sums[3] / sums[2]:.6f}"
        assert r["realised_cashback_rtp"] == f"{sums[6] / 10000 / sums[5]:.6f}"
        rtp, value_rtp = rtps(int(r["box_id"]), int(r["box_version_id"]))
        assert r["theoretical_rtp"] == f"{rtp / 10000:.6f}"
        assert r["expected_rtp"] == f"{value_rtp / 10000:.6f}"

    assert main([*argv, "--csv", "--rows", "games"]) == 0
    games = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert {(g["game"], g["currency"]): int(g["wagered_minor"]) for g in games} == {
        ("boxes", "EUR"): sum(b.bet for b in log.boxes if b.currency == "EUR"),
        ("boxes", "USD"): sum(b.bet for b in log.boxes if b.currency == "USD"),
        ("upgrader", "EUR"): sum(u["betMinor"] for u in log.upgrader),
    }

    plot, box_plot = tmp_path / "rtp.png", tmp_path / "boxes.png"
    assert main([*argv, "--plot", str(plot), "--box-plot", str(box_plot)]) == 0
    printed = capsys.readouterr()
    assert "Upgrader GGR and RTP" in printed.out
    assert "GGR and RTP per game" in printed.out and "Boxes: opens and RTP" in printed.out
    assert f"wrote the RTP plot to {box_plot}" in printed.out
    for path in (plot, box_plot):
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert path.stat().st_size > 10_000


# -- upgrader verify --round ---------------------------------------------------------------------


def _verify(capsys, log: Log, document: Any, path: Path) -> tuple[int, dict[str, Any]]:
    path.write_text(json.dumps(document), encoding="utf-8")
    capsys.readouterr()
    argv = ["verify", "--round", str(path), "--server-seed", log.seed]
    code = main([*argv, "--database-url", log.url, "--json"])
    return code, json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_verify_checks_a_stored_box_round_its_webhook_and_its_history(
    log: Log, capsys, tmp_path
) -> None:
    bought = log.boxes[1]  # bx-2: three boxes, p-1's seed revealed
    (hook,) = [h for h in log.webhooks if h["data"]["round"]["publicId"] == bought.public_id]
    assert hook["type"] == "round_settled"
    assert hook["data"]["facts"] == bought.answer["facts"]
    assert hook["data"]["round"] == bought.answer["round"]
    history = {k: v for k, v in log.history.items() if k not in ("reels", "wonItems")}
    assert history == bought.answer["round"]
    assert log.history["reels"] == bought.answer["facts"]["reels"]
    nonces = [bought.first_nonce + k for k in range(3)]
    claims = ["serverSeedHash", "recorded oddsHash", "oddsHash", "totalTickets"]
    per_reel = [
        f"reel {k + 1}{what}"
        for k in range(3)
        for what in (" nonce", f" (nonce {nonces[k]}) ticket", f" (nonce {nonces[k]}) itemId")
    ]
    for name, document, checked in (
        ("answer", bought.answer, claims + per_reel),
        ("webhook", hook, claims + per_reel),
        ("history", log.history, claims + per_reel),  # its reels beside the round
        ("round", bought.answer["round"], claims),  # the round alone: no reels to check
    ):
        code, result = _verify(capsys, log, document, tmp_path / f"{name}.json")
        assert (code, result["ok"]) == (0, True), (name, result)
        assert result["publicId"] == bought.public_id
        assert [c["claim"] for c in result["checks"]] == checked
        assert [(r["nonce"], r["ticket"], r["itemId"]) for r in result["reels"]] == list(
            zip(nonces, bought.tickets, bought.items, strict=True)
        )
        assert result["box"]["oddsHash"] == odds_hash(30, 2)
    forged = json.loads(json.dumps(bought.answer))
    reel = forged["facts"]["reels"][2]
    reel["itemId"] = next(i for i, _, _ in ranges(30, 2) if i != reel["itemId"])
    code, result = _verify(capsys, log, forged, tmp_path / "forged.json")
    assert (code, result["ok"]) == (1, False)
    assert [c["claim"] for c in result["checks"] if not c["ok"]] == [
        f"reel 3 (nonce {nonces[2]}) itemId"
    ]


NODE_DRIVER = r"""
const F = require(process.argv[2]);
const input = JSON.parse(require("fs").readFileSync(process.argv[3], "utf8"));
(async () => {
  const out = [];
  for (const [doc, version] of input.pairs) {
    const f = F.boxRoundFields(doc);
    out.push(await F.verifyBoxDraw({
      serverSeed: input.seed, clientSeed: f.boxClientSeed, nonce: f.boxNonce,
      count: f.boxCount, ranges: JSON.stringify(version), totalTickets: f.boxTotalTickets,
      serverSeedHash: f.boxServerSeedHash, oddsHash: f.boxOddsHash, nonces: f.boxNonces,
      tickets: f.boxTickets, items: f.boxItems,
    }));
  }
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(3); });
"""


@needs_node
def test_the_verifier_page_verifies_a_stored_box_round(log: Log, tmp_path) -> None:
    """fairness.js (verifier.html's script) under node: a purchase's answer pasted, the
    version as the catalogue answers it in EUR (the base currency: its oddsHash hashes
    again) and in USD (a repriced price: a note, not a failure); its round history entry
    pasted checks the same."""
    import subprocess

    bought = log.boxes[1]
    eur, usd = log.versions["EUR"], log.versions["USD"]
    pairs = [[bought.answer, eur], [bought.answer, usd], [log.history, eur]]
    document = {"pairs": pairs, "seed": log.seed}
    (tmp_path / "input.json").write_text(json.dumps(document), encoding="utf-8")
    (tmp_path / "driver.js").write_text(NODE_DRIVER, encoding="utf-8")
    done = subprocess.run(
        [NODE, str(tmp_path / "driver.js"), str(FAIRNESS_JS), str(tmp_path / "input.json")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    base, usd, history = json.loads(done.stdout)
    committed = odds_hash(30, 2)
    assert log.versions["EUR"]["oddsHash"] == log.versions["USD"]["oddsHash"] == committed
    assert log.versions["USD"]["priceMinor"] == reprice(2000, "USD") == 2200
    reels = [(int(r["nonce"]), r["ticket"], r["itemId"]) for r in base["reels"]]
    nonces = range(bought.first_nonce, bought.first_nonce + 3)
    assert reels == list(zip(nonces, bought.tickets, bought.items, strict=True))
    assert base["ok"] is True and base["notes"] == []
    assert [c["claim"] for c in base["checks"]] == [
        "serverSeedHash",
        "oddsHash",
        *(
            f"box {k + 1}{w}"
            for k, n in enumerate(nonces)
            for w in (" nonce", f" (nonce {n}) ticket", f" (nonce {n}) item")
        ),
        "odds table's oddsHash",
    ]
    assert all(c["ok"] for c in base["checks"]) and base["tableOddsHash"] == committed
    assert usd["ok"] is True and len(usd["checks"]) == len(base["checks"]) - 1
    assert usd["notes"] and "priceMinor 2200 USD" in usd["notes"][0]
    assert history == base  # a round history entry: the same reels and checks

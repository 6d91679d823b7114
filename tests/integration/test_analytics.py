"""The analyst read models and ``upgrader report`` on a log made by real plays (both stores).

The log is the auditor's (``test_audit.played``: both modes, USD and EUR, a no-loss
operator, a cash-back, wallet faults). The fact table equals the play answers, the daily
statistics equal a direct computation from the fact table, the items flow follows the
items, a rebuild (rows dropped, tracking position 0, caught up) equals the live tables,
and the report prints a table, CSV and a PNG plot.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from application.audit.auditor import open_store
from entrypoints.cli import main
from projections.analytics import Analytics
from projections.analytics_report import report_rows
from projections.analytics_tables import PUBLIC_TABLES
from projections.runner import ProjectionRunner, rebuild
from tests.integration.test_audit import Played
from tests.integration.test_audit import played as played

ORDER = {
    "analytics_rounds": "round_id",
    "analytics_item_flows": "position",
    "analytics_daily": "operator_id, day, currency, mode, chance_bps",
}
DIRECT_DAILY = """
    SELECT operator_id, settled_day, currency, mode, chance_bps,
           COUNT(*), SUM(is_win), SUM(bet_minor), SUM(payout_minor),
           SUM(bet_minor - payout_minor), SUM(nuggets_minor),
           SUM(nuggets_minor * nuggets_cost_percent),
           SUM(chance_bps * target_value_minor),
           SUM(bet_minor * (10000 - fee_bps)),
           SUM(bet_minor * ((10000 - fee_bps) * 100 - (10000 - chance_bps) * nuggets_cost_percent))
    FROM analytics_rounds
    GROUP BY operator_id, settled_day, currency, mode, chance_bps
    ORDER BY operator_id, settled_day, currency, mode, chance_bps
"""
DAILY = """
    SELECT operator_id, day, currency, mode, chance_bps,
           rounds, wins, wagered_minor, paid_out_minor, ggr_minor, nuggets_minor,
           nuggets_cost_pct_minor, expected_paid_bps_minor, theoretical_return_bps_minor,
           theoretical_item_return_ppm_minor
    FROM analytics_daily ORDER BY operator_id, day, currency, mode, chance_bps
"""


@pytest.fixture
def store(played: Played) -> Iterator[tuple[Any, Any, ProjectionRunner]]:
    events, db = open_store(played.url)
    runner = ProjectionRunner(events, db, [Analytics()])
    runner.catch_up("analytics")
    yield events, db, runner
    db.close()
    events.close()


def _rows(db: Any, sql: str, params: tuple = ()) -> list[tuple]:
    with db.transaction() as cur:
        cur.execute(sql, params)
        return [tuple(_plain(v) for v in row) for row in cur.fetchall()]


def _plain(value: Any) -> Any:
    """PostgreSQL's SUM of BIGINT is a Decimal: compare it as the int it is."""
    return int(value) if isinstance(value, Decimal) else value


def _days(played: Played) -> tuple[str, str]:
    settled = [s["round"]["settledAt"][:10] for s in played.settled]
    return min(settled), max(settled)


def test_the_fact_table_is_one_row_per_settled_round(played: Played, store) -> None:
    _, db, _ = store
    facts = {
        row[0]: row[1:]
        for row in _rows(
            db,
            "SELECT public_id, operator_id, player_external_id, mode, currency, bet_minor, "
            "payout_minor, chance_bps, fee_bps, is_win, target_item_id, target_value_minor, "
            "nuggets_minor, won_inventory_item_id, fx_rate FROM analytics_rounds",
        )
    }
    assert len(facts) == len(played.settled)
    for answer in played.settled:
        r = answer["round"]
        won = answer.get("wonItem") or {}
        assert facts[r["publicId"]] == (
            answer["operator"],
            answer["player"],
            r["mode"],
            r["currency"],
            r["betMinor"],
            r["payoutMinor"],
            r["chanceBps"],
            r["feeBps"],
            1 if r["isWin"] else 0,
            r["target"]["itemId"],
            r["target"]["valueMinor"],
            r["nuggetsAwardedMinor"],
            won.get("inventoryItemId"),
            answer["fxRate"],
        )


def test_daily_statistics_equal_a_direct_computation(played: Played, store) -> None:
    _, db, _ = store
    daily = _rows(db, DAILY)
    assert daily == _rows(db, DIRECT_DAILY)
    assert sum(row[5] for row in daily) == len(played.settled)
    # the ratios, from the facts: (1 - fee) and its items part (1 - fee) - (1 - p) * c
    weights: dict[tuple, list[int]] = {}
    for *key, bet, fee, c in _rows(
        db,
        "SELECT operator_id, settled_day, currency, mode, chance_bps, bet_minor, fee_bps, "
        "nuggets_cost_percent FROM analytics_rounds",
    ):
        sums = weights.setdefault(tuple(key), [0, 0, 0])
        sums[0] += bet
        sums[1] += bet * (10000 - fee)
        sums[2] += bet * ((10000 - fee) * 100 - (10000 - key[4]) * c)
    ratios = _rows(
        db,
        "SELECT operator_id, day, currency, mode, chance_bps, wagered_minor, paid_out_minor, "
        "realised_rtp, theoretical_rtp, theoretical_item_rtp, nuggets_cost_pct_minor, "
        "realised_rtp_with_nuggets FROM analytics_daily",
    )
    theoretical_seen = set()
    for *key, wagered, paid, realised, theoretical, item_rtp, cost, with_n in ratios:
        bets, theory, items = weights[tuple(key)]
        assert realised == pytest.approx(paid / wagered, rel=1e-12)
        assert with_n == pytest.approx((paid + cost / 100) / wagered, rel=1e-12)
        assert theoretical == pytest.approx(theory / 10000 / bets, rel=1e-12)
        assert item_rtp == pytest.approx(items / 1_000_000 / bets, rel=1e-12)
        if key[0] == "op-b":  # no-loss, c = 20 %: the items part is smaller
            assert item_rtp == pytest.approx(0.95 - (10000 - key[4]) / 10000 * 0.2, rel=1e-12)
        theoretical_seen.add(round(theoretical, 9))
    assert {0.95, 0.96} <= theoretical_seen  # fee 500 bps, then 400 after the config change


def test_the_items_flow_follows_every_item(played: Played, store) -> None:
    _, db, _ = store
    flows = _rows(
        db,
        "SELECT inventory_item_id, movement, value_minor, currency, amount_minor, "
        "amount_currency, reference FROM analytics_item_flows ORDER BY position",
    )
    granted = {row[0]: row for row in flows if row[1] == "granted"}
    wins = [a for a in played.settled if a.get("wonItem")]
    assert len(granted) == len(wins)
    for answer in wins:
        row = granted[answer["wonItem"]["inventoryItemId"]]
        assert row[2:7] == (
            answer["round"]["target"]["valueMinor"],
            answer["round"]["currency"],
            answer["round"]["target"]["valueMinor"],
            answer["round"]["currency"],
            answer["round"]["publicId"],
        )
    consumed = {row[0]: row for row in flows if row[1] == "consumed"}
    staked = [
        (item, a["round"]["publicId"])
        for a in played.settled
        if a["round"]["mode"] == "items"
        for item in a["stake"]["items"]
    ]
    assert len(consumed) == len(staked) >= 1
    for item, public_id in staked:
        row = consumed[item["inventoryItemId"]]
        assert (row[4], row[5], row[6]) == (item["valueMinor"], item["currency"], public_id)
    cashed = [row for row in flows if row[1] == "cashed_back"]
    assert [(row[0], row[4], row[5]) for row in cashed] == [
        (item["inventoryItemId"], item["cashbackMinor"], c["currency"])
        for c in played.cashed_back
        for item in c["items"]
    ]
    assert sum(row[4] for row in cashed) == sum(c["creditedMinor"] for c in played.cashed_back)


def test_a_rebuild_equals_the_live_tables(store) -> None:
    _, db, runner = store
    before = {t: _rows(db, f"SELECT * FROM {t} ORDER BY {ORDER[t]}") for t in PUBLIC_TABLES}  # noqa: S608
    assert all(before.values())
    with db.transaction() as cur:
        for table in PUBLIC_TABLES:
            cur.execute(f"DELETE FROM {table}")  # noqa: S608
    head = rebuild(runner, "analytics")
    assert runner.position("analytics") == head
    after = {t: _rows(db, f"SELECT * FROM {t} ORDER BY {ORDER[t]}") for t in PUBLIC_TABLES}  # noqa: S608
    assert after == before


def test_the_report_prints_a_table_csv_and_a_plot(
    played: Played,
    store,
    capsys,
    tmp_path,
) -> None:
    _, db, _ = store
    first, last = _days(played)
    rows = report_rows(db, first, last)
    assert sum(r["rounds"] for r in rows) == len(played.settled)
    assert {(r["operator_id"], r["currency"]) for r in rows} >= {("op-a", "EUR"), ("op-a", "USD")}
    for row in rows:
        assert row["ggr_minor"] == row["wagered_minor"] - row["paid_out_minor"]

    capsys.readouterr()
    plot = tmp_path / "rtp.png"
    argv = ["report", "--database-url", played.url, "--from", first, "--to", last]
    assert main([*argv, "--csv", "--plot", str(plot)]) == 0
    text = capsys.readouterr().out
    table = list(csv.DictReader(io.StringIO(text)))
    assert [(r["operator_id"], r["currency"], int(r["chance_bps"])) for r in table] == [
        (r["operator_id"], r["currency"], r["chance_bps"]) for r in rows
    ]
    assert [int(r["ggr_minor"]) for r in table] == [r["ggr_minor"] for r in rows]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert plot.stat().st_size > 10_000

    assert main([*argv, "--operator", "op-b"]) == 0
    printed = capsys.readouterr().out
    assert "Upgrader GGR and RTP" in printed and "op-b" in printed and "op-a" not in printed

    later = (datetime.now(UTC) + timedelta(days=5)).date().isoformat()
    assert main(["report", "--database-url", played.url, "--from", later, "--to", later]) == 0
    assert "no settled rounds" in capsys.readouterr().out

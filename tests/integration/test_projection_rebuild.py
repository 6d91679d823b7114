"""Rebuilding every read model from the event log yields the live tables, row for row."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from entrypoints.cli_ops import pending_wallet_operations
from projections.runner import rebuild, status, tables_of
from tests.support.live import Api
from tests.support.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]


def _play(api: Api, action: str, chance: int = 9000, target: int = 3, player: str = "p-1"):
    body = {
        "playerExternalId": player,
        "clientActionId": action,
        "wagerMinor": 1000,
        "chanceBps": chance,
        "targetItemId": target,
    }
    return api.s2s("POST", "/api/s2s/upgrader/play", json.dumps(body).encode())


def _snapshot(runtime, name: str) -> dict[str, list[tuple]]:
    tables = {}
    with runtime.platform.db.transaction() as cur:
        for table in tables_of(runtime.runner.projections[name]):
            cur.execute(f"SELECT * FROM {table}")  # noqa: S608
            # in full-row order: rows equal in the first column (analytics_daily's
            # operator) come in the order the store keeps them, which updates change
            tables[table] = sorted((tuple(row) for row in cur.fetchall()), key=repr)
    return tables


def _history(api: Api, wallet, clock) -> None:
    """A log with wins, losses, a refusal, an uncertain debit, items, cash-back, shipping,
    and cancels (one refused by the wallet, then accepted on a new cancel)."""
    wallet.ledger.fund("op-a", "p-1", "EUR", 1_000_000)
    won = []
    for index in range(12):
        answer = _play(api, f"w-{index}").json()
        if answer["wonItem"]:
            won.append(answer["wonItem"]["inventoryItemId"])
    assert len(won) >= 5
    _play(api, "poor", player="nobody")  # refused: INSUFFICIENT_FUNDS
    wallet.faults.configure(status_5xx=503, only_types={"wallet.debit"}, times=1)
    assert _play(api, "unsure").status_code == 503
    stake = {
        "playerExternalId": "p-1",
        "clientActionId": "stake",
        "stakeItemIds": won[:2],
        "chanceBps": 9000,
        "targetItemId": 6,
    }
    assert (
        api.s2s("POST", "/api/s2s/upgrader/play-with-items", json.dumps(stake).encode()).status_code
        == 200
    )
    cash = {"playerExternalId": "p-1", "clientActionId": "cash", "inventoryItemIds": won[2:4]}
    assert api.s2s("POST", "/api/s2s/cashout", json.dumps(cash).encode()).status_code == 200
    ship = {
        "playerExternalId": "p-1",
        "clientActionId": "ship",
        "inventoryItemIds": won[4:5],
        "address": {"name": "A. Player", "city": "Valletta"},
    }
    assert api.s2s("POST", "/api/s2s/shipping", json.dumps(ship).encode()).status_code == 200
    to_cancel = [_play(api, f"c-{n}").json()["round"]["publicId"] for n in range(2)]

    def cancel(public_id: str, action: str) -> int:
        body = json.dumps({"playerExternalId": "p-1", "clientActionId": action}).encode()
        return api.s2s("POST", f"/api/s2s/rounds/{public_id}/cancel", body).status_code

    wallet.faults.configure(refuse_with="LIMIT_REACHED", only_types={"wallet.credit"}, times=1)
    assert cancel(to_cancel[0], "k-1") == 422  # held
    assert (cancel(to_cancel[0], "k-2"), cancel(to_cancel[1], "k-3")) == (200, 200)


def test_rebuild_equals_live_tables_for_every_projection(api: Api, wallet, clock, live) -> None:
    runtime = live.server.config.app.state.runtime
    _history(api, wallet, clock)
    wait_until(lambda: not pending_wallet_operations(runtime), what="rollback settled")
    head = runtime.runner.head()
    runtime.runner.catch_up()
    for name in runtime.runner.projections:
        live_rows = _snapshot(runtime, name)
        assert any(live_rows.values()), name
        assert rebuild(runtime.runner, name) == head
        assert _snapshot(runtime, name) == live_rows, name
    assert {row["name"]: row["lag_events"] for row in status(runtime.runner, clock.now())} == {
        name: 0 for name in runtime.runner.projections
    }


def test_projections_cli_reports_and_rebuilds(
    api: Api, wallet, clock, live, platform, tmp_path: Path
) -> None:
    runtime = live.server.config.app.state.runtime
    wallet.ledger.fund("op-a", "p-1", "EUR", 100_000)
    assert _play(api, "one").status_code == 200
    runtime.runner.catch_up()
    config = tmp_path / "config.toml"
    config.write_text(_config_toml(platform))
    run = [sys.executable, "-m", "entrypoints.cli", "--config", str(config)]
    out = subprocess.run(
        [*run, "projections", "status", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    rows = {row["name"]: row for row in json.loads(out.stdout)}
    assert rows["round_history"]["lag_events"] == 0
    assert rows["round_history"]["position"] == runtime.runner.head()
    rebuilt = subprocess.run(
        [*run, "projections", "rebuild", "round_history"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert rebuilt.stdout.strip() == f"rebuilt round_history up to event {runtime.runner.head()}"
    wrong = subprocess.run(
        [*run, "projections", "rebuild", "nope"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert wrong.returncode == 2
    assert "no projection 'nope'" in wrong.stderr


def test_wallet_pending_lists_an_unanswered_debit(api: Api, wallet, live) -> None:
    runtime = live.server.config.app.state.runtime
    wallet.ledger.fund("op-a", "p-1", "EUR", 100_000)
    wallet.faults.configure(status_5xx=503, only_types={"wallet.debit", "wallet.rollback"})
    assert _play(api, "stuck").status_code == 503
    rows = wait_until(
        lambda: [r for r in pending_wallet_operations(runtime) if r[5] >= 1],
        what="a failed rollback try",
    )
    kind, key, amount, currency, state, _tries = rows[0][:6]
    assert (kind, amount, currency, state) == ("debit", 1000, "EUR", "uncertain")
    assert key.endswith(":1")
    assert "503" in rows[0][7]
    wallet.faults.reset()
    wait_until(
        lambda: not pending_wallet_operations(runtime),
        timeout=15,
        tick=lambda: api.clock.advance(61),
        what="rollback acknowledged",
    )


def _config_toml(platform) -> str:
    """The running platform's store, as a minimal config file for the CLI."""
    url = platform.config.service.database_url
    lines = ["[service]", f'database_url = "{url}"']
    return "\n".join(lines) + "\n"

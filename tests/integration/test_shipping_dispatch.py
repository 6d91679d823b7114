"""The fulfilment side: `upgrader shipping shipped` moves shipping_requested -> shipped."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.live import Api

ROOT = Path(__file__).resolve().parents[2]


def _won_item(api: Api, wallet) -> int:
    wallet.ledger.fund("op-a", "p-1", "EUR", 1_000_000)
    for index in range(60):
        body = {
            "playerExternalId": "p-1",
            "clientActionId": f"w-{index}",
            "wagerMinor": 1000,
            "chanceBps": 9000,
            "targetItemId": 3,
        }
        answer = api.s2s("POST", "/api/s2s/upgrader/play", json.dumps(body).encode()).json()
        if answer["wonItem"]:
            return answer["wonItem"]["inventoryItemId"]
    raise AssertionError("no win in 60 plays at 90%")


def _cli(platform, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    config = tmp_path / "config.toml"
    config.write_text(f'[service]\ndatabase_url = "{platform.config.service.database_url}"\n')
    return subprocess.run(
        [sys.executable, "-m", "entrypoints.cli", "--config", str(config), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def test_a_dispatched_shipment_marks_its_items_shipped_once(
    api: Api, wallet, platform, tmp_path: Path
) -> None:
    number = _won_item(api, wallet)
    ship = {
        "playerExternalId": "p-1",
        "clientActionId": "ship",
        "inventoryItemIds": [number],
        "address": {"name": "A. Player", "city": "Valletta"},
    }
    shipment = api.s2s("POST", "/api/s2s/shipping", json.dumps(ship).encode()).json()
    shipment_id = shipment["shipmentId"]

    done = _cli(platform, tmp_path, "shipping", "shipped", shipment_id)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"shipped {shipment_id}: items {number}"
    listed = api.s2s(
        "GET", "/api/s2s/inventory", params={"playerExternalId": "p-1", "state": "shipped"}
    ).json()["items"]
    assert [(i["inventoryItemId"], i["state"], i["cashbackMinor"]) for i in listed] == [
        (number, "shipped", None)
    ]

    again = _cli(platform, tmp_path, "shipping", "shipped", shipment_id)
    assert again.returncode == 1
    assert "SHIPMENT_ALREADY_DISPATCHED" in again.stderr
    unknown = _cli(platform, tmp_path, "shipping", "shipped", "s_" + "0" * 32)
    assert unknown.returncode == 1
    assert "NOT_FOUND" in unknown.stderr

    audit = _cli(platform, tmp_path, "audit", "--json", "--no-progress")
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert json.loads(audit.stdout)["violations"] == []

"""``upgrader wallet-check`` over real HTTP on loopback: the reference wallet passes every
check; a wallet with one deliberate defect fails exactly the check that names it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from entrypoints.cli import main
from ops.reference_operator.wallet import ThreadedWalletServer
from tests.support.broken_wallet import DEFECTS, BrokenWallet, serving
from tests.support.live import free_port

ROOT = Path(__file__).resolve().parents[2]
SECRET = "check-outbound-secret"
ALL_CHECKS = [
    "balance",
    "credit",
    "credit replay",
    "debit",
    "debit replay",
    "rollback of a debit",
    "rollback replay",
    "rollback of an unseen debit",
    "debit after its rollback",
    "insufficient funds",
    "blocked player",
    "bad signature",
    "missing signature",
    "stale timestamp",
    "tampered body",
    "unsigned balance read",
    "balance restored",
    "timing",
]


def check(
    capsys: pytest.CaptureFixture[str], url: str, *extra: str
) -> tuple[int, dict[str, dict[str, str]]]:
    """Run the command in this process; (exit status, {check name: row})."""
    status = main(["wallet-check", url, "--secret", SECRET, "--operator", "demo", "--json", *extra])
    printed = json.loads(capsys.readouterr().out)
    return status, {row["name"]: row for row in printed["checks"]}


@pytest.fixture(params=[False, True], ids=["strict-refusals", "balance-in-refusals"])
def reference(request: pytest.FixtureRequest) -> Iterator[ThreadedWalletServer]:
    with ThreadedWalletServer({"demo": SECRET}, balance_in_refusals=request.param) as wallet:
        wallet.ledger.block("demo", "blocked-1")
        yield wallet


def test_the_reference_wallet_passes_every_check_and_ends_where_it_started(
    capsys: pytest.CaptureFixture[str], reference: ThreadedWalletServer
) -> None:
    reference.ledger.fund("demo", "tester", "EUR", 5_000)
    status, rows = check(
        capsys, reference.url, "--player", "tester", "--blocked-player", "blocked-1"
    )
    assert list(rows) == ALL_CHECKS
    assert {name: row["status"] for name, row in rows.items()} == dict.fromkeys(ALL_CHECKS, "pass")
    assert status == 0
    assert rows["balance"]["reason"] == "5000 EUR"
    assert rows["credit"]["reason"] == "accepted; balance 5100"
    assert rows["debit after its rollback"]["reason"] == "refused ROLLED_BACK"
    assert rows["insufficient funds"]["reason"] == "refused INSUFFICIENT_FUNDS"
    assert rows["bad signature"]["reason"] == "HTTP 401 (signed with another secret)"
    assert rows["balance restored"]["reason"] == "back at 5000"
    ledger = reference.ledger
    assert ledger.balance("demo", "tester", "EUR") == 5_000
    assert ledger.balance("demo", "blocked-1", "EUR") == 0
    assert len(ledger.tombstoned_keys("demo")) == 1
    assert len(ledger.auth_failures) == 5  # the five forged calls, all refused


def test_a_new_player_is_credited_first_and_a_missing_blocked_player_is_a_skip(
    capsys: pytest.CaptureFixture[str], reference: ThreadedWalletServer
) -> None:
    status, rows = check(capsys, reference.url)
    assert status == 0
    assert rows["blocked player"] == {
        "name": "blocked player",
        "status": "skip",
        "reason": "no --blocked-player named",
    }
    assert [n for n, row in rows.items() if row["status"] != "pass"] == ["blocked player"]
    (player,) = {r.body["playerExternalId"] for r in reference.ledger.requests_of("wallet.credit")}
    assert player.startswith("wallet-check-")
    assert reference.ledger.balance("demo", player, "EUR") == 0


EXPECTED_FAILURES = {
    "replays_debits": ({"debit replay"}, "on replay"),
    "accepts_forgeries": (
        {
            "bad signature",
            "missing signature",
            "stale timestamp",
            "tampered body",
            "unsigned balance read",
        },
        "answered HTTP 200",
    ),
    "forgets_tombstones": ({"debit after its rollback"}, "accepted, expected a refusal"),
    "float_balance": ({"balance"}, "Expected `int`, got `float` - at `balanceMinor`"),
    "skips_rollbacks": ({"rollback of a debit"}, "expected"),
    "slow_debit": ({"timing"}, "1 calls over 0.3 s (wallet.debit)"),
}


@pytest.mark.parametrize("defect", DEFECTS)
def test_each_defect_fails_the_check_that_names_it(
    capsys: pytest.CaptureFixture[str], defect: str
) -> None:
    wallet = BrokenWallet({"demo": SECRET}, defect, stall_seconds=0.6)
    wallet.ledger.block("demo", "blocked-1")
    with serving(wallet):
        status, rows = check(
            capsys, wallet.url, "--blocked-player", "blocked-1", "--timeout", "0.3"
        )
    failing, words = EXPECTED_FAILURES[defect]
    assert {name for name, row in rows.items() if row["status"] != "pass"} == failing
    assert all(words in rows[name]["reason"] for name in failing), rows
    assert status == 1


def test_defect_reasons_say_what_went_wrong(capsys: pytest.CaptureFixture[str]) -> None:
    wallet = BrokenWallet({"demo": SECRET}, "replays_debits")
    wallet.ledger.fund("demo", "rich", "EUR", 1_000)
    with serving(wallet):
        _, rows = check(capsys, wallet.url, "--player", "rich")
    assert rows["debit replay"]["reason"] == "balanceAfterMinor 900 on replay, 1000 the first time"
    assert wallet.ledger.balance("demo", "rich", "EUR") == 1_000  # restored all the same
    wallet = BrokenWallet({"demo": SECRET}, "skips_rollbacks")
    with serving(wallet):
        _, rows = check(capsys, wallet.url)
    assert rows["rollback of a debit"]["reason"] == (
        "balanceAfterMinor 0, expected 100 (the debit given back)"
    )


def test_a_wrong_secret_fails_with_a_hint(
    capsys: pytest.CaptureFixture[str], reference: ThreadedWalletServer
) -> None:
    status = main(["wallet-check", reference.url, "--secret", "not-it", "--operator", "demo"])
    out = capsys.readouterr().out
    assert status == 1
    assert "another secret" in out
    assert reference.ledger.requests == []  # nothing got past the signature check


def test_usage_errors_and_an_unreachable_url_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    closed = f"http://127.0.0.1:{free_port()}/wallet"
    cases = [
        (["wallet-check", closed, "--secret", SECRET, "--operator", "demo"], "cannot reach"),
        (["wallet-check", closed, "--secret", SECRET], "--secret needs --operator"),
        (["wallet-check", "ftp://wallet", "--secret", SECRET, "--operator", "d"], "not an http"),
        (
            ["wallet-check", closed, "--secret", "env:NO_SUCH_VARIABLE_X", "--operator", "d"],
            "is not set",
        ),
    ]
    for argv, words in cases:
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("upgrader wallet-check: ") and words in err
        assert err.count("\n") == 1


def test_the_command_reads_url_secret_and_currency_from_the_configuration(
    tmp_path: Path,
) -> None:
    demo = (ROOT / "ops" / "demo" / "config.toml").read_text()
    with ThreadedWalletServer({"demo": "change-me-outbound"}) as wallet:
        config = tmp_path / "config.toml"
        config.write_text(demo.replace("http://127.0.0.1:8001/wallet", wallet.url))
        done = subprocess.run(
            [sys.executable, "-m", "entrypoints.cli", "wallet-check", "--config", str(config)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "17 of 18 checks pass, 0 fail, 1 skipped" in done.stdout
    assert "change-me-outbound" not in done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert {r.body["currency"] for r in wallet.ledger.requests} == {"EUR"}

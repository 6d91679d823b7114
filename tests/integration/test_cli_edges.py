"""The operations commands at their edges: a store that is not there (exit 2, one line,
nothing created), tables readable at 80 columns and an empty queue said in words, the
report's footnote, and help on every option of every subcommand."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from application.clock import ManualClock
from application.platform import Platform
from entrypoints import cli
from entrypoints.cli_ops import pending_wallet_operations
from ops.reference_operator.wallet import ThreadedWalletServer
from tests.support.ledger import open_uncertain_attempts
from tests.support.live import Api, LiveServer, free_port
from tests.support.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
OP = "op-a"
STORE_COMMANDS = [
    ["audit"],
    ["audit", "chain-head", "--day", "2026-01-01"],
    ["report"],
    ["projections", "status"],
    ["projections", "rebuild"],
    ["wallet", "pending"],
    ["outbox", "pending"],
    ["outbox", "dead"],
    ["outbox", "redeliver", "--all-dead"],
    ["shipping", "shipped", "s_1"],
]


def _one_line(text: str) -> str:
    assert text.endswith("\n") and text.count("\n") == 1, text
    return text.rstrip("\n")


@pytest.mark.parametrize("command", STORE_COMMANDS, ids=" ".join)
def test_a_sqlite_file_that_is_not_there_is_exit_2_and_is_not_created(
    command: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    missing = tmp_path / "nowhere" / "upgrader.db"
    monkeypatch.setenv("UPGRADER_DATABASE_URL", f"sqlite:///{missing}")
    assert cli.main(command) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert _one_line(captured.err) == (
        f"upgrader {command[0]}: no database at {missing} (database_url sqlite:///{missing}); "
        "start the platform on it first, or name the store with --config or --database-url"
    )
    assert not missing.parent.exists()


def test_an_unreachable_postgresql_is_one_line_and_exit_2() -> None:
    url = f"postgresql://postgres@127.0.0.1:{free_port()}/upgrader"
    for command in (["audit", "--database-url", url], ["report", "--database-url", url]):
        done = subprocess.run(
            [sys.executable, "-m", "entrypoints.cli", *command],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 2
        assert done.stdout == ""
        line = _one_line(done.stderr)
        assert line.startswith(f"upgrader {command[0]}: cannot reach PostgreSQL at postgres@")
        assert "Connection refused" in line


@pytest.mark.postgres
def test_a_postgresql_schema_that_is_not_there_is_exit_2(
    postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["audit", "--database-url", postgres_url]) == 2
    err = _one_line(capsys.readouterr().err)
    assert err.startswith("upgrader audit: no schema 't_") and "in PostgreSQL at" in err


# -- 80 columns, empty queues, the report -----------------------------------------------


@pytest.fixture
def commands(
    platform: Platform, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Iterator[None]:
    """The commands read the test platform's store, and print for an 80-column pipe."""
    for where in ("application.config.load.load_config", "entrypoints.cli_ops.load_config"):
        monkeypatch.setattr(where, lambda path=None: platform.config)
    monkeypatch.setenv("COLUMNS", "80")
    yield


def run(capsys: pytest.CaptureFixture[str], *command: str, width: int = 80) -> list[str]:
    assert cli.main(list(command)) == 0
    lines = capsys.readouterr().out.splitlines()
    too_wide = [line for line in lines if len(line) > width]
    assert too_wide == [], "\n".join(lines)
    return lines


def _play(api: Api, action: str) -> int:
    body = {
        "playerExternalId": "p-1",
        "clientActionId": action,
        "wagerMinor": 1000,
        "chanceBps": 5000,
        "targetItemId": 7,
    }
    return api.s2s("POST", "/api/s2s/upgrader/play", json.dumps(body).encode()).status_code


@pytest.mark.usefixtures("commands")
def test_empty_queues_say_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "wallet", "pending") == [
        "nothing pending: the wallet has confirmed every debit and credit"
    ]
    assert run(capsys, "outbox", "pending") == [
        "nothing pending: every round_settled webhook was delivered"
    ]
    assert run(capsys, "outbox", "dead") == ["no dead webhooks"]
    assert cli.main(["wallet", "pending", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


@pytest.mark.usefixtures("commands")
def test_pending_operations_and_webhooks_fit_80_columns_with_their_ids_whole(
    api: Api,
    live: LiveServer,
    platform: Platform,
    wallet: ThreadedWalletServer,
    clock: ManualClock,
    capsys: pytest.CaptureFixture[str],
) -> None:
    wallet.ledger.fund(OP, "p-1", "EUR", 100_000)
    wallet.faults.configure(webhook_status=503)
    assert _play(api, "settled") == 200
    wallet.faults.configure(
        webhook_status=503, status_5xx=503, only_types={"wallet.debit", "wallet.rollback"}
    )
    assert _play(api, "uncertain") == 503
    runtime = live.server.config.app.state.runtime
    (pending,) = wait_until(
        lambda: [r for r in pending_wallet_operations(runtime) if r[5] >= 1],
        what="a rollback tried and failed",
    )
    key = pending[1]
    lines = run(capsys, "wallet", "pending")
    assert lines[0].strip() == "Wallet operations awaiting the wallet (1)"
    assert any(f"│ {key} " in line for line in lines), "\n".join(lines)
    text = "\n".join(lines)
    for words in ("1000 EUR", "uncertain", "debit, attempted", "next try", "last error:"):
        assert words in text
    wait_until(
        lambda: "webhook" in "".join(run(capsys, "outbox", "pending")[:1]),
        what="the webhook tried",
    )
    hook_lines = run(capsys, "outbox", "pending")
    assert hook_lines[0].strip() == "Pending webhooks (1 shown)"
    hooks = platform.db.transaction
    with hooks() as cur:
        cur.execute("SELECT webhook_id FROM webhook_outbox")
        ids = [row[0] for row in cur.fetchall()]
    for hook in ids:
        assert any(f"│ {hook} " in line for line in hook_lines), "\n".join(hook_lines)
    assert any("│ op-a / p-1 " in line for line in hook_lines), "\n".join(hook_lines)

    report = run(capsys, "report", width=140)  # piped, the report is 140 wide
    assert (
        "RTP = the value of the items paid out / the amount wagered; theoretical = the RTP "
        "at the top of the target band, (10000 - fee) / 10000 less the Nuggets' part on "
        "no-loss; expected = the RTP expected for the targets the players chose."
    ) in " ".join(" ".join(report).split())

    wallet.faults.configure()
    wait_until(
        lambda: open_uncertain_attempts(platform) == 0,
        timeout=20,
        what="the rollback done",
        tick=lambda: clock.advance(5),
    )


# -- help on every option -------------------------------------------------------------


def _without_help(parser: argparse.ArgumentParser, path: str) -> Iterator[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                if not helps.get(name):
                    yield f"{path} {name} (the subcommand)"
                yield from _without_help(sub, f"{path} {name}")
        elif not isinstance(action, argparse._HelpAction) and (
            not action.help or action.help == argparse.SUPPRESS
        ):
            yield f"{path} {'/'.join(action.option_strings) or action.dest}"


def test_every_option_of_every_subcommand_has_help() -> None:
    parser = cli.build_parser()
    assert list(_without_help(parser, "upgrader")) == []
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert {"audit", "report", "wallet-check", "demo", "outbox"} <= set(commands.choices)


def test_a_store_lost_while_a_command_runs_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from eventsourcing.persistence import OperationalError

    def lost(args: argparse.Namespace) -> int:
        raise OperationalError("couldn't get a connection after 2.00 sec")

    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    commands.choices["check-config"].set_defaults(run=lost)
    assert cli.main(["check-config"]) == 2
    assert _one_line(capsys.readouterr().err) == (
        "upgrader check-config: the database cannot be reached: "
        "couldn't get a connection after 2.00 sec"
    )

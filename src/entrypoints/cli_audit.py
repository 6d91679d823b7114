"""``upgrader audit``: replay the event log and re-check every round, item and link.

    upgrader audit [--operator ID] [--player ID] [--since 2025-01-01] [--json]
                   [--expect-head POSITION:LINK ...] [--no-chain]
                   [--config FILE | --database-url URL]
    upgrader audit chain-head --day YYYY-MM-DD [--json] [--config FILE | --database-url URL]

The whole log is replayed in notification order (the filters choose which rounds and
items are checked; configuration, seeds and items are always replayed from the start).
A progress bar is drawn on a terminal (stderr); piped, a plain line every tenth.

Exit status: 0 when every rule holds, 1 when any violation was found, 2 on bad input.
``--json`` prints ``{"roundsChecked", "fairnessVerified", "fairnessCommitted",
"eventsReplayed", "boxRoundsChecked", "reelsVerified", "violations": [{"kind",
"round"|"item"|"event", "message"}], ...}``. Box rounds (decisions §10) are checked by
application/audit/boxes.py: a round counts as verified when all its reels are.

``chain-head`` recomputes the hash chain from the log and prints the last link of a UTC
day (position, link, number of events that day), and compares it with the
``chain_heads`` row the projection stored: the value an operator keeps outside the
platform and later passes back as ``--expect-head POSITION:LINK``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from typing import Any

from entrypoints.cli_args import command, database_url

EXIT_OK = 0
EXIT_VIOLATIONS = 1
EXIT_USAGE = 2
SHOWN_VIOLATIONS = 50
_HEAD = re.compile(r"^(\d+):([0-9a-fA-F]{64})$")
_DAY = re.compile(r"^\d{4}-\d\d-\d\d$")


def _expected_heads(values: list[str]) -> dict[int, str]:
    heads: dict[int, str] = {}
    for value in values:
        match = _HEAD.match(value.strip())
        if match is None:
            raise ValueError(f"--expect-head must be POSITION:LINK (64 hex), got {value!r}")
        heads[int(match.group(1))] = match.group(2).lower()
    return heads


def _progress(enabled: bool) -> tuple[Callable[[int, int], None] | None, Callable[[], None]]:
    """A progress callback (rich bar on a terminal, plain lines otherwise) and its closer."""
    if not enabled:
        return None, lambda: None
    from rich.console import Console

    console = Console(stderr=True)
    if console.is_terminal:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        bar = Progress(
            TextColumn("replaying events"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
        )
        task = bar.add_task("replay", total=None)
        bar.start()

        def advance(position: int, head: int) -> None:
            bar.update(task, completed=position, total=head)

        return advance, bar.stop
    shown = {"tenth": -1}

    def plain(position: int, head: int) -> None:
        tenth = (10 * position) // head if head else 10
        if tenth != shown["tenth"]:
            shown["tenth"] = tenth
            print(f"audit: replayed up to event {position} of {head}", file=sys.stderr)

    return plain, lambda: None


def _print_summary(report: Any) -> None:
    data = report.as_json()
    chain = data["chain"]
    print("upgrader audit")
    seconds = data["seconds"]
    rate = f", {data['eventsReplayed'] / seconds:,.0f} events/s" if seconds > 0 else ""
    print(f"  events replayed:     {data['eventsReplayed']} ({seconds:.2f} s{rate})")
    print(
        f"  rounds checked:      {data['roundsChecked']} (settled {data['roundsSettled']}, "
        f"voided {data['roundsVoided']}, open {data['roundsOpen']})"
    )
    if data["boxRoundsChecked"]:
        print(
            f"  box rounds:          {data['boxRoundsChecked']} of them; "
            f"{data['reelsVerified']} reels drawn again from revealed seeds"
        )
    print(f"  fairness verified:   {data['fairnessVerified']} (revealed seeds, draws recomputed)")
    print(f"  fairness committed:  {data['fairnessCommitted']} (seed not yet revealed)")
    print(f"  items checked:       {data['itemsChecked']}; cash-backs {data['cashoutsChecked']}")
    if chain.get("available"):
        print(
            f"  hash chain:          {chain['linksChecked']} links checked up to event "
            f"{chain['chainEnd']}; {chain['unchained']} newer events not chained yet"
        )
    else:
        print("  hash chain:          no event_chain table (projection never ran): not checked")
    if chain.get("headsChecked"):
        print(f"  stored heads:        {chain['headsChecked']} checked")
    for title, rows in (
        ("open rollbacks (still being retried)", data["openRollbacks"]),
        ("escalated rollbacks (need a person)", data["escalatedRollbacks"]),
    ):
        if rows:
            print(f"  {title}: {len(rows)}")
            for row in rows:
                print(
                    f"    {row['debitKey']}  {row['amountMinor']} {row['currency']}  "
                    f"({row['state']})"
                )
    violations = data["violations"]
    if not violations:
        print("OK: every rule holds")
        return
    print(f"VIOLATIONS: {len(violations)}")
    for violation in violations[:SHOWN_VIOLATIONS]:
        where = next(f"{k} {violation[k]}" for k in ("round", "item", "event") if k in violation)
        print(f"  [{violation['kind']}] {where}: {violation['message']}")
    if len(violations) > SHOWN_VIOLATIONS:
        print(f"  ... and {len(violations) - SHOWN_VIOLATIONS} more (--json lists all)")


def _run(args: argparse.Namespace) -> int:
    if getattr(args, "audit_action", None) == "chain-head":
        return _chain_head(args)
    from application.audit.auditor import Auditor, open_store
    from application.audit.report import AuditScope, parse_since

    try:
        since = parse_since(args.since) if args.since else None
        heads = _expected_heads(args.expect_head or [])
        url = database_url(args)
    except ValueError as exc:
        print(f"upgrader audit: {exc}", file=sys.stderr)
        return EXIT_USAGE
    events, db = open_store(url)
    advance, stop = _progress(not args.no_progress)
    try:
        auditor = Auditor(
            events,
            db,
            AuditScope(operator_id=args.operator, player=args.player, since=since),
            expected_heads=heads,
            check_chain=not args.no_chain,
        )
        report = auditor.run(advance)
    finally:
        stop()
        db.close()
        events.close()
    if args.json:
        print(json.dumps(report.as_json()))
    else:
        _print_summary(report)
    return EXIT_OK if report.ok else EXIT_VIOLATIONS


def _chain_head(args: argparse.Namespace) -> int:
    from application.audit.auditor import open_store
    from application.audit.chain import chain_head_of_day
    from projections.hash_chain import stored_head

    if not _DAY.match(args.day or ""):
        print("upgrader audit chain-head: --day must be YYYY-MM-DD", file=sys.stderr)
        return EXIT_USAGE
    events, db = open_store(database_url(args))
    try:
        head = chain_head_of_day(events, args.day)
        stored = stored_head(db, args.day)
    finally:
        db.close()
        events.close()
    answer: dict[str, Any] = head or {"day": args.day, "position": None, "link": None, "events": 0}
    answer["stored"] = (
        None if stored is None else {"position": stored[0], "link": stored[1], "events": stored[2]}
    )
    matches = stored is None or (
        head is not None and (stored[0], stored[1]) == (head["position"], head["link"])
    )
    answer["matchesStored"] = matches
    if args.json:
        print(json.dumps(answer))
    elif head is None:
        print(f"no events on {args.day}")
    else:
        print(f"chain head of {args.day}: event {head['position']} link {head['link']}")
        print(f"  {head['events']} events that day; keep it, check later with:")
        print(f"  upgrader audit --expect-head {head['position']}:{head['link']}")
        if stored is not None:
            print(
                "  the chain_heads table "
                + ("agrees" if matches else f"DIFFERS: event {stored[0]} link {stored[1]}")
            )
    if head is None:
        return EXIT_VIOLATIONS
    return EXIT_OK if matches else EXIT_VIOLATIONS


def _store_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--database-url",
        metavar="URL",
        help="the store to audit (default: the configuration's database_url)",
    )


def register(commands: argparse._SubParsersAction) -> None:
    parser = command(
        commands,
        "audit",
        "replay the event log and re-check every round, item and hash-chain link",
        _run,
    )
    parser.epilog = (
        "exit status: 0 all rules hold, 1 violations found, 2 bad input.\n"
        "subcommand: upgrader audit chain-head --day YYYY-MM-DD"
    )
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    _store_options(parser)
    parser.add_argument("--operator", metavar="ID", help="check only this operator's rounds")
    parser.add_argument("--player", metavar="ID", help="check only this player's rounds")
    parser.add_argument(
        "--since", metavar="ISO", help="check only rounds opened at or after this UTC date"
    )
    parser.add_argument("--json", action="store_true", help="print a machine-readable result")
    parser.add_argument(
        "--expect-head",
        action="append",
        metavar="POSITION:LINK",
        help="a stored chain head to check against the recomputed chain (repeatable)",
    )
    parser.add_argument("--no-chain", action="store_true", help="skip the event_chain check")
    parser.add_argument("--no-progress", action="store_true", help="no progress output")
    actions = parser.add_subparsers(dest="audit_action", metavar="{chain-head}")
    head = actions.add_parser(
        "chain-head",
        help="the hash chain's last link of a UTC day",
        description="the hash chain's last link of a UTC day, recomputed from the log",
    )
    head.add_argument(
        "--config",
        default=argparse.SUPPRESS,
        help="TOML configuration file (default: ops/demo/config.toml)",
    )
    _store_options(head)
    head.add_argument("--day", required=True, metavar="YYYY-MM-DD", help="the UTC day")
    head.add_argument("--json", action="store_true", help="print a machine-readable result")

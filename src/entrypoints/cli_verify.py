"""``upgrader verify``: check a round's provable fairness offline (decisions §3).

Pure and offline: no network, no database, no configuration. It recomputes
``serverSeedHash`` and ``rolledBps`` from the revealed server seed, the client seed and
the nonce with :mod:`domain.fairness`, and checks every claim it is given.

Three ways in:

* flags: ``--server-seed S --client-seed C --nonce N`` with optional claims
  ``--server-seed-hash H``, ``--rolled-bps R``, ``--chance-bps P`` (and ``--is-win``);
* ``--round FILE --server-seed S``: a round JSON as the API returns it (the round
  object, or a play answer ``{"round": {...}}``); its hash, roll and outcome are claims;
* ``--vectors FILE``: a published vector file, every case checked: rolls
  (hmac_sha256_v1.json) and box draws over ``totalTickets`` (box_draw_v1.json,
  cli_verify_draw.py). The claims and their parsing are in ``cli_verify_claims.py``.

Exit status: 0 when every claim holds, 1 when any does not (one line per failed claim),
2 on malformed input (bad seed format, unreadable file, unknown algorithm, ...).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from application.audit.claim_check import show
from domain.fairness import ALGORITHM_KEY
from entrypoints.cli_args import command
from entrypoints.cli_verify_box import add_box_options, box_requested, run_box
from entrypoints.cli_verify_claims import (
    Claims,
    MalformedInput,
    Verification,
    _algorithm,
    _client_seed,
    _hash,
    _json_int,
    _read_json,
    _rolled,
    _server_seed,
    claims_from_flags,
    claims_from_round,
    verify,
)
from entrypoints.cli_verify_draw import draw_case_problems

EXIT_OK = 0
EXIT_MISMATCH = 1
EXIT_MALFORMED = 2


def _print_verification(result: Verification) -> None:
    claims = result.claims
    if claims.public_id:
        print(f"round:            {claims.public_id}")
    print(f"algorithm:        {ALGORITHM_KEY}")
    print(f"client seed:      {claims.client_seed}")
    print(f"nonce:            {claims.nonce}")
    print(f"server seed hash: {result.server_seed_hash}")
    where = f"block {result.cursor}, word {result.word_index}"
    print(f"rolled bps:       {result.rolled_bps} ({where})")
    if claims.chance_bps is not None:
        outcome = result.outcome
        relation = "<" if outcome else ">="
        print(
            f"outcome:          {show(outcome)} "
            f"(rolled {result.rolled_bps} {relation} chance {claims.chance_bps})"
        )
    for check in result.checks:
        print(check.line())
    failures = result.failures()
    if not result.checks:
        print("no claims given to check")
    elif failures:
        print(f"NOT VERIFIED: {len(failures)} of {len(result.checks)} claims do not hold")
    else:
        print(f"verified: all {len(result.checks)} claims hold")


def _case_problems(case: Any) -> list[str]:
    """A roll case (``rolledBps``) or a box draw case (``totalTickets``, cli_verify_draw)."""
    if not isinstance(case, dict):
        raise MalformedInput("case is not an object")
    if "totalTickets" in case:
        return draw_case_problems(case)
    for key in ("serverSeed", "serverSeedHash", "clientSeed", "nonce", "rolledBps"):
        if key not in case:
            raise MalformedInput(f"case has no {key}")
    claims = Claims(
        server_seed=_server_seed(case["serverSeed"]),
        client_seed=_client_seed(case["clientSeed"]),
        nonce=_json_int(case["nonce"], "nonce"),
        server_seed_hash=_hash(case["serverSeedHash"]),
        rolled_bps=_rolled(_json_int(case["rolledBps"], "rolledBps"), "rolledBps"),
    )
    return [check.line() for check in verify(claims).failures()]


def _check_vectors(document: Any) -> dict[str, Any]:
    if not isinstance(document, dict) or not isinstance(document.get("cases"), list):
        raise MalformedInput('vector file must be {"algorithmKey": ..., "cases": [...]}')
    _algorithm(document.get("algorithmKey"))
    cases = document["cases"]
    if not cases:
        raise MalformedInput("vector file has no cases")
    failures: list[dict[str, Any]] = []
    for index, case in enumerate(cases):
        try:
            problems = _case_problems(case)
        except MalformedInput as exc:
            problems = [f"malformed: {exc}"]
        if problems:
            failures.append({"case": index, "problems": problems})
    total = len(cases)
    return {
        "ok": not failures,
        "algorithmKey": ALGORITHM_KEY,
        "cases": total,
        "verified": total - len(failures),
        "failed": len(failures),
        "failures": failures,
    }


# -- the command -----------------------------------------------------------------------


def _fail(args: argparse.Namespace, message: str) -> int:
    if args.json:
        print(json.dumps({"ok": False, "error": message}))
    print(f"upgrader verify: {message}", file=sys.stderr)
    return EXIT_MALFORMED


def _run(args: argparse.Namespace) -> int:
    if box_requested(args):  # --box/--space or a box round file (cli_verify_box.py)
        return run_box(args)
    try:
        if args.vectors is not None:
            given = [
                name
                for name in ("server_seed", "client_seed", "nonce", "round")
                if getattr(args, name) is not None
            ]
            claimed = ("server_seed_hash", "rolled_bps", "chance_bps", "is_win")
            given += [name for name in claimed if getattr(args, name) is not None]
            if given:
                flags = ", ".join("--" + name.replace("_", "-") for name in given)
                raise MalformedInput(f"--vectors takes no other inputs (got {flags})")
            report = _check_vectors(_read_json(args.vectors))
            if args.json:
                print(json.dumps(report))
            else:
                for failure in report["failures"]:
                    for problem in failure["problems"]:
                        print(f"case {failure['case']}: {problem}")
                print(
                    f"{report['cases']} cases, {report['verified']} verified, "
                    f"{report['failed']} failed"
                )
            return EXIT_OK if report["ok"] else EXIT_MISMATCH
        if args.round is not None:
            extra = ("client_seed", "nonce", "server_seed_hash", "rolled_bps", "chance_bps")
            given = [name for name in (*extra, "is_win") if getattr(args, name) is not None]
            if given:
                flags = ", ".join("--" + name.replace("_", "-") for name in given)
                raise MalformedInput(f"--round takes only --server-seed (got {flags})")
            claims = claims_from_round(_read_json(args.round), args.server_seed)
        else:
            claims = claims_from_flags(args)
        result = verify(claims)
    except MalformedInput as exc:
        return _fail(args, str(exc))
    if args.json:
        print(json.dumps(result.as_json()))
    else:
        _print_verification(result)
    return EXIT_OK if result.ok else EXIT_MISMATCH


EPILOG = f"""\
exit status: 0 every given claim holds, 1 a claim does not hold, 2 malformed input.
Only algorithm {ALGORITHM_KEY} is known. Nothing here touches the network or a database
(but --box and box rounds, which read the box's table from the store's recorded catalogue).

examples:
  upgrader verify --server-seed S --client-seed C --nonce 7 --rolled-bps 4321
  upgrader verify --round round.json --server-seed S
  upgrader verify --vectors tests/vectors/{ALGORITHM_KEY}.json
  upgrader verify --vectors tests/vectors/box_draw_v1.json
  upgrader verify --server-seed S --client-seed C --nonce 7 --box 1 --box-version 2 --items 102,101
  upgrader verify --server-seed S --client-seed C --nonce 7 --space 1000 --tickets 512
  upgrader verify --round box-round.json --server-seed S --database-url URL
"""


def register(commands: argparse._SubParsersAction) -> None:
    parser = command(
        commands,
        "verify",
        "check a round's provable fairness offline (hash, roll, outcome)",
        _run,
    )
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--server-seed", metavar="S", help="the revealed server seed (64 hex)")
    parser.add_argument("--client-seed", metavar="C", help="the client seed of the round")
    parser.add_argument("--nonce", metavar="N", help="the nonce of the round")
    parser.add_argument(
        "--server-seed-hash", metavar="H", help="claim: the hash published before the round"
    )
    parser.add_argument("--rolled-bps", metavar="R", help="claim: the roll (0..9999)")
    parser.add_argument(
        "--chance-bps", metavar="P", help="the chosen chance; prints win or loss (rolled < P)"
    )
    parser.add_argument(
        "--is-win", metavar="true|false", help="claim: the outcome (needs --chance-bps)"
    )
    parser.add_argument(
        "--round",
        metavar="FILE",
        help='a round JSON as the API returns it (or a play answer {"round": ...}); '
        "needs --server-seed",
    )
    parser.add_argument(
        "--vectors",
        metavar="FILE",
        help="check every case of a published vector file (rolls or box draws)",
    )
    parser.add_argument("--json", action="store_true", help="print a machine-readable result")
    add_box_options(parser)

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
  cli_verify_draw.py).

Exit status: 0 when every claim holds, 1 when any does not (one line per failed claim),
2 on malformed input (bad seed format, unreadable file, unknown algorithm, ...).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from api.cli_verify_box import add_box_options, box_requested, run_box
from domain.fairness import (
    ALGORITHM_KEY,
    ROLL_SPACE,
    is_valid_client_seed,
    is_valid_server_seed,
    is_win,
    roll_trace,
    seed_hash,
)

EXIT_OK = 0
EXIT_MISMATCH = 1
EXIT_MALFORMED = 2

MAX_CHANCE_BPS = ROLL_SPACE
_DIGITS = re.compile(r"[0-9]+")
_HEX64 = re.compile(r"[0-9a-fA-F]{64}")
_TRUE = {"true", "win", "yes", "1"}
_FALSE = {"false", "loss", "lose", "no", "0"}


class MalformedInput(ValueError):
    """Input that cannot be verified at all (exit 2)."""


@dataclass(slots=True)
class Claims:
    """What is to be checked: the inputs of the roll and the claims made about it."""

    server_seed: str
    client_seed: str
    nonce: int
    server_seed_hash: str | None = None
    rolled_bps: int | None = None
    chance_bps: int | None = None
    is_win: bool | None = None
    public_id: str | None = None


@dataclass(slots=True)
class Check:
    claim: str
    ok: bool
    claimed: Any
    recomputed: Any

    def line(self) -> str:
        if self.ok:
            return f"ok: {self.claim} matches ({_show(self.recomputed)})"
        return (
            f"MISMATCH: {self.claim}: claimed {_show(self.claimed)}, "
            f"recomputed {_show(self.recomputed)}"
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "claim": self.claim,
            "ok": self.ok,
            "claimed": self.claimed,
            "recomputed": self.recomputed,
        }


@dataclass(slots=True)
class Verification:
    claims: Claims
    server_seed_hash: str
    rolled_bps: int
    cursor: int
    word_index: int
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks)

    @property
    def outcome(self) -> bool | None:
        if self.claims.chance_bps is None:
            return None
        return is_win(self.rolled_bps, self.claims.chance_bps)

    def failures(self) -> list[Check]:
        return [check for check in self.checks if not check.ok]

    def as_json(self) -> dict[str, Any]:
        claims = self.claims
        return {
            "ok": self.ok,
            "algorithmKey": ALGORITHM_KEY,
            "publicId": claims.public_id,
            "clientSeed": claims.client_seed,
            "nonce": claims.nonce,
            "serverSeedHash": self.server_seed_hash,
            "rolledBps": self.rolled_bps,
            "cursor": self.cursor,
            "wordIndex": self.word_index,
            "chanceBps": claims.chance_bps,
            "isWin": self.outcome,
            "checks": [check.as_json() for check in self.checks],
        }


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "win" if value else "loss"
    return str(value)


# -- parsing ---------------------------------------------------------------------------


def _server_seed(value: str | None) -> str:
    if value is None:
        raise MalformedInput("--server-seed is required (the revealed server seed)")
    if not is_valid_server_seed(value):
        raise MalformedInput("server seed must be 64 lowercase hex characters")
    return value


def _client_seed(value: Any, source: str = "client seed") -> str:
    if not isinstance(value, str) or not is_valid_client_seed(value):
        raise MalformedInput(f"{source} must be 1 to 64 printable ASCII characters")
    return value


def _hash(value: Any, source: str = "server seed hash") -> str:
    if not isinstance(value, str) or _HEX64.fullmatch(value) is None:
        raise MalformedInput(f"{source} must be 64 hex characters")
    return value.lower()


def _int_text(value: str, name: str) -> int:
    if _DIGITS.fullmatch(value) is None:
        raise MalformedInput(f"{name} must be a non-negative decimal integer: {value!r}")
    try:
        return int(value)
    except ValueError as exc:  # more digits than int() converts
        raise MalformedInput(f"{name} is too long: {len(value)} digits") from exc


def _json_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise MalformedInput(f"{name} must be a non-negative integer: {value!r}")
    return value


def _rolled(value: int, name: str = "rolled bps") -> int:
    if not 0 <= value < ROLL_SPACE:
        raise MalformedInput(f"{name} must be in 0..{ROLL_SPACE - 1}: {value}")
    return value


def _chance(value: int, name: str = "chance bps") -> int:
    if not 0 <= value <= MAX_CHANCE_BPS:
        raise MalformedInput(f"{name} must be in 0..{MAX_CHANCE_BPS}: {value}")
    return value


def _bool_text(value: str) -> bool:
    text = value.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise MalformedInput(f"--is-win must be true/win or false/loss: {value!r}")


def _algorithm(value: Any) -> None:
    if value != ALGORITHM_KEY:
        raise MalformedInput(
            f"unsupported algorithmKey {value!r}: this verifier knows only {ALGORITHM_KEY}"
        )


def claims_from_flags(args: argparse.Namespace) -> Claims:
    if args.client_seed is None or args.nonce is None:
        raise MalformedInput("--client-seed and --nonce are required (or use --round FILE)")
    claims = Claims(
        server_seed=_server_seed(args.server_seed),
        client_seed=_client_seed(args.client_seed),
        nonce=_int_text(args.nonce, "--nonce"),
    )
    if args.server_seed_hash is not None:
        claims.server_seed_hash = _hash(args.server_seed_hash, "--server-seed-hash")
    if args.rolled_bps is not None:
        claims.rolled_bps = _rolled(_int_text(args.rolled_bps, "--rolled-bps"), "--rolled-bps")
    if args.chance_bps is not None:
        claims.chance_bps = _chance(_int_text(args.chance_bps, "--chance-bps"), "--chance-bps")
    if args.is_win is not None:
        if claims.chance_bps is None:
            raise MalformedInput("--is-win needs --chance-bps")
        claims.is_win = _bool_text(args.is_win)
    return claims


def _read_json(path: str) -> Any:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise MalformedInput(f"cannot read {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise MalformedInput(f"{path} is not UTF-8 text") from exc
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, huge or deep numbers
        raise MalformedInput(f"{path} is not valid JSON: {exc}") from exc


def claims_from_round(document: Any, server_seed: str | None) -> Claims:
    """Claims of a round as the API returns it (the round, or ``{"round": {...}}``)."""
    if isinstance(document, dict) and isinstance(document.get("round"), dict):
        document = document["round"]
    if not isinstance(document, dict):
        raise MalformedInput("round file must hold a JSON object (a round or a play answer)")
    public_id = document.get("publicId")
    fairness = document.get("fairness")
    if not isinstance(fairness, dict):
        status = document.get("status")
        raise MalformedInput(
            f"round {public_id or '?'} has no fairness data (status {status!r}); "
            "a voided round has no roll to verify"
        )
    if "algorithmKey" not in fairness:
        raise MalformedInput("round fairness has no algorithmKey")
    _algorithm(fairness["algorithmKey"])
    for key in ("serverSeedHash", "clientSeed", "nonce"):
        if key not in fairness:
            raise MalformedInput(f"round fairness has no {key}")
    claims = Claims(
        server_seed=_server_seed(server_seed),
        client_seed=_client_seed(fairness["clientSeed"], "fairness.clientSeed"),
        nonce=_json_int(fairness["nonce"], "fairness.nonce"),
        server_seed_hash=_hash(fairness["serverSeedHash"], "fairness.serverSeedHash"),
        public_id=public_id if isinstance(public_id, str) else None,
    )
    if document.get("rolledBps") is not None:
        claims.rolled_bps = _rolled(_json_int(document["rolledBps"], "rolledBps"), "rolledBps")
    if document.get("chanceBps") is not None:
        claims.chance_bps = _chance(_json_int(document["chanceBps"], "chanceBps"), "chanceBps")
    if document.get("isWin") is not None:
        if not isinstance(document["isWin"], bool):
            raise MalformedInput(f"isWin must be true or false: {document['isWin']!r}")
        if claims.chance_bps is None:
            raise MalformedInput("round has isWin but no chanceBps")
        claims.is_win = document["isWin"]
    return claims


# -- verifying -------------------------------------------------------------------------


def verify(claims: Claims) -> Verification:
    """Recompute hash and roll and check every claim made."""
    try:
        trace = roll_trace(claims.server_seed, claims.client_seed, claims.nonce)
    except ValueError as exc:  # the parsers above already reject these
        raise MalformedInput(str(exc)) from exc
    result = Verification(
        claims=claims,
        server_seed_hash=seed_hash(claims.server_seed),
        rolled_bps=trace.rolled_bps,
        cursor=trace.cursor,
        word_index=trace.word_index,
    )
    if claims.server_seed_hash is not None:
        result.checks.append(
            Check(
                "serverSeedHash",
                claims.server_seed_hash == result.server_seed_hash,
                claims.server_seed_hash,
                result.server_seed_hash,
            )
        )
    if claims.rolled_bps is not None:
        result.checks.append(
            Check(
                "rolledBps",
                claims.rolled_bps == result.rolled_bps,
                claims.rolled_bps,
                result.rolled_bps,
            )
        )
    outcome = result.outcome
    if claims.is_win is not None and outcome is not None:
        result.checks.append(Check("isWin", claims.is_win == outcome, claims.is_win, outcome))
    return result


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
            f"outcome:          {_show(outcome)} "
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
        from api.cli_verify_draw import draw_case_problems

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
    if box_requested(args):  # --box/--space: a box round's draws (cli_verify_box.py)
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
"""


def register(commands: argparse._SubParsersAction) -> None:
    from api.cli import command

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

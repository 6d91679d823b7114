"""What ``upgrader verify`` reads and checks: the claims (from flags, a round JSON or a
vector case), each input parsed strictly (``MalformedInput``: exit 2), and
``verify``, which recomputes the hash and roll and checks every claim."""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from application.audit.claim_check import Check
from domain.fairness import (
    ALGORITHM_KEY,
    ROLL_SPACE,
    is_valid_client_seed,
    is_valid_server_seed,
    is_win,
    roll_trace,
    seed_hash,
)

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

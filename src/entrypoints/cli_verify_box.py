"""``upgrader verify --box/--space``: recompute a box round's draws (decisions §10).

    upgrader verify --server-seed S --client-seed C --nonce N
                    (--box ID --box-version V | --space T) [--count K]
                    [--tickets T1,T2,...] [--items I1,I2,...]
                    [--server-seed-hash H] [--odds-hash H]
                    [--config FILE | --database-url URL] [--json]

``--nonce`` is the round's first nonce; box ``k`` of ``K`` (``--count``, default the
number of claimed tickets or items, else 1) draws with nonce ``N + k``. Each reel's
ticket is the draw over ``totalTickets`` and its item the one whose ticket range holds
it. ``--box``/``--box-version`` read the version's table from the recorded box catalogue
of the store (``--database-url``, else the configuration's ``database_url``): inactive
and older versions included, the recorded ``oddsHash`` checked against the table. A bare
``--space T`` gives tickets only (no store read).

``--round FILE --server-seed S`` with a box round (an open answer, a ``round_settled``
webhook or the round; cli_verify_box_round.py) takes the seeds, first nonce, box, count
and claims (``serverSeedHash``, ``oddsHash``, ``totalTickets``, each reel's nonce, ticket
and item from ``facts.reels``) from the file; only the store may be named beside it.

Claims (each optional): ``--tickets`` and ``--items`` per reel in order,
``--server-seed-hash`` and ``--odds-hash``. Exit status as for every ``verify``: 0 every
claim holds, 1 a claim does not (one ``MISMATCH`` line each), 2 malformed input (also: a
store that is not there, a version the store never recorded).

Self-contained on purpose: cli_verify.py only hands the arguments over
(``box_requested``, ``run_box``), so nothing here imports it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from application.audit.claim_check import Check
from application.config.boxes import MAX_BOXES_PER_ROUND, MAX_ID
from application.games.boxes.draw_check import (
    BadBoxInput,
    BoxRequest,
    RecordedBox,
    Reel,
    box_json,
    checks_of,
    draw_reels,
    recorded_box,
)
from domain.fairness import (
    ALGORITHM_KEY,
    MAX_DRAW_SPACE,
    is_valid_client_seed,
    is_valid_server_seed,
    seed_hash,
)
from entrypoints.cli_args import database_url
from entrypoints.cli_verify_box_round import is_box_round, request_from_round

EXIT_OK = 0
EXIT_MISMATCH = 1
EXIT_MALFORMED = 2

BOX_FLAGS = (
    "box",
    "box_version",
    "space",
    "count",
    "tickets",
    "items",
    "odds_hash",
    "database_url",
)
ROLL_ONLY = ("rolled_bps", "chance_bps", "is_win", "round", "vectors")
ROUND_EXCLUDES = ("client_seed", "nonce", "server_seed_hash", "rolled_bps", "chance_bps")
ROUND_EXCLUDES += ("is_win", "vectors")
_DIGITS = re.compile(r"[0-9]{1,20}")
_HEX64 = re.compile(r"[0-9a-fA-F]{64}")


def box_requested(args: argparse.Namespace) -> bool:
    """Whether the command line asks for a box draw check: any box flag given, or a
    ``--round`` file that holds a box round (an unreadable one is left to cli_verify)."""
    if any(getattr(args, name, None) is not None for name in BOX_FLAGS):
        return True
    if getattr(args, "round", None) is None:
        return False
    try:
        return is_box_round(_read_round(args.round))
    except BadBoxInput:
        return False


def _read_round(path: str) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise BadBoxInput(f"cannot read a round from {path}: {exc}") from exc


def _request(args: argparse.Namespace) -> BoxRequest:
    if args.round is None:
        return parse_request(args)
    others = [n for n in (*ROUND_EXCLUDES, *BOX_FLAGS[:-1]) if getattr(args, n, None) is not None]
    if others:
        flags = ", ".join(_flag(name) for name in others)
        raise BadBoxInput(
            f"--round takes only --server-seed (and --database-url or --config) (got {flags})"
        )
    document = _read_round(args.round)
    if not is_box_round(document):
        raise BadBoxInput("--database-url is for box rounds; this round is not one")
    return request_from_round(document, args.server_seed)


# -- parsing ---------------------------------------------------------------------------


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _int(value: str, name: str, low: int, high: int) -> int:
    if _DIGITS.fullmatch(value) is None or not low <= int(value) <= high:
        raise BadBoxInput(f"{_flag(name)} must be a whole number in {low}..{high}: {value!r}")
    return int(value)


def _int_list(value: str, name: str) -> list[int]:
    parts = [part.strip() for part in value.split(",")]
    if any(_DIGITS.fullmatch(part) is None for part in parts):
        raise BadBoxInput(
            f"{_flag(name)} must be non-negative whole numbers separated by commas: {value!r}"
        )
    return [int(part) for part in parts]


def _hex(value: str, name: str) -> str:
    if _HEX64.fullmatch(value) is None:
        raise BadBoxInput(f"{_flag(name)} must be 64 hex characters")
    return value.lower()


def parse_request(args: argparse.Namespace) -> BoxRequest:
    mixed = [_flag(name) for name in ROLL_ONLY if getattr(args, name, None) is not None]
    if mixed:
        raise BadBoxInput(f"a box draw check takes no {', '.join(mixed)}")
    if args.server_seed is None or args.client_seed is None or args.nonce is None:
        raise BadBoxInput("--server-seed, --client-seed and --nonce (the first) are required")
    if not is_valid_server_seed(args.server_seed):
        raise BadBoxInput("server seed must be 64 lowercase hex characters")
    if not is_valid_client_seed(args.client_seed):
        raise BadBoxInput("client seed must be 1 to 64 printable ASCII characters")
    nonce = _int(args.nonce, "nonce", 0, 2**64 - 1)
    if (args.box is None) != (args.box_version is None):
        raise BadBoxInput("--box and --box-version go together (a box version, by its ids)")
    if (args.box is None) == (args.space is None):
        raise BadBoxInput("give either --box ID --box-version V or --space T")
    box_key = None
    space = None
    if args.box is not None:
        box_key = (
            _int(args.box, "box", 1, MAX_ID),
            _int(args.box_version, "box_version", 1, MAX_ID),
        )
    else:
        space = _int(args.space, "space", 1, MAX_DRAW_SPACE)
        needs_box = [_flag(n) for n in ("items", "odds_hash", "database_url") if getattr(args, n)]
        if needs_box:
            raise BadBoxInput(f"{', '.join(needs_box)} needs --box and --box-version")
    tickets = None if args.tickets is None else _int_list(args.tickets, "tickets")
    items = None if args.items is None else _int_list(args.items, "items")
    lengths = {len(claimed) for claimed in (tickets, items) if claimed is not None}
    if args.count is not None:
        count = _int(args.count, "count", 1, MAX_BOXES_PER_ROUND)
    else:
        count = max(lengths, default=1)
    for name, claimed in (("tickets", tickets), ("items", items)):
        if claimed is not None and len(claimed) != count:
            raise BadBoxInput(
                f"{_flag(name)} has {len(claimed)} values for {count} boxes (one per box)"
            )
    if count > MAX_BOXES_PER_ROUND:
        raise BadBoxInput(f"a round has at most {MAX_BOXES_PER_ROUND} boxes")
    return BoxRequest(
        server_seed=args.server_seed,
        client_seed=args.client_seed,
        first_nonce=nonce,
        count=count,
        space=space,
        box_key=box_key,
        tickets=tickets,
        items=items,
        server_seed_hash=None
        if args.server_seed_hash is None
        else _hex(args.server_seed_hash, "server_seed_hash"),
        odds_hash=None if args.odds_hash is None else _hex(args.odds_hash, "odds_hash"),
    )


def load_box(args: argparse.Namespace, key: tuple[int, int]) -> RecordedBox:
    from entrypoints.cli_store import store_problem

    url = database_url(args)
    problem = store_problem(url)
    if problem is not None:
        raise BadBoxInput(problem)
    found = recorded_box(url, *key)
    if found is None:
        raise BadBoxInput(f"box {key[0]} version {key[1]} is not in the store's recorded catalogue")
    return found


# -- checking --------------------------------------------------------------------------


def _print(
    request: BoxRequest,
    reels: list[Reel],
    box: RecordedBox | None,
    hash_: str,
    checks: list[Check],
) -> None:
    space = reels[0].total_tickets
    if request.public_id:
        print(f"round:            {request.public_id}")
    print(f"algorithm:        {ALGORITHM_KEY}")
    if box is not None:
        version = box.version
        state = "active" if version.active else "inactive"
        print(
            f"box:              {version.box_id} version {version.box_version_id} ({state}, "
            f"price {version.price_minor}, {len(version.entries)} items)"
        )
        print(f"odds hash:        {version.odds_hash}")
    print(f"client seed:      {request.client_seed}")
    last = request.first_nonce + request.count - 1
    if request.count == 1:
        print(f"nonce:            {last} (1 box)")
    else:
        print(
            f"first nonce:      {request.first_nonce} ({request.count} boxes: nonces "
            f"{request.first_nonce}..{last})"
        )
    print(f"server seed hash: {hash_}")
    print(f"total tickets:    {space}")
    for reel in reels:
        where = f"block {reel.cursor}, word {reel.word_index}"
        line = f"reel {reel.index + 1}: nonce {reel.nonce}, ticket {reel.ticket} ({where})"
        if reel.range is not None:
            held = reel.range
            line += f" -> item {held.item_id} (tickets {held.ticket_from}..{held.ticket_to})"
        print(line)
    for one in checks:
        print(one.line())
    failures = [one for one in checks if not one.ok]
    if not checks:
        print("no claims given to check")
    elif failures:
        print(f"NOT VERIFIED: {len(failures)} of {len(checks)} claims do not hold")
    else:
        print(f"verified: all {len(checks)} claims hold")


def run_box(args: argparse.Namespace) -> int:
    """``upgrader verify`` with box flags: 0 all claims hold, 1 one does not, 2 malformed."""
    try:
        request = _request(args)
        box = None if request.box_key is None else load_box(args, request.box_key)
    except BadBoxInput as exc:
        if args.json:
            print(json.dumps({"ok": False, "error": str(exc)}))
        print(f"upgrader verify: {exc}", file=sys.stderr)
        return EXIT_MALFORMED
    version = None if box is None else box.version
    space = request.space if version is None else version.total_tickets
    assert space is not None
    reels = draw_reels(
        request.server_seed, request.client_seed, request.first_nonce, request.count, space, version
    )
    hash_ = seed_hash(request.server_seed)
    checks = checks_of(request, reels, box, hash_)
    ok = all(one.ok for one in checks)
    if args.json:
        answer = {
            "ok": ok,
            "publicId": request.public_id,
            "algorithmKey": ALGORITHM_KEY,
            "clientSeed": request.client_seed,
            "nonce": request.first_nonce,
            "count": request.count,
            "serverSeedHash": hash_,
            "totalTickets": space,
            "box": None if box is None else box_json(box),
            "reels": [reel.as_json(version) for reel in reels],
            "checks": [one.as_json() for one in checks],
        }
        print(json.dumps(answer))
    else:
        _print(request, reels, box, hash_, checks)
    return EXIT_OK if ok else EXIT_MISMATCH


def add_box_options(parser: argparse.ArgumentParser) -> None:
    """The box flags of ``upgrader verify`` (cli_verify.py's ``register`` calls this)."""
    group = parser.add_argument_group(
        "box draws",
        "recompute a box round's reels: --nonce is the first, one nonce per box; "
        '--round FILE with a box round (game "boxes") reads all of these from the file',
    )
    group.add_argument("--box", metavar="ID", help="the box id (with --box-version)")
    group.add_argument(
        "--box-version",
        metavar="V",
        help="the box version id: its table is read from the store's recorded catalogue",
    )
    group.add_argument(
        "--space", metavar="T", help="instead of a box: the total tickets (1..2^31) alone"
    )
    group.add_argument(
        "--count",
        metavar="K",
        help="boxes in the round (default: as many as --tickets/--items claim, else 1)",
    )
    group.add_argument("--tickets", metavar="T1,T2", help="claim: each box's ticket, in order")
    group.add_argument("--items", metavar="I1,I2", help="claim: each box's item id, in order")
    group.add_argument("--odds-hash", metavar="H", help="claim: the box version's oddsHash")
    group.add_argument(
        "--database-url",
        metavar="URL",
        help="the store whose recorded catalogue holds the box "
        "(default: the configuration's database_url)",
    )

"""``upgrader verify --round FILE`` when FILE holds a box round (decisions §10).

A box round as the API answers it: the open answer ``{round, wonItems, balanceAfterMinor,
facts}``, a ``round_settled`` webhook (or its ``data``), a round history entry (the
round with ``reels`` and ``wonItems`` beside its keys), or the round alone. The round is
a box round when ``game`` is ``"boxes"`` or it has a ``box`` object. Read from it:

* ``round.fairness``: ``algorithmKey`` (must be hmac_sha256_v1), ``clientSeed``, ``nonce``
  (the first), ``serverSeedHash`` (a claim);
* ``round.box``: ``boxId``, ``boxVersionId`` (the version whose recorded table gives the
  items), ``count``, and the claims ``oddsHash`` and ``totalTickets``;
* ``facts.reels`` (a history entry's ``reels``) when present, one per box: the claims
  ``nonce``, ``ticket`` and ``itemId`` of each (a reel naming another box, version or
  space than the round's is malformed).

Pure parsing: ``request_from_round`` gives the ``BoxRequest`` that cli_verify_box.py checks.
"""

from __future__ import annotations

import re
from typing import Any

from application.config.boxes import MAX_BOXES_PER_ROUND, MAX_ID
from application.games.boxes.draw_check import BadBoxInput, BoxRequest
from domain.fairness import (
    ALGORITHM_KEY,
    MAX_DRAW_SPACE,
    is_valid_client_seed,
    is_valid_server_seed,
)

_HEX64 = re.compile(r"[0-9a-fA-F]{64}")


def _unwrap(document: Any) -> tuple[Any, Any]:
    """(round, facts) of an open answer, a webhook (or its data), a round history entry
    (the round with its ``reels`` beside it) or a round alone."""
    if isinstance(document, dict) and isinstance(document.get("data"), dict):
        document = document["data"]
    if isinstance(document, dict) and isinstance(document.get("round"), dict):
        return document["round"], document.get("facts")
    if isinstance(document, dict) and document.get("reels") is not None:
        return document, {"reels": document["reels"]}
    return document, None


def is_box_round(document: Any) -> bool:
    round_, _ = _unwrap(document)
    return isinstance(round_, dict) and (
        round_.get("game") == "boxes" or isinstance(round_.get("box"), dict)
    )


def _int(value: Any, name: str, low: int = 0, high: int = 2**64 - 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise BadBoxInput(f"{name} must be an integer in {low}..{high}: {value!r}")
    return value


def _hex(value: Any, name: str) -> str:
    if not isinstance(value, str) or _HEX64.fullmatch(value) is None:
        raise BadBoxInput(f"{name} must be 64 hex characters")
    return value.lower()


def _object(holder: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = holder.get(key)
    if not isinstance(value, dict):
        raise BadBoxInput(f"{where} has no {key} object")
    return value


def _reels(facts: Any, box: dict[str, Any], count: int) -> list[dict[str, Any]] | None:
    if not isinstance(facts, dict) or facts.get("reels") is None:
        return None
    reels = facts["reels"]
    if not isinstance(reels, list) or len(reels) != count:
        size = len(reels) if isinstance(reels, list) else reels
        raise BadBoxInput(f"facts.reels must list one reel per box ({count}), got {size!r}")
    for index, reel in enumerate(reels):
        where = f"facts.reels[{index}]"
        if not isinstance(reel, dict):
            raise BadBoxInput(f"{where} is not an object")
        for key in ("boxId", "boxVersionId", "totalTickets"):
            if reel.get(key) != box[key]:
                raise BadBoxInput(
                    f"{where}.{key} is {reel.get(key)!r}, the round's box says {box[key]!r}"
                )
        for key in ("nonce", "ticket", "itemId"):
            _int(reel.get(key), f"{where}.{key}")
    return reels


def request_from_round(document: Any, server_seed: str | None) -> BoxRequest:
    """The box round's inputs and claims; BadBoxInput when it cannot be verified."""
    round_, facts = _unwrap(document)
    if not isinstance(round_, dict):
        raise BadBoxInput("round file must hold a JSON object (a round or an open answer)")
    public_id = round_.get("publicId") if isinstance(round_.get("publicId"), str) else None
    fairness = round_.get("fairness")
    if not isinstance(fairness, dict):
        raise BadBoxInput(
            f"round {public_id or '?'} has no fairness data (status {round_.get('status')!r}); "
            "a voided round has no draw to verify"
        )
    if fairness.get("algorithmKey") != ALGORITHM_KEY:
        raise BadBoxInput(
            f"unsupported algorithmKey {fairness.get('algorithmKey')!r}: this verifier "
            f"knows only {ALGORITHM_KEY}"
        )
    if server_seed is None:
        raise BadBoxInput("--server-seed is required (the revealed server seed)")
    if not is_valid_server_seed(server_seed):
        raise BadBoxInput("server seed must be 64 lowercase hex characters")
    client_seed = fairness.get("clientSeed")
    if not isinstance(client_seed, str) or not is_valid_client_seed(client_seed):
        raise BadBoxInput("fairness.clientSeed must be 1 to 64 printable ASCII characters")
    box = _object(round_, "box", "the round")
    box_key = (_int(box.get("boxId"), "box.boxId", 1, MAX_ID),)
    box_key += (_int(box.get("boxVersionId"), "box.boxVersionId", 1, MAX_ID),)
    count = _int(box.get("count"), "box.count", 1, MAX_BOXES_PER_ROUND)
    total = _int(box.get("totalTickets"), "box.totalTickets", 1, MAX_DRAW_SPACE)
    first = _int(fairness.get("nonce"), "fairness.nonce")
    reels = _reels(facts, box, count)
    return BoxRequest(
        server_seed=server_seed,
        client_seed=client_seed,
        first_nonce=first,
        count=count,
        space=None,
        box_key=(box_key[0], box_key[1]),
        tickets=None if reels is None else [reel["ticket"] for reel in reels],
        items=None if reels is None else [reel["itemId"] for reel in reels],
        server_seed_hash=_hex(fairness.get("serverSeedHash"), "fairness.serverSeedHash"),
        odds_hash=_hex(box.get("oddsHash"), "box.oddsHash"),
        total_tickets=total,
        nonces=None if reels is None else [reel["nonce"] for reel in reels],
        public_id=public_id,
    )

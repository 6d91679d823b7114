"""Round history read model: one row per round, its wire view rendered at settle time.

Serves ``GET /api/s2s/rounds``, ``GET /api/s2s/rounds/{publicId}`` and
``GET /api/play/rounds``. ``position`` is the notification id of the settling (or
voiding) event, so newest-first is settle order, and it doubles as the page cursor.
"""

from __future__ import annotations

import json
from operator import itemgetter
from typing import Any

import msgspec
from eventsourcing.utils import get_topic

from application.games.registry import round_view
from application.store.sql import execute_in_order
from application.wallet.refusals import voided_round_wire
from application.wire import Wire
from domain.round import Round, RoundTerms
from projections.batching import select_in
from projections.unnest import columns, first_per_key, last_per_key, on_postgres

OPENED = get_topic(Round.Opened)
SETTLED = get_topic(Round.RoundSettled)
VOIDED = get_topic(Round.RoundVoided)


def _json(value: Any) -> str:
    """A recorded dict or a view (a struct) as stored: compact, ASCII, keys in order."""
    return json.dumps(msgspec.to_builtins(value), separators=(",", ":"), sort_keys=False)


class RoundHistory:
    name = "round_history"
    topics = frozenset({OPENED, SETTLED, VOIDED})
    schema = [
        """CREATE TABLE IF NOT EXISTS round_history (
            round_id TEXT PRIMARY KEY,
            public_id TEXT NOT NULL UNIQUE,
            operator_id TEXT NOT NULL,
            player_external_id TEXT NOT NULL,
            mode TEXT NOT NULL,
            status TEXT NOT NULL,
            position BIGINT NOT NULL,
            opening TEXT NOT NULL,
            view TEXT)""",
        """CREATE INDEX IF NOT EXISTS round_history_player
            ON round_history (operator_id, player_external_id, status, position)""",
    ]

    def process(self, cur: Any, event: Any, position: int) -> None:
        round_id = event.originator_id.hex
        if isinstance(event, Round.Opened):
            opening = event.opening
            cur.execute(
                "INSERT INTO round_history (round_id, public_id, operator_id, "
                "player_external_id, mode, status, position, opening) "
                "VALUES (?, ?, ?, ?, ?, 'open', ?, ?) ON CONFLICT (round_id) DO NOTHING",
                (
                    round_id,
                    opening["public_id"],
                    opening["operator_id"],
                    opening["player_external_id"],
                    opening["mode"],
                    position,
                    _json(opening),
                ),
            )
            return
        cur.execute("SELECT opening FROM round_history WHERE round_id = ?", (round_id,))
        status, view = _closed(cur.fetchone()[0], event)
        cur.execute(
            "UPDATE round_history SET status = ?, position = ?, view = ? WHERE round_id = ?",
            (status, position, _json(view), round_id),
        )

    def process_batch(self, cur: Any, items: list[Any], after: int) -> None:
        """As ``process`` per item: the openings the settles need are read in one query
        before any write (a round opened earlier in the batch takes the batch's opening),
        then the writes go in event order, pipelined."""
        closing = [it.event.originator_id.hex for it in items if not _is_opened(it.event)]
        stored = dict(
            select_in(
                cur,
                "SELECT round_id, opening FROM round_history WHERE round_id IN ({keys})",
                closing,
            )
        )
        statements: list[tuple[str, tuple[Any, ...]]] = []
        for item in items:
            event, position = item.event, item.position
            round_id = event.originator_id.hex
            if _is_opened(event):
                opening = event.opening
                text = _json(opening)
                statements.append(
                    (
                        _INSERT,
                        (
                            round_id,
                            opening["public_id"],
                            opening["operator_id"],
                            opening["player_external_id"],
                            opening["mode"],
                            position,
                            text,
                        ),
                    )
                )
                stored.setdefault(round_id, text)  # ON CONFLICT DO NOTHING keeps a stored one
                continue
            status, view = _closed(stored[round_id], event)
            statements.append((_UPDATE, (status, position, _json(view), round_id)))
        if not (on_postgres(cur) and _write_unnest(cur, statements)):
            execute_in_order(cur, statements)


def _closed(opening_text: str, event: Any) -> tuple[str, Wire]:
    """The status and view of a round its ``event`` settled or voided (any game: a
    settled round's view is the game's, ``application/games/registry.py``)."""
    if isinstance(event, Round.RoundSettled):
        return "settled", round_view(opening_text, event.settlement)
    return "voided", voided_round_wire(RoundTerms.decode(opening_text).public_id)


_INSERT = (
    "INSERT INTO round_history (round_id, public_id, operator_id, "
    "player_external_id, mode, status, position, opening) "
    "VALUES (?, ?, ?, ?, ?, 'open', ?, ?) ON CONFLICT (round_id) DO NOTHING"
)
_UPDATE = "UPDATE round_history SET status = ?, position = ?, view = ? WHERE round_id = ?"
_INSERT_UNNEST = (
    "INSERT INTO round_history (round_id, public_id, operator_id, "
    "player_external_id, mode, status, position, opening) "
    "SELECT round_id, public_id, operator_id, player_external_id, mode, 'open', position, "
    "opening FROM unnest(%b::text[], %b::text[], %b::text[], %b::text[], %b::text[], %b::bigint[], "
    "%b::text[]) AS u(round_id, public_id, operator_id, player_external_id, mode, position, "
    "opening) ON CONFLICT (round_id) DO NOTHING"
)
_UPDATE_UNNEST = (
    "UPDATE round_history AS t SET status = u.status, position = u.position, view = u.view "
    "FROM unnest(%b::text[], %b::bigint[], %b::text[], %b::text[]) AS u(status, position, view, "
    "round_id) WHERE t.round_id = u.round_id"
)


def _write_unnest(cur: Any, statements: list[tuple[str, tuple[Any, ...]]]) -> bool:
    """PostgreSQL: the batch's statements as one insert and one update over arrays; False
    (nothing written) if a round is updated before the batch inserts it (then only the
    order of the statements says what happens: the caller runs them in order).

    Otherwise the same rows: nothing here deletes a row or changes a ``round_id``, so a
    round's first insert lands or finds it there and its later inserts do nothing; its
    updates all find the row and each sets the same three columns to values of its own,
    so the last one decides; inserting every round before updating any changes neither."""
    inserted = {row[0] for sql, row in statements if sql is _INSERT}
    seen: set[str] = set()
    for sql, row in statements:
        if sql is _INSERT:
            seen.add(row[0])
        elif row[3] in inserted and row[3] not in seen:
            return False
    inserts = first_per_key((row for sql, row in statements if sql is _INSERT), itemgetter(0))
    updates = last_per_key((row for sql, row in statements if sql is _UPDATE), itemgetter(3))
    execute_in_order(
        cur,
        [
            *([(_INSERT_UNNEST, columns(inserts))] if inserts else []),
            *([(_UPDATE_UNNEST, columns(updates))] if updates else []),
        ],
    )
    return True


def _is_opened(event: Any) -> bool:
    return isinstance(event, Round.Opened)


def list_rounds(
    db: Any, operator_id: str, player: str, limit: int, cursor: int | None
) -> tuple[list[dict[str, Any]], int | None]:
    """Newest first; ``cursor`` is the position to continue below."""
    with db.transaction() as cur:
        cur.execute(
            "SELECT position, view FROM round_history WHERE operator_id = ? "
            "AND player_external_id = ? AND status IN ('settled', 'voided') AND position < ? "
            "ORDER BY position DESC LIMIT ?",
            (operator_id, player, cursor if cursor is not None else 2**62, limit + 1),
        )
        rows = cur.fetchall()
    page = rows[:limit]
    next_cursor = page[-1][0] if len(rows) > limit else None
    return [_view(view) for _, view in page], next_cursor


def get_round(db: Any, operator_id: str, public_id: str) -> dict[str, Any] | None:
    with db.transaction() as cur:
        cur.execute(
            "SELECT view FROM round_history WHERE operator_id = ? AND public_id = ? "
            "AND status IN ('settled', 'voided')",
            (operator_id, public_id),
        )
        row = cur.fetchone()
    return None if row is None else _view(row[0])


def _view(stored: str) -> dict[str, Any]:
    """A stored view as answered. A settled round's view stored before rounds named their
    game lacks ``game``: every such round is an Upgrader round (the only game then), so
    it is answered with ``game: "upgrader"`` after ``status``, as the view is rendered
    now (the stored row is left as it is; a rebuild renders it anew)."""
    view = json.loads(stored)
    if "game" in view or view.get("status") != "settled":
        return view
    head = {"publicId": view.pop("publicId"), "status": view.pop("status"), "game": "upgrader"}
    return {**head, **view}

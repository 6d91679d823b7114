"""The ``round_settled`` webhook outbox (decisions §9): a projection of the event log.

Tables of the projection (rebuilt from the log, written with the tracking position in
one transaction by the ``ProjectionRunner``, so exactly once):

``webhook_outbox`` -- one row per webhook to send, immutable once written:
    webhook_id TEXT PRIMARY KEY  the body's ``id``: uuid5(round id, "round_settled"), so a
                                 rebuild or a crash re-creates the same id
    round_id TEXT                the round aggregate id (hex)
    operator_id, player_external_id TEXT
    position BIGINT              notification id of ``Round.RoundSettled``: settle order
    created_at DOUBLE PRECISION  the settle time from the settlement (never "now")
    payload TEXT                 the exact JSON body, rendered ONCE here (ASCII, compact)

``webhook_openings`` -- staging: a round's recorded opening from ``Round.Opened`` until
    the round settles or is voided (then the row is removed).
``webhook_operators`` -- each operator's ``webhook_url`` as recorded by the configuration
    history (``OperatorProfile`` events), so whether a round gets a webhook depends on the
    log only: a round settled while its operator had no ``webhook_url`` enqueues nothing,
    now and on every rebuild.

The body is ``{id, type: "round_settled", createdAt, operatorId, playerExternalId,
data}`` (``RoundSettledWebhook``, a box round's ``BoxRoundSettledWebhook``); ``data`` is
rendered by the game's play answer builders over the same recorded opening and settlement
(``application/games/registry.py``), so ``round`` and ``facts`` equal the play answer's:
``{round, wonItem, stake, facts}`` for the Upgrader (``stake`` is null in balance mode),
``{round, wonItems, facts}`` for a box round. ``createdAt`` is the settle time. Hence
rebuilding the projection from the log gives byte-identical ``webhook_outbox`` rows (with
the code of the rebuild: a row is never rewritten, so a body rendered before the views
grew a field, such as ``round.game``, is sent as it was rendered; only ``upgrader
projections rebuild webhook_outbox`` renders it anew).

Delivery bookkeeping is operational, not derived from the log, and lives apart in
``webhook_deliveries`` (state ``pending`` | ``delivered`` | ``dead``, attempts, next
attempt time, last error, lease). The projection only inserts a ``pending`` row there when
it enqueues a webhook, with ``ON CONFLICT DO NOTHING``: a rebuild keeps the delivery state
and does not send delivered webhooks again. The dispatcher (``projections.dispatcher``)
owns the rest of that table.

The webhook URL and the outbound secret used for a delivery are read from the running
configuration at send time (secrets are never recorded).

Note: a deployment that adds this projection to an existing log catches up from position
0 and enqueues a webhook for every past settled round of an operator with a webhook_url;
operators de-duplicate by ``id``.
"""

from __future__ import annotations

import json
from operator import itemgetter
from typing import Any
from uuid import UUID, uuid5

import msgspec
from eventsourcing.utils import get_topic

from application.clock import iso_utc
from application.games.registry import views_of
from application.store.sql import execute_in_order
from domain.config_history import OperatorProfile
from domain.round import Round, RoundTerms
from projections.batching import select_in
from projections.unnest import columns, first_per_key, floats, net_insert_delete, on_postgres

NAME = "webhook_outbox"
WEBHOOK_TYPE = "round_settled"

OPENED = get_topic(Round.Opened)
SETTLED = get_topic(Round.RoundSettled)
VOIDED = get_topic(Round.RoundVoided)
PROFILE_REGISTERED = get_topic(OperatorProfile.Registered)
PROFILE_SETTINGS = get_topic(OperatorProfile.SettingsChanged)

DELIVERIES_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS webhook_deliveries (
        webhook_id TEXT PRIMARY KEY,
        state TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at DOUBLE PRECISION NOT NULL,
        first_failed_at DOUBLE PRECISION,
        last_error TEXT,
        last_attempt_at DOUBLE PRECISION,
        delivered_at DOUBLE PRECISION,
        leased_until DOUBLE PRECISION,
        lease_owner TEXT)""",
    """CREATE INDEX IF NOT EXISTS webhook_deliveries_state
        ON webhook_deliveries (state, next_attempt_at)""",
]

# The tables rebuilt from the log (``webhook_deliveries`` is not one of them).
PROJECTION_TABLES = ("webhook_outbox", "webhook_openings", "webhook_operators")


def webhook_id(round_id: UUID) -> str:
    """The webhook's ``id``: stable across retries, rebuilds and crashes."""
    return str(uuid5(round_id, WEBHOOK_TYPE))


def render_payload(hook_id: str, opening_text: str, settlement: dict[str, Any]) -> str:
    """The exact body (compact, ASCII JSON) for a settled round of any game, from its
    recorded opening (the stored JSON text) and settlement."""
    views = views_of(opening_text)
    terms = RoundTerms.decode(opening_text)
    body = views.webhook(
        id=hook_id,
        type=WEBHOOK_TYPE,
        created_at=iso_utc(settlement["settled_at"]),
        operator_id=terms.operator_id,
        player_external_id=terms.player_external_id,
        data=views.webhook_data(opening_text, settlement),
    )
    return json.dumps(msgspec.to_builtins(body), separators=(",", ":"))


class WebhookOutbox:
    name = NAME
    rebuild_tables = PROJECTION_TABLES  # webhook_deliveries is operational state
    topics = frozenset({OPENED, SETTLED, VOIDED, PROFILE_REGISTERED, PROFILE_SETTINGS})
    schema = [
        """CREATE TABLE IF NOT EXISTS webhook_outbox (
            webhook_id TEXT PRIMARY KEY,
            round_id TEXT NOT NULL UNIQUE,
            operator_id TEXT NOT NULL,
            player_external_id TEXT NOT NULL,
            position BIGINT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            payload TEXT NOT NULL)""",
        """CREATE INDEX IF NOT EXISTS webhook_outbox_player
            ON webhook_outbox (operator_id, player_external_id, position)""",
        """CREATE TABLE IF NOT EXISTS webhook_openings (
            round_id TEXT PRIMARY KEY, opening TEXT NOT NULL)""",
        """CREATE TABLE IF NOT EXISTS webhook_operators (
            profile_id TEXT PRIMARY KEY, operator_id TEXT NOT NULL, webhook_url TEXT)""",
        *DELIVERIES_SCHEMA,
    ]

    def process(self, cur: Any, event: Any, position: int) -> None:
        if isinstance(event, OperatorProfile.Registered):
            cur.execute(
                "INSERT INTO webhook_operators (profile_id, operator_id, webhook_url) "
                "VALUES (?, ?, NULL) ON CONFLICT (profile_id) DO NOTHING",
                (event.originator_id.hex, event.operator_id),
            )
            return
        if isinstance(event, OperatorProfile.SettingsChanged):
            cur.execute(
                "UPDATE webhook_operators SET webhook_url = ? WHERE profile_id = ?",
                (event.settings.get("webhook_url") or None, event.originator_id.hex),
            )
            return
        round_id = event.originator_id.hex
        if isinstance(event, Round.Opened):
            cur.execute(
                "INSERT INTO webhook_openings (round_id, opening) VALUES (?, ?) "
                "ON CONFLICT (round_id) DO NOTHING",
                (round_id, json.dumps(event.opening, separators=(",", ":"))),
            )
            return
        cur.execute("SELECT opening FROM webhook_openings WHERE round_id = ?", (round_id,))
        row = cur.fetchone()
        cur.execute("DELETE FROM webhook_openings WHERE round_id = ?", (round_id,))
        if row is None or not isinstance(event, Round.RoundSettled):
            return  # voided: no webhook
        opening = RoundTerms.decode(row[0])
        if not self._has_webhook(cur, opening.operator_id):
            return
        settlement = event.settlement
        hook_id = webhook_id(event.originator_id)
        cur.execute(
            "INSERT INTO webhook_outbox (webhook_id, round_id, operator_id, "
            "player_external_id, position, created_at, payload) VALUES (?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (webhook_id) DO NOTHING",
            (
                hook_id,
                round_id,
                opening.operator_id,
                opening.player_external_id,
                position,
                settlement["settled_at"],
                render_payload(hook_id, row[0], settlement),
            ),
        )
        cur.execute(
            "INSERT INTO webhook_deliveries (webhook_id, state, attempts, next_attempt_at) "
            "VALUES (?, 'pending', 0, ?) ON CONFLICT (webhook_id) DO NOTHING",
            (hook_id, settlement["settled_at"]),
        )

    def process_batch(self, cur: Any, items: list[Any], after: int) -> None:
        """As ``process`` per item, with the reads answered from two queries made before
        any write (the openings of the batch's rounds, the whole small operators table)
        and kept up to date in memory as the batch's own events change them; the writes
        go in event order, pipelined."""
        round_ids = [
            it.event.originator_id.hex
            for it in items
            if not isinstance(
                it.event, (OperatorProfile.Registered, OperatorProfile.SettingsChanged)
            )
        ]
        openings: dict[str, str | None] = dict(
            select_in(
                cur,
                "SELECT round_id, opening FROM webhook_openings WHERE round_id IN ({keys})",
                round_ids,
            )
        )
        cur.execute("SELECT profile_id, operator_id, webhook_url FROM webhook_operators")
        operators = {profile: [operator, url] for profile, operator, url in cur.fetchall()}
        statements: list[tuple[str, tuple[Any, ...]]] = []
        for item in items:
            event, position = item.event, item.position
            if isinstance(event, OperatorProfile.Registered):
                profile = event.originator_id.hex
                statements.append((_REGISTER, (profile, event.operator_id)))
                operators.setdefault(profile, [event.operator_id, None])
                continue
            if isinstance(event, OperatorProfile.SettingsChanged):
                profile, url = event.originator_id.hex, event.settings.get("webhook_url") or None
                statements.append((_SETTINGS, (url, profile)))
                if profile in operators:
                    operators[profile][1] = url
                continue
            round_id = event.originator_id.hex
            if isinstance(event, Round.Opened):
                text = json.dumps(event.opening, separators=(",", ":"))
                statements.append((_OPEN, (round_id, text)))
                if openings.get(round_id) is None:  # absent or deleted: the insert lands
                    openings[round_id] = text
                continue
            stored = openings.get(round_id)
            statements.append((_CLOSE, (round_id,)))
            openings[round_id] = None
            if stored is None or not isinstance(event, Round.RoundSettled):
                continue  # voided: no webhook
            opening = RoundTerms.decode(stored)
            operator_id = opening.operator_id
            url = next((u for op, u in operators.values() if op == operator_id), None)
            if not url:
                continue
            settlement = event.settlement
            hook_id = webhook_id(event.originator_id)
            statements.append(
                (
                    _ENQUEUE,
                    (
                        hook_id,
                        round_id,
                        operator_id,
                        opening.player_external_id,
                        position,
                        settlement["settled_at"],
                        render_payload(hook_id, stored, settlement),
                    ),
                )
            )
            statements.append((_PENDING, (hook_id, settlement["settled_at"])))
        if on_postgres(cur):
            _write_unnest(cur, statements)
        else:
            execute_in_order(cur, statements)

    @staticmethod
    def _has_webhook(cur: Any, operator_id: str) -> bool:
        cur.execute(
            "SELECT webhook_url FROM webhook_operators WHERE operator_id = ?", (operator_id,)
        )
        row = cur.fetchone()
        return bool(row and row[0])


_REGISTER = (
    "INSERT INTO webhook_operators (profile_id, operator_id, webhook_url) "
    "VALUES (?, ?, NULL) ON CONFLICT (profile_id) DO NOTHING"
)
_SETTINGS = "UPDATE webhook_operators SET webhook_url = ? WHERE profile_id = ?"
_OPEN = (
    "INSERT INTO webhook_openings (round_id, opening) VALUES (?, ?) "
    "ON CONFLICT (round_id) DO NOTHING"
)
_CLOSE = "DELETE FROM webhook_openings WHERE round_id = ?"
_ENQUEUE = (
    "INSERT INTO webhook_outbox (webhook_id, round_id, operator_id, "
    "player_external_id, position, created_at, payload) VALUES (?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (webhook_id) DO NOTHING"
)
_PENDING = (
    "INSERT INTO webhook_deliveries (webhook_id, state, attempts, next_attempt_at) "
    "VALUES (?, 'pending', 0, ?) ON CONFLICT (webhook_id) DO NOTHING"
)

_CLOSE_ANY = "DELETE FROM webhook_openings WHERE round_id = ANY(%b::text[])"
_OPEN_UNNEST = (
    "INSERT INTO webhook_openings (round_id, opening) "
    "SELECT * FROM unnest(%b::text[], %b::text[]) ON CONFLICT (round_id) DO NOTHING"
)
_ENQUEUE_UNNEST = (
    "INSERT INTO webhook_outbox (webhook_id, round_id, operator_id, "
    "player_external_id, position, created_at, payload) "
    "SELECT * FROM unnest(%b::text[], %b::text[], %b::text[], %b::text[], %b::bigint[], "
    "%b::double precision[], %b::text[]) ON CONFLICT (webhook_id) DO NOTHING"
)
_PENDING_UNNEST = (
    "INSERT INTO webhook_deliveries (webhook_id, state, attempts, next_attempt_at) "
    "SELECT webhook_id, 'pending', 0, next_attempt_at FROM unnest(%b::text[], "
    "%b::double precision[]) AS u(webhook_id, next_attempt_at) "
    "ON CONFLICT (webhook_id) DO NOTHING"
)


def _write_unnest(cur: Any, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
    """PostgreSQL: the batch's statements with the same result, a few over arrays. The
    four tables are independent (no statement reads another table), so each is written
    on its own: ``webhook_operators`` (rare) in event order; ``webhook_openings`` by
    ``net_insert_delete``; ``webhook_outbox`` and ``webhook_deliveries``, never deleted
    from here, by ``first_per_key`` (``webhook_id`` is derived from ``round_id``, the
    outbox's other unique key, so one decides the other)."""
    operators = [(sql, row) for sql, row in statements if sql is _REGISTER or sql is _SETTINGS]
    closed, opened = net_insert_delete(
        (sql is _OPEN, row[0], row) for sql, row in statements if sql is _OPEN or sql is _CLOSE
    )
    hooks = first_per_key((row for sql, row in statements if sql is _ENQUEUE), itemgetter(0))
    pending = first_per_key((row for sql, row in statements if sql is _PENDING), itemgetter(0))
    writes: list[tuple[str, Any]] = list(operators)
    if closed:
        writes.append((_CLOSE_ANY, (closed,)))
    if opened:
        writes.append((_OPEN_UNNEST, columns(opened)))
    if hooks:
        ids, rounds, operator_ids, players, positions, created, payloads = columns(hooks)
        writes.append(
            (
                _ENQUEUE_UNNEST,
                (ids, rounds, operator_ids, players, positions, floats(created), payloads),
            )
        )
    if pending:
        ids, next_at = columns(pending)
        writes.append((_PENDING_UNNEST, (ids, floats(next_at))))
    execute_in_order(cur, writes)


def reset_projection(db: Any) -> None:
    """Empty the projection's own tables and rewind it to position 0 (a rebuild follows
    with ``ProjectionRunner.catch_up``). Delivery state is kept."""
    with db.transaction() as cur:
        # the tracking row first: a concurrent runner step waits for this or fails its CAS
        cur.execute("UPDATE projection_tracking SET position = 0 WHERE name = ?", (NAME,))
        for table in PROJECTION_TABLES:
            cur.execute(f"DELETE FROM {table}")  # noqa: S608 -- fixed table names

"""PostgreSQL: a projection's batch written as a few statements over arrays leaves exactly
the rows of its statements run one by one in event order (the SQLite path), including
batches that touch the same key several times, and refuses (writing nothing, so the
caller runs the statements in order) where only their order decides.

Each case starts from the same stored rows (some conflicting with the batch), runs the
ordered statements in one transaction and the arrays in another, and compares every
column of every row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from application.store.database_url import ensure_schema, parse_database_url
from application.store.sql import execute_in_order, open_database
from projections import analytics_tables, outbox, rounds, wallet_ops
from projections.runner import ensure_schema as ensure_tables

pytestmark = pytest.mark.postgres

Statements = list[tuple[str, tuple[Any, ...]]]


@pytest.fixture
def db(postgres_url: str) -> Iterator[Any]:
    location = parse_database_url(postgres_url)
    ensure_schema(location)
    database = open_database(location, pool_size=1)
    ensure_tables(
        database,
        [
            *rounds.RoundHistory.schema,
            *wallet_ops.WalletDebitAttempts.schema,
            *outbox.WebhookOutbox.schema,
            *analytics_tables.SCHEMA,
        ],
    )
    yield database
    database.close()


def _dump(cur: Any, tables: list[str]) -> dict[str, list[tuple[Any, ...]]]:
    dump = {}
    for table in tables:
        cur.execute(f"SELECT * FROM {table}")  # noqa: S608 - our own table names
        dump[table] = sorted((tuple(row) for row in cur.fetchall()), key=repr)
    return dump


def _run(db: Any, tables: list[str], stored: Statements, write: Callable[[Any], Any]) -> Any:
    with db.transaction() as cur:
        for table in tables:
            cur.execute(f"DELETE FROM {table}")  # noqa: S608
        for sql, params in stored:
            cur.execute(sql, params)
        answer = write(cur)
        return answer, _dump(cur, tables)


def _same_rows(
    db: Any, tables: list[str], stored: Statements, batch: Statements, unnest: Callable
) -> dict[str, list[tuple[Any, ...]]]:
    """The rows of ``batch`` in order; asserts the arrays leave the same ones."""
    _, expected = _run(db, tables, stored, lambda cur: execute_in_order(cur, batch))
    answer, rows = _run(db, tables, stored, lambda cur: unnest(cur, batch))
    assert answer in (True, None)  # written (the functions without a refusal return None)
    assert rows == expected
    return rows


def _refused(
    db: Any, tables: list[str], stored: Statements, batch: Statements, unnest: Callable
) -> None:
    """``unnest`` refuses ``batch`` and writes nothing."""
    _, before = _run(db, tables, stored, lambda cur: None)
    answer, rows = _run(db, tables, stored, lambda cur: unnest(cur, batch))
    assert answer is False
    assert rows == before


def _round(round_id: str, position: int, public_id: str | None = None) -> tuple[Any, ...]:
    opening = f'{{"public_id":"{public_id or "p" + round_id}","note":"a \\"quoted\\" {{x}}"}}'
    return (round_id, public_id or f"p{round_id}", "op", "player", "balance", position, opening)


def test_round_history_twice_the_same_round(db: Any) -> None:
    tables = ["round_history"]
    stored = [(rounds._INSERT, _round("r0", 1))]
    batch = [
        (rounds._INSERT, _round("r1", 10)),
        (rounds._UPDATE, ("settled", 11, '{"v":1}', "r1")),
        (rounds._INSERT, _round("r1", 12, "other")),  # the same round again: nothing
        (rounds._UPDATE, ("voided", 13, '{"v":2}', "r1")),  # updated twice: the last wins
        (rounds._INSERT, _round("r0", 14, "p-new")),  # stored already: nothing
        (rounds._UPDATE, ("settled", 15, '{"v":"r0"}', "r0")),
        (rounds._UPDATE, ("settled", 16, '{"v":"none"}', "r9")),  # no such round
        (rounds._INSERT, _round("r2", 17)),
    ]
    rows = _same_rows(db, tables, stored, batch, rounds._write_unnest)
    assert [(r[0], r[1], r[5], r[6], r[8]) for r in rows["round_history"]] == [
        ("r0", "pr0", "settled", 15, '{"v":"r0"}'),
        ("r1", "pr1", "voided", 13, '{"v":2}'),
        ("r2", "pr2", "open", 17, None),
    ]
    # updated before the batch inserts it: only the order says what happens
    late = [(rounds._UPDATE, ("settled", 20, "{}", "r3")), (rounds._INSERT, _round("r3", 21))]
    _refused(db, tables, stored, late, rounds._write_unnest)


def _attempt(key: str, round_id: str, attempt: int, at: float | int) -> tuple[str, tuple]:
    return wallet_ops._ATTEMPT, (key, round_id, attempt, 500, "EUR", at)


def test_wallet_debit_attempts_twice_the_same_key(db: Any) -> None:
    tables = ["wallet_debit_attempts"]
    stored = [_attempt("k0", "ra", 1, 1.5)]
    batch = [
        _attempt("k1", "rb", 1, 2),  # an int time beside floats
        (wallet_ops._ANSWERED, ("debited", 3.25, "rb", 1)),
        _attempt("k1", "rb", 2, 4.5),  # the same debit key again: nothing
        (wallet_ops._ESCALATE, ("ra", 1)),
        (wallet_ops._UNCERTAIN, ("uncertain", 5, "rc", 1)),  # no such attempt
        _attempt("k2", "rd", 1, 6.0),
        (wallet_ops._UNCERTAIN, ("uncertain", 7.75, "rd", 1)),
    ]
    rows = _same_rows(db, tables, stored, batch, wallet_ops._debits_unnest)
    assert [r[:3] + r[5:] for r in rows["wallet_debit_attempts"]] == [
        ("k0", "ra", 1, "in_flight", 1.5, None, None, 1),
        ("k1", "rb", 1, "debited", 2.0, None, 3.25, 0),
        ("k2", "rd", 1, "uncertain", 6.0, 7.75, None, 0),
    ]
    twice = [
        _attempt("k3", "re", 1, 8.0),
        (wallet_ops._UNCERTAIN, ("uncertain", 9.0, "re", 1)),
        (wallet_ops._ANSWERED, ("rolled_back", 10.0, "re", 1)),
    ]
    _refused(db, tables, stored, twice, wallet_ops._debits_unnest)
    late = [(wallet_ops._ANSWERED, ("debited", 11.0, "rf", 1)), _attempt("k4", "rf", 1, 12.0)]
    _refused(db, tables, stored, late, wallet_ops._debits_unnest)


def test_webhook_outbox_twice_the_same_key(db: Any) -> None:
    tables = ["webhook_openings", "webhook_outbox", "webhook_deliveries", "webhook_operators"]
    stored = [
        (outbox._OPEN, ("r0", '{"stored":0}')),
        (outbox._OPEN, ("r5", '{"stored":5}')),
        (outbox._ENQUEUE, ("h0", "r0", "op", "pl", 1, 1.0, '{"id":"h0"}')),
        (outbox._PENDING, ("h0", 1.0)),
        (outbox._REGISTER, ("prof0", "op")),
    ]
    batch = [
        (outbox._OPEN, ("r1", '{"a":1}')),
        (outbox._CLOSE, ("r1",)),
        (outbox._OPEN, ("r1", '{"a":2}')),  # after its delete: this one lands
        (outbox._OPEN, ("r1", '{"a":3}')),  # then nothing
        (outbox._CLOSE, ("r0",)),
        (outbox._OPEN, ("r0", '{"again":0}')),
        (outbox._OPEN, ("r2", '{"b":1}')),
        (outbox._OPEN, ("r2", '{"b":2}')),  # never deleted: the first stays
        (outbox._OPEN, ("r5", '{"not":5}')),  # stored already: nothing
        (outbox._OPEN, ("r3", '{"c":1}')),
        (outbox._CLOSE, ("r3",)),  # opened and closed in the batch: gone
        (outbox._CLOSE, ("r4",)),  # not there
        (outbox._REGISTER, ("prof1", "op1")),
        (outbox._SETTINGS, ("http://a", "prof1")),
        (outbox._SETTINGS, ("http://b", "prof1")),
        (outbox._ENQUEUE, ("h1", "r1", "op", "pl", 7, 7, '{"id":"h1","s":"\\\\"}')),
        (outbox._PENDING, ("h1", 7)),
        (outbox._ENQUEUE, ("h1", "r1", "op", "pl", 8, 8.5, '{"id":"h1","again":1}')),
        (outbox._PENDING, ("h1", 8.5)),
        (outbox._ENQUEUE, ("h0", "r0", "op", "pl", 9, 9.5, '{"id":"h0","again":1}')),
        (outbox._PENDING, ("h0", 9.5)),
    ]
    rows = _same_rows(db, tables, stored, batch, outbox._write_unnest)
    assert rows["webhook_openings"] == [
        ("r0", '{"again":0}'),
        ("r1", '{"a":2}'),
        ("r2", '{"b":1}'),
        ("r5", '{"stored":5}'),
    ]
    assert [r[:2] + r[4:6] for r in rows["webhook_outbox"]] == [
        ("h0", "r0", 1, 1.0),
        ("h1", "r1", 7, 7.0),
    ]
    assert [r[:4] for r in rows["webhook_deliveries"]] == [
        ("h0", "pending", 0, 1.0),
        ("h1", "pending", 0, 7.0),
    ]
    assert rows["webhook_operators"] == [("prof0", "op", None), ("prof1", "op1", "http://b")]


def _fact(round_id: str, position: int, settled_at: float | int) -> tuple[Any, ...]:
    fact = dict.fromkeys(analytics_tables.FACT_COLUMNS, 1)
    fact.update(
        round_id=round_id,
        public_id=f"p{round_id}",
        operator_id="op",
        player_external_id="pl",
        mode="balance",
        currency="EUR",
        base_currency="EUR",
        fx_rate="1.25",
        won_inventory_item_id=None,
        opened_at=1.5,
        settled_at=settled_at,
        settled_day="2027-01-15",
        position=position,
    )
    return tuple(fact[c] for c in analytics_tables.FACT_COLUMNS)


def _flow(position: int, movement: str, amount: int | None, *rest: Any) -> tuple[Any, ...]:
    """An ``analytics_item_flows`` row; ``rest``: amount_currency, reference, at, day."""
    return (position, 7, "agg7", "op", "pl", 3, movement, 900, "EUR", 800, "EUR", amount, *rest)


def test_analytics_twice_the_same_key(db: Any) -> None:
    tables = [
        "analytics_open_rounds",
        "analytics_stakes",
        "analytics_rounds",
        "analytics_item_flows",
        "analytics_daily",
    ]
    sums = len(analytics_tables.DAILY_SUMS)
    day = ("op", "2027-01-15", "EUR", "balance", 5000)
    stored = [
        (analytics_tables._OPEN, ("r0", '{"stored":0}')),
        (analytics_tables._STAKE, (3, "pr-stored", 100, "EUR")),
        (analytics_tables._STAKE, (4, "pr-stored", 110, "EUR")),
        (analytics_tables._FACT, _fact("r9", 1, 2.0)),
        (analytics_tables._FLOW, _flow(1, "granted", 900, "EUR", None, 1.0, "2027-01-15")),
        (analytics_tables._DAILY, (*day, 2, *range(1, sums + 1))),
    ]
    batch = [
        (analytics_tables._OPEN, ("r1", '{"a":1}')),
        (analytics_tables._STAKE, (1, "pr1", 200, "EUR")),
        (analytics_tables._STAKE, (2, "pr1", 210, "USD")),
        (analytics_tables._FACT, _fact("r1", 10, 11)),  # an int time beside floats
        (analytics_tables._CLOSE, ("r1",)),
        (analytics_tables._FACT, _fact("r1", 12, 13.5)),  # the same round again: nothing
        (analytics_tables._FACT, _fact("r9", 14, 15.5)),  # stored already: nothing
        (analytics_tables._UNSTAKE, (1,)),
        (analytics_tables._STAKE, (1, "pr2", 220, "GBP")),  # staked again after its delete
        (analytics_tables._STAKE, (2, "pr3", 230, "CHF")),  # staked twice: the last wins
        (analytics_tables._UNSTAKE, (3,)),  # a stored stake, consumed
        (analytics_tables._STAKE, (4, "pr4", 240, "EUR")),  # a stored stake, staked again
        (analytics_tables._OPEN, ("r2", '{"b":1}')),
        (analytics_tables._CLOSE, ("r2",)),
        (analytics_tables._OPEN, ("r2", '{"b":2}')),
        (analytics_tables._OPEN, ("r0", '{"not":0}')),  # stored already: nothing
        (analytics_tables._FLOW, _flow(20, "granted", None, "EUR", "ref", 21, "2027-01-15")),
        (analytics_tables._FLOW, _flow(20, "consumed", 5, "USD", "x", 22.5, "2027-01-16")),
        (analytics_tables._FLOW, _flow(1, "consumed", 6, None, None, 23.5, "2027-01-16")),
        (analytics_tables._DAILY, (*day, 2, *([10] * sums))),
        (analytics_tables._DAILY, (*day[:4], 2500, 2, *([20] * sums))),
        (analytics_tables._RATIOS, day),
        (analytics_tables._RATIOS, (*day[:4], 2500)),
    ]
    rows = _same_rows(db, tables, stored, batch, analytics_tables._write_unnest)
    assert rows["analytics_open_rounds"] == [("r0", '{"stored":0}'), ("r2", '{"b":2}')]
    assert rows["analytics_stakes"] == [
        (1, "pr2", 220, "GBP"),
        (2, "pr3", 230, "CHF"),
        (4, "pr4", 240, "EUR"),
    ]
    assert [(r[0], r[23], r[25]) for r in rows["analytics_rounds"]] == [
        ("r1", 11.0, 10),
        ("r9", 2.0, 1),
    ]
    assert [(r[0], r[6], r[11], r[14]) for r in rows["analytics_item_flows"]] == [
        (1, "granted", 900, 1.0),
        (20, "granted", None, 21.0),
    ]
    assert len(rows["analytics_daily"]) == 2

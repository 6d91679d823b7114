"""A 503 means "nothing happened" or says that the outcome is unknown (issue 19, item 3).

On SQLite and PostgreSQL, over real HTTP, with the real reference wallet:

- the store is made slow exactly between the wallet's acceptance of a debit and the
  settle (an open write transaction from another connection on SQLite, a held lock on
  the event table on PostgreSQL, taken by the wallet as it accepts the debit): the play
  answers 200 (settled) or ``OUTCOME_UNKNOWN``, never ``SERVICE_UNAVAILABLE``; a retry
  returns the settled round; the wallet shows one debit and no rollback;
- the store is slow before the debit: ``SERVICE_UNAVAILABLE``, and the wallet keeps no
  debit (the reconciler rolls back the intent, which the wallet never saw);
- an items play or a shipping request (one commit) held by the store past the deadline:
  ``OUTCOME_UNKNOWN``, and a retry answers the commit once it landed;
- overload: ``test_overload_answers.py``.

The deadlines are lowered for these tests (``store_calls.STORE_DEADLINE_SECONDS`` and
``FINISH_DEADLINE_SECONDS`` are read on every call); the fixtures are in this folder's
conftest, the slow store in ``tests/support/slow_store.py``.
"""

from __future__ import annotations

import threading
import time

import pytest

from application.clock import ManualClock
from application.platform import Platform
from application.store import calls as store_calls
from domain.ids import inventory_item_id
from ops.reference_operator.wallet import ThreadedWalletServer
from tests.support.items import T900
from tests.support.ledger import settled_balance_bets
from tests.support.live import Api
from tests.support.slow_store import (
    StoreHold,
    code,
    debit_keys,
    history,
    play,
    post,
    public_id,
    reconcile,
    won_item,
)
from tests.support.waiting import wait_until

# long enough that a busy test machine starts a store call well within it
STORE_DEADLINE = 0.5
FINISH_DEADLINE = 2.5


@pytest.fixture
def deadlines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_calls, "STORE_DEADLINE_SECONDS", STORE_DEADLINE)
    monkeypatch.setattr(store_calls, "FINISH_DEADLINE_SECONDS", FINISH_DEADLINE)


# -- the store slow between the wallet's acceptance and the settle ----------------------------


@pytest.mark.parametrize(
    ("held_for", "answered"),
    [(STORE_DEADLINE + 0.3, "OK"), (None, "OUTCOME_UNKNOWN")],
    ids=["past-the-store-deadline", "past-the-finish-deadline"],
)
def test_a_debit_the_wallet_accepted_is_settled_or_answered_outcome_unknown(
    api: Api,
    platform: Platform,
    wallet: ThreadedWalletServer,
    hold: StoreHold,
    deadlines: None,
    held_for: float | None,
    answered: str,
) -> None:
    """The wallet takes the store's write lock as it accepts the debit: the settle meets a
    store slower than the request's store deadline. Held ``held_for`` seconds it finishes
    (200); held until the answer came, the answer is OUTCOME_UNKNOWN; then released, the
    settle lands and a retry returns the round."""
    player = "slow-settle"
    wallet.ledger.fund("op-a", player, "EUR", 10_000)

    def take() -> None:
        hold.take()
        if held_for is not None:
            threading.Timer(held_for, hold.release).start()  # the store's slowness, not a wait

    wallet.ledger.on_accepted_debit = take
    started = time.monotonic()
    first = play(api, player, "a-1")
    took = time.monotonic() - started
    assert hold.held.is_set()
    assert code(first) == answered, first.text
    assert took > STORE_DEADLINE
    if answered == "OUTCOME_UNKNOWN":
        assert first.status_code == 503
        assert first.json()["error"]["message"] == (
            "the wallet accepted the debit and the round is still being recorded; the outcome "
            "is not known yet: retry with the same clientActionId to learn it"
        )
        assert not hold.released.is_set()  # answered while the store was still held
    hold.release()

    retry = wait_until(
        lambda: (r := play(api, player, "a-1")).status_code == 200 and r,
        timeout=10,
        what="the retry's settled round",
    )
    if answered == "OK":
        assert retry.content == first.content
    round_public = public_id(player, "a-1")
    assert retry.json()["round"]["publicId"] == round_public
    assert retry.json()["round"]["status"] == "settled"
    applied, kept = debit_keys(wallet.ledger, round_public)
    assert applied == kept == {f"{round_public}:1"}
    assert wallet.ledger.requests_of("wallet.rollback") == []
    assert wallet.ledger.balance("op-a", player, "EUR") == 9_000
    wait_until(lambda: history(api, player) == [round_public], what="the round in the history")
    assert wallet.ledger.net_debits("op-a") == settled_balance_bets(platform, "op-a") == 1000


def test_a_store_slow_before_the_debit_answers_service_unavailable_and_keeps_nothing(
    api: Api,
    platform: Platform,
    wallet: ThreadedWalletServer,
    hold: StoreHold,
    clock: ManualClock,
    deadlines: None,
) -> None:
    player = "slow-open"
    wallet.ledger.fund("op-a", player, "EUR", 10_000)
    hold.take()  # the intent's commit (before any wallet call) meets the slow store
    response = play(api, player, "b-1")
    assert (response.status_code, code(response)) == (503, "SERVICE_UNAVAILABLE")
    hold.release()
    assert wallet.ledger.requests_of("wallet.debit") == []
    reconcile(platform, clock)  # the intent, if it landed, is rolled back
    assert wallet.ledger.applied_debit_keys("op-a") == set()
    assert wallet.ledger.balance("op-a", player, "EUR") == 10_000
    assert history(api, player) == []
    assert settled_balance_bets(platform, "op-a") == 0


# -- one commit that may land after the deadline ---------------------------------------------


ITEM_ACTIONS = {
    "items-play": (
        "/api/s2s/upgrader/play-with-items",
        lambda item: {"stakeItemIds": [item], "chanceBps": 9000, "targetItemId": T900},
        "the play may have been recorded",
        "ItemConsumed",
    ),
    "shipping": (
        "/api/s2s/shipping",
        lambda item: {"inventoryItemIds": [item], "address": {"name": "A. Player"}},
        "the shipping request may have been recorded",
        "ItemShippingRequested",
    ),
}


@pytest.mark.parametrize("kind", list(ITEM_ACTIONS))
def test_a_commit_abandoned_after_it_began_answers_outcome_unknown(
    api: Api,
    platform: Platform,
    wallet: ThreadedWalletServer,
    hold: StoreHold,
    deadlines: None,
    kind: str,
) -> None:
    """An items play or a shipping request is one commit, with no wallet call: when the
    store holds it past the deadline it may still land, so the answer is OUTCOME_UNKNOWN
    (not "nothing happened"); once the store goes on, the commit lands and a retry of
    the action answers it."""
    path, fields, what, moved = ITEM_ACTIONS[kind]
    player = f"slow-{kind}"
    item = won_item(api, wallet, player)
    body = {"playerExternalId": player, "clientActionId": "c-1", **fields(item)}
    hold.take()
    first = post(api, path, body)
    assert (first.status_code, code(first)) == (503, "OUTCOME_UNKNOWN"), first.text
    assert first.json()["error"]["message"] == (
        f"{what}; the outcome is not known yet: retry with the same clientActionId to learn it"
    )
    hold.release()
    retry = wait_until(
        lambda: (r := post(api, path, body)).status_code == 200 and r,
        timeout=10,
        what="the retry's answer",
    )
    assert post(api, path, body).content == retry.content
    events = platform.events.recorder.select_events(inventory_item_id(item))
    assert [e.topic.rsplit(".", 1)[-1] for e in events].count(moved) == 1

"""Settling a round, for any game: the draw and its grants saved with the round's settle
in one commit, tried again when the commit conflicts.

A conflict means another commit changed something this one read: most often another
round of the player took the seed pair's next nonce first, or (items mode) a staked item
moved. Each try loads the round afresh (``load_round``) and asks the game to draw again.
A round found settled answers its record; a balance-mode round whose debit ``attempt``
is no longer in flight (declared uncertain meanwhile) is not settled: 503, and the
reconciler rolls the debit back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from eventsourcing.persistence import IntegrityError

from application.errors import PlatformError
from application.platform import Platform
from application.wallet.refusals import wallet_unavailable
from domain.records import Record
from domain.round import Round

SETTLE_ATTEMPTS = 10


@dataclass(frozen=True)
class Drawn:
    """A game's draw for one try: its settlement record, the aggregates it changed (saved
    after the round, in this order: the seed pair, then what it grants) and the answer
    (the game's answer view)."""

    settlement: Record
    changed: list[Any]
    answer: Any


def saved_then_afresh(platform: Platform, saved: Round) -> Callable[[], Round]:
    """A balance-mode settle's ``load_round``: the first try settles the aggregate this
    process saved (no read); if another process changed the round meanwhile, the commit
    conflicts and later tries read it afresh."""
    tries = iter([saved])
    return lambda: next(tries, None) or platform.events.repository.get(saved.id)


def settle_with_retries(
    platform: Platform,
    load_round: Callable[[], Round],
    attempt: int | None,
    debit: dict[str, Any] | None,
    draw: Callable[[Round, int | None], Drawn],
    recorded_answer: Callable[[Round], Any],
    extra: Callable[[Round], list[Any]] | None = None,
) -> Any:
    """Balance mode passes the accepted ``debit`` (``draw`` is given its balance after);
    items mode passes ``extra``, which gives the consumed stake's aggregates to save in
    the same commit."""
    for _ in range(SETTLE_ATTEMPTS):
        round_ = load_round()
        if round_.status == "settled":
            return recorded_answer(round_)
        if attempt is not None and round_.attempt_state(attempt) != "in_flight":
            raise wallet_unavailable()
        drawn = draw(round_, debit["balance_after_minor"] if debit else None)
        if debit is not None:
            round_.settle(debit, drawn.settlement.record())
        else:
            round_.settle_without_debit(drawn.settlement.record())
        aggregates = [round_, *drawn.changed]
        if extra is not None:
            aggregates.extend(extra(round_))
        try:
            platform.events.save(*aggregates)
        except IntegrityError:
            continue
        return drawn.answer
    raise PlatformError("SERVICE_UNAVAILABLE", "the round could not be recorded; retry")

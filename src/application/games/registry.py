"""Every game's views of a recorded round, by its game key.

A round's opening records its game (``RoundTerms.game``; the Upgrader's openings, recorded
before games had keys, have none and are ``"upgrader"``). What reads rounds for every
game (the round history projection, the ``round_settled`` webhook outbox) asks here how a
settled round of that game renders, from the stored opening's JSON text and the
settlement's dict:

- ``round_view``: the round as history shows it (the play answer's ``round``);
- ``webhook_data``: the webhook's ``data``, from the play answer (decisions §9: ``round``
  and ``facts`` identical to the answer's): ``{round, wonItem, stake, facts}`` for the
  Upgrader (``stake`` null in balance mode), ``{round, wonItems, facts}`` for a box round;
- ``webhook``: the struct of the webhook's whole body (the OpenAPI document's words);
- ``answer``: the play answer of a settled round (what a copy of its action answers).

A game adds its entry to ``GAMES``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from application.games.boxes import round_answers as boxes
from application.games.upgrader import answers as upgrader
from application.games.upgrader.views import RoundSettledWebhook
from application.wire import Wire
from domain.round import Round
from domain.upgrader_round import UpgraderOpening, UpgraderSettlement

View = Callable[[str, dict[str, Any]], Wire]


@dataclass(frozen=True)
class GameViews:
    round_view: View
    webhook_data: View
    webhook: type[Wire]
    answer: Callable[[Round], Wire]


def _upgrader_round(opening_text: str, settlement: dict[str, Any]) -> Wire:
    opening = UpgraderOpening.decode(opening_text)
    return upgrader.round_wire(opening, UpgraderSettlement.of(settlement))


def _upgrader_data(opening_text: str, settlement: dict[str, Any]) -> Wire:
    opening = UpgraderOpening.decode(opening_text)
    return upgrader.webhook_data(opening, UpgraderSettlement.of(settlement))


GAMES: dict[str, GameViews] = {
    "upgrader": GameViews(
        _upgrader_round, _upgrader_data, RoundSettledWebhook, upgrader.recorded_answer
    ),
    "boxes": GameViews(
        boxes.round_view, boxes.webhook_data, boxes.BoxRoundSettledWebhook, boxes.recorded_answer
    ),
}


class _Game(msgspec.Struct):
    game: str = "upgrader"


_GAME_OF = msgspec.json.Decoder(_Game)


def views_of(opening_text: str) -> GameViews:
    """The views of the game a stored opening (its JSON text) names."""
    return GAMES[_GAME_OF.decode(opening_text).game]


def round_view(opening_text: str, settlement: dict[str, Any]) -> Wire:
    """A settled round as round history shows it."""
    return views_of(opening_text).round_view(opening_text, settlement)

"""Every game's views of a recorded round, by its game key.

A round's opening records its game (``RoundTerms.game``; the Upgrader's openings, recorded
before games had keys, have none and are ``"upgrader"``). What reads rounds for every
game (the round history projection, the ``round_settled`` webhook outbox) asks here how a
settled round of that game renders, from the stored opening's JSON text and the
settlement's dict:

- ``round_view``: the round as history shows it (the play answer's ``round``);
- ``play_answer``: the play answer, as plain JSON values;
- ``webhook_keys``: the keys of the play answer that the webhook's ``data`` carries
  (decisions §9: ``facts`` identical to the answer's). The Upgrader's ``data`` is
  ``{round, wonItem, stake, facts}`` (``stake`` null in balance mode); a box round's
  ``{round, wonItems, facts}``.

A game adds its entry to ``GAMES``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from application.games.boxes import round_answers as boxes
from application.games.upgrader.answers import play_answer, round_wire
from domain.upgrader_round import UpgraderOpening, UpgraderSettlement

View = Callable[[str, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class GameViews:
    round_view: View
    play_answer: View
    webhook_keys: tuple[str, ...]


def _upgrader_round(opening_text: str, settlement: dict[str, Any]) -> dict[str, Any]:
    return round_wire(UpgraderOpening.decode(opening_text), UpgraderSettlement.of(settlement))


def _upgrader_answer(opening_text: str, settlement: dict[str, Any]) -> dict[str, Any]:
    return play_answer(UpgraderOpening.decode(opening_text), UpgraderSettlement.of(settlement))


GAMES: dict[str, GameViews] = {
    "upgrader": GameViews(
        _upgrader_round, _upgrader_answer, ("round", "wonItem", "stake", "facts")
    ),
    "boxes": GameViews(boxes.round_view, boxes.answer_view, ("round", "wonItems", "facts")),
}


class _Game(msgspec.Struct):
    game: str = "upgrader"


_GAME_OF = msgspec.json.Decoder(_Game)


def views_of(opening_text: str) -> GameViews:
    """The views of the game a stored opening (its JSON text) names."""
    return GAMES[_GAME_OF.decode(opening_text).game]


def round_view(opening_text: str, settlement: dict[str, Any]) -> dict[str, Any]:
    """A settled round as round history shows it."""
    return views_of(opening_text).round_view(opening_text, settlement)


def webhook_data(opening_text: str, settlement: dict[str, Any]) -> dict[str, Any]:
    """The ``data`` of a settled round's ``round_settled`` webhook."""
    views = views_of(opening_text)
    answer = views.play_answer(opening_text, settlement)
    return {key: answer.get(key) for key in views.webhook_keys}

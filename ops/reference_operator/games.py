"""The reference operator's game choice: the Upgrader or one of its boxes.

The page offers the Upgrader and every box of the operator's S2S catalogue (a SIGNED
``GET /api/s2s/boxes``, asked when the page is drawn, so a box added to the platform's
configuration shows without restarting this site). A choice is one query parameter,
``game``: ``upgrader`` (the default) or ``box-<boxId>``; the launch turns it into the
launch body of interface 4.1 / decisions section 10: ``{gameKey: "upgrader", target: {}}``
or ``{gameKey: "boxes", target: {boxId}}``.

When the catalogue cannot be read (a key without ``catalog_access``, the box game not
offered, the platform away) the page offers the Upgrader alone and logs why; a box
launch is still passed to the platform, which answers for it (an unknown box is its 404
``BOX_NOT_FOUND``, shown in words).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any

BOXES_PATH = "/api/s2s/boxes"
UPGRADER = "upgrader"
BOX_CHOICE = re.compile(r"^box-([1-9][0-9]{0,9})$")


@dataclass(frozen=True)
class Choice:
    """A game to launch: the Upgrader, or the box ``box_id``."""

    box_id: int | None = None

    @property
    def value(self) -> str:
        return UPGRADER if self.box_id is None else f"box-{self.box_id}"

    def launch_body(self, player: str) -> dict[str, Any]:
        if self.box_id is None:
            return {"playerExternalId": player, "gameKey": "upgrader", "target": {}}
        return {"playerExternalId": player, "gameKey": "boxes", "target": {"boxId": self.box_id}}

    def query(self) -> dict[str, str]:
        """The launch URL's parameter (none for the Upgrader: its URL is unchanged)."""
        return {} if self.box_id is None else {"game": self.value}


def parse_choice(value: str | None) -> Choice | None:
    """``upgrader``/absent -> the Upgrader; ``box-N`` -> box N; anything else None."""
    if value in (None, "", UPGRADER):
        return Choice()
    match = BOX_CHOICE.match(value)
    return Choice(int(match.group(1))) if match else None


@dataclass(frozen=True)
class BoxOffer:
    box_id: int
    name: str
    price: str  # e.g. "5.00 EUR"


def format_price(minor: int, currency: str, exponent: int) -> str:
    digits = str(abs(minor)).rjust(exponent + 1, "0")
    whole = digits[:-exponent] if exponent else digits
    text = f"{whole}.{digits[-exponent:]}" if exponent else whole
    return f"{'-' if minor < 0 else ''}{text} {currency}"


def box_offers(answer: dict[str, Any], exponent: int) -> list[BoxOffer]:
    """The boxes of a ``GET /api/s2s/boxes`` answer (prices in the base currency)."""
    offers = []
    for box in answer.get("boxes", []):
        try:
            price = format_price(int(box["priceMinor"]), str(box["currency"]), exponent)
            offers.append(BoxOffer(int(box["boxId"]), str(box["name"]), price))
        except (KeyError, TypeError, ValueError):
            continue
    return offers


def choice_form(
    player: str, chosen: Choice, boxes: list[BoxOffer], keep: dict[str, str] | None = None
) -> str:
    """The header's game picker: a GET form to this page (site.js sends it on change);
    ``keep``: the page's other parameters (currency, locale), carried along."""
    options = [_option(UPGRADER, "Upgrader", chosen)]
    if boxes:
        options.append('<optgroup label="Boxes">')
        options += [
            _option(f"box-{box.box_id}", f"{box.name} \u00b7 {box.price}", chosen) for box in boxes
        ]
        options.append("</optgroup>")
    elif chosen.box_id is not None:
        options.append(_option(chosen.value, f"Box {chosen.box_id}", chosen))
    return (
        '<form class="games" method="get" action="/" id="game-form">'
        + "".join(
            f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
            for k, v in {"player": player, **(keep or {})}.items()
        )
        + '<label for="game-choice" class="games-label">Game</label>'
        f'<select id="game-choice" name="game">{"".join(options)}</select>'
        '<button type="submit" id="game-go">Play</button>'
        "</form>"
    )


def _option(value: str, label: str, chosen: Choice) -> str:
    selected = " selected" if value == chosen.value else ""
    return f'<option value="{html.escape(value)}"{selected}>{html.escape(label)}</option>'

"""Launching the box game on a box (decisions §10): ``{gameKey: "boxes", target: {boxId}}``.

A box launch's ``target`` is exactly ``{"boxId": <integer>}``: without ``boxId``, with
another key beside it or a ``boxId`` that is not an integer, it is 422
``LAUNCH_TARGET_INVALID``; a box with no offered version (unknown, or every version
inactive) is 404 ``BOX_NOT_FOUND``. The launch is checked when the token is minted and
again when ``session/init`` redeems it (the box may have been retired meanwhile), which
then answers the box's offered version in the operator's base currency (the catalogue
answer of ``answers.py``) and the operator's ``maxBoxesPerRound``. A box whose offered
version holds an item that is no longer available still launches: the answer says
``available: false`` and an open answers 422 ``BOX_UNAVAILABLE``.
"""

from __future__ import annotations

from typing import Any

from application.config.directory import Directory, Operator
from application.errors import PlatformError
from application.games.boxes.answers import BoxAnswer, box_answer, box_not_found
from domain.boxes import BoxVersion


def launch_target_invalid() -> PlatformError:
    return PlatformError(
        "LAUNCH_TARGET_INVALID", 'a box launch takes the target {"boxId": <integer>}'
    )


def launched_box(directory: Directory, target: dict[str, Any]) -> BoxVersion:
    """The offered version of the box a launch's ``target`` names."""
    box_id = target.get("boxId")
    if set(target) != {"boxId"} or type(box_id) is not int:
        raise launch_target_invalid()
    offered = directory.boxes.offered(box_id)
    if offered is None:
        raise box_not_found(box_id)
    return offered


def session_box(directory: Directory, operator: Operator, target: dict[str, Any]) -> BoxAnswer:
    """The launched box as ``session/init`` shows it: its offered version now, priced in
    the operator's base currency."""
    version = launched_box(directory, target)
    return box_answer(directory, operator, version, operator.base, None)

"""The seed pairs on the wire (README, "Provable fairness"): the fairness answer and a
rotation's answer, the one definition of these shapes. ``fairness.py`` builds them, the
fairness routes return them, and the OpenAPI document is generated from them (each
docstring and field description is its words).
"""

from __future__ import annotations

from typing import Annotated

from application.wire import Wire, words


class ActiveSeed(Wire):
    """The seed pair in use: its server seed is revealed only after a rotation."""

    server_seed_hash: Annotated[str, words("SHA-256 (hex) of the hidden server seed")]
    client_seed: Annotated[str, words("the player's client seed")]
    nonce: Annotated[int, words("the nonce the next round will use")]


class RevealedSeed(Wire):
    """A retired seed pair with its server seed: every round it rolled can be re-checked."""

    server_seed: Annotated[str, words("the server seed (hex), now revealed")]
    server_seed_hash: Annotated[str, words("SHA-256 (hex) of serverSeed, as committed")]
    client_seed: Annotated[str, words("the client seed used with it")]
    first_nonce: Annotated[int, words("the first nonce rolled with this pair")]
    last_nonce: Annotated[int | None, words("the last nonce rolled; null when none was")]
    revealed_at: Annotated[str, words("when it was revealed (UTC ISO 8601)")]


class FairnessAnswer(Wire):
    """The player's active seed pair and the revealed ones (README, "Provable fairness")."""

    active: ActiveSeed
    revealed: Annotated[list[RevealedSeed], words("retired pairs, newest first")]


class PreviousSeed(Wire):
    """The seed pair a rotation retired, its server seed revealed."""

    server_seed: Annotated[str, words("the server seed (hex), now revealed")]
    server_seed_hash: Annotated[str, words("SHA-256 (hex) of serverSeed, as committed")]
    client_seed: Annotated[str, words("the client seed used with it")]
    last_nonce: Annotated[int | None, words("the last nonce rolled; null when none was")]


class RotateAnswer(Wire):
    """A rotation: the retired pair revealed, and the new active pair."""

    previous: PreviousSeed
    active: ActiveSeed

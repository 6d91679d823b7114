"""Typed records of stored dicts (an event's payload that is a dict, e.g. a round's opening).

A record is read from its dict with :meth:`Record.of` (extra keys are ignored, so a
later field never breaks an old reader) and written back with :meth:`Record.record`,
which gives the same keys in the same order (fields left ``UNSET`` are omitted, as the
keys were absent), so the stored bytes do not change. Field order is the stored key
order: a subclass's fields follow its base's.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

R = TypeVar("R", bound="Record")


class Record(msgspec.Struct, frozen=True, kw_only=True):
    """A stored dict, typed."""

    @classmethod
    def of(cls: type[R], recorded: dict[str, Any]) -> R:
        return msgspec.convert(recorded, cls)

    @classmethod
    def decode(cls: type[R], text: str | bytes) -> R:
        """From the recorded dict's JSON text (a projection's staging copy)."""
        return msgspec.json.decode(text, type=cls)

    def record(self) -> dict[str, Any]:
        """The dict as stored: field order, UNSET fields left out."""
        return msgspec.to_builtins(self)

"""The hash chain's link rule (tamper evidence over the whole event log).

Each stored event (notification) ``n`` gets a link::

    link(n) = sha256( link(previous) || id || originator_id || version || len(topic) || topic
                      || state )

with ``link(previous)`` the 32 raw bytes of the previous link (``GENESIS``, 32 zero bytes,
before the first event), ``id`` the notification id and ``version`` the originator
version as 8-byte big-endian signed integers, ``originator_id`` the 16 bytes of the
aggregate's UUID, ``len(topic)`` a 4-byte big-endian length, ``topic`` UTF-8 and ``state``
the event's stored bytes exactly as the store holds them. Days are UTC days of the
events' own timestamps. The projection that keeps the chain is
``projections/hash_chain.py``; the auditor recomputes it (``application/audit/chain.py``).
"""

from __future__ import annotations

import hashlib
import struct
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

GENESIS = bytes(32)
_FIXED = struct.Struct(">q16sqI")


def chain_link(
    previous: bytes, position: int, originator_id: UUID, version: int, topic: str, state: bytes
) -> bytes:
    """The 32-byte link of one stored event after ``previous``."""
    topic_bytes = topic.encode("utf-8")
    digest = hashlib.sha256(previous)
    digest.update(_FIXED.pack(position, originator_id.bytes, version, len(topic_bytes)))
    digest.update(topic_bytes)
    digest.update(bytes(state))
    return digest.digest()


def notification_link(previous: bytes, notification: Any) -> bytes:
    originator = notification.originator_id
    if not isinstance(originator, UUID):
        originator = UUID(str(originator))
    return chain_link(
        previous,
        notification.id,
        originator,
        notification.originator_version,
        notification.topic,
        notification.state,
    )


def utc_day(moment: datetime | float) -> str:
    if isinstance(moment, datetime):
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.astimezone(UTC).strftime("%Y-%m-%d")
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%d")

"""Decoding stored events for the audit: msgspec where it is exact, the mapper otherwise.

The store's format is eventsourcing's: the event's attributes (without originator id and
version) as JSON written by its ``JSONTranscoder``, where a value of a registered type is
an object ``{"_type_": NAME, "_data_": DATA}`` (every event has one: its ``timestamp``).
:meth:`EventDecoder.decode` gives exactly what ``mapper.to_domain_event`` gives:

* the bytes are parsed with ``msgspec.json.decode``. Where it accepts a document, it
  gives the same values as the standard ``json`` module (integers of any size, floats
  correctly rounded, last of duplicate keys). What it refuses but ``json`` accepts
  (``NaN``, ``Infinity``, ``1e400``, lone surrogates) and anything else unusual goes to
  the mapper, which then decodes it or raises as it always did;
* the ``_type_`` objects are revived bottom-up with the transcoder's own transcodings,
  as its ``object_hook`` does. When the bytes hold the token ``"_type_"`` exactly once
  and no ``\\u`` escape (which could spell a key another way), that one object can only
  be the top-level ``timestamp``; otherwise every nested value is walked;
* the event object is built as the mapper builds it (``object.__new__`` and its
  ``__dict__``), with the originator id converted the same way. Classes with a
  ``class_version`` above 1 (upcasting) go to the mapper.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec
from eventsourcing.persistence import (
    DatetimeAsISO,
    Mapper,
    find_id_convertor,
    pass_through_convertor,
)
from eventsourcing.utils import resolve_topic

_TYPE = b'"_type_"'
_ESCAPE = b"\\u"
_decode_json = msgspec.json.decode
_fromisoformat = datetime.fromisoformat
_new = object.__new__
_setattr = object.__setattr__


class _Fallback(Exception):
    """This document is left to the mapper."""


class EventDecoder:
    def __init__(self, mapper: Mapper[Any]) -> None:
        self.mapper = mapper
        transcoder = mapper.transcoder
        names = getattr(transcoder, "names", None)
        # only the plain JSON transcoder's format is decoded here (no cipher, no compressor)
        self.enabled = (
            type(transcoder).__name__ == "JSONTranscoder"
            and isinstance(names, dict)
            and mapper.cipher is None
            and mapper.compressor is None
        )
        self.names: dict[str, Any] = dict(names) if self.enabled else {}
        self._classes: dict[tuple[str, type], tuple[type, Any, type] | None] = {}
        self._by_topic: dict[str, tuple[type, Any, type]] = {}
        # eventsourcing's own datetime transcoding is decoded inline
        self._iso_dates = type(self.names.get("datetime_iso")) is DatetimeAsISO
        self.fast = 0
        self.slow = 0

    def decode(self, notification: Any) -> Any:
        """The domain event of a stored event (or notification), as the mapper gives it."""
        if self.enabled:
            try:
                event = self._decode(notification)
            except _Fallback:
                pass
            else:
                self.fast += 1
                return event
        self.slow += 1
        return self.mapper.to_domain_event(notification)

    def _class(self, topic: str, id_type: type) -> tuple[type, Any, type]:
        key = (topic, id_type)
        known = self._classes.get(key, False)
        if known is False:
            try:
                cls = resolve_topic(topic)
                convert = find_id_convertor(cls, id_type)
            except Exception:
                known = None
            else:
                if convert is pass_through_convertor:
                    convert = None  # nothing to call
                known = None if getattr(cls, "class_version", 1) != 1 else (cls, convert, id_type)
            self._classes[key] = known
        if known is None:
            raise _Fallback
        self._by_topic[topic] = known
        return known

    def _decode(self, notification: Any) -> Any:
        originator_id = notification.originator_id
        topic = notification.topic
        known = self._by_topic.get(topic)
        if known is None or known[2] is not type(originator_id):
            known = self._class(topic, type(originator_id))
        data = notification.state
        if type(data) is not bytes:
            raise _Fallback
        try:
            state = _decode_json(data)
        except Exception:
            raise _Fallback from None
        if type(state) is not dict:
            raise _Fallback
        if data.count(_TYPE) == 1 and _ESCAPE not in data:
            stamp = state.get("timestamp")
            if type(stamp) is dict and len(stamp) == 2 and "_type_" in stamp and "_data_" in stamp:
                if stamp["_type_"] == "datetime_iso" and self._iso_dates:
                    try:  # DatetimeAsISO.decode, inline
                        state["timestamp"] = _fromisoformat(stamp["_data_"])
                    except Exception:
                        raise _Fallback from None
                else:
                    state["timestamp"] = self._revive_one(stamp)
            else:  # the one typed object is elsewhere: walk it all
                state = self._revive(state)
        elif _TYPE in data or _ESCAPE in data:
            state = self._revive(state)
        if type(state) is not dict:
            raise _Fallback
        cls, convert, _ = known
        state["originator_id"] = originator_id if convert is None else convert(originator_id)
        state["originator_version"] = notification.originator_version
        if "class_version" in state:
            del state["class_version"]
        event = _new(cls)
        _setattr(event, "__dict__", state)
        return event

    def _revive_one(self, d: dict[str, Any]) -> Any:
        try:
            name = d["_type_"]
            transcoding = self.names[name]
        except (KeyError, TypeError):
            raise _Fallback from None
        try:
            return transcoding.decode(d["_data_"])
        except Exception:
            raise _Fallback from None

    def _revive(self, value: Any) -> Any:
        """What ``JSONTranscoder``'s object hook makes of a parsed value (bottom-up)."""
        if type(value) is dict:
            for key, item in value.items():
                if type(item) is dict or type(item) is list:
                    value[key] = self._revive(item)
            if len(value) == 2 and "_type_" in value and "_data_" in value:
                return self._revive_one(value)
            return value
        if type(value) is list:
            for index, item in enumerate(value):
                if type(item) is dict or type(item) is list:
                    value[index] = self._revive(item)
        return value

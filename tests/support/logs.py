"""Capture what the server logs, by logger name, while a test runs."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager


class Records(logging.Handler):
    """Keeps every record it is given."""

    def __init__(self, level: int) -> None:
        super().__init__(level)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def captured(names: tuple[str, ...], level: int = logging.WARNING) -> Iterator[Records]:
    """Records of ``level`` and above from the named loggers (and their children); a
    logger set to a higher level is lowered to ``level`` meanwhile."""
    handler = Records(level)
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        if logger.getEffectiveLevel() > level:
            logger.setLevel(level)
    try:
        yield handler
    finally:
        for logger, previous in zip(loggers, levels, strict=True):
            logger.removeHandler(handler)
            logger.setLevel(previous)

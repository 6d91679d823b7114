"""The composition root of the application layer: store, tables, configuration, services."""

from __future__ import annotations

import logging
from uuid import UUID

from eventsourcing.application import Application, ProcessingEvent
from eventsourcing.domain import BaseAggregate
from eventsourcing.persistence import Recording

from application.access.process_limits import ProcessLimiter
from application.access.rate_limits import SCHEMA as RATE_SCHEMA
from application.access.rate_limits import RateLimiter
from application.access.sessions import SCHEMA as SESSION_SCHEMA
from application.access.sessions import Sessions
from application.clock import Clock, SystemClock
from application.config.directory import Directory
from application.config.shape import Config
from application.config.sync import record_config, recorded_versions
from application.store import calls as store_calls
from application.store.database_url import DatabaseLocation, ensure_schema, parse_database_url
from application.store.sql import SqlDatabase, open_database

log = logging.getLogger("upgrader")


class EventStore(Application[UUID]):
    """The one event log of the platform (rounds, items, seeds, configuration history)."""

    name = "upgrader"

    def save(self, *objs: object, **kwargs: object) -> list[Recording[UUID]]:
        """``Application.save``, with aggregates told apart by their class.

        eventsourcing's ``ProcessingEvent.collect_events`` asks first whether each object
        is a ``DomainEventProtocol``, a runtime protocol check that walks the protocol's
        members: about 3 % of an API process's CPU on the play path. Our aggregates are
        all ``BaseAggregate`` subclasses; anything else still goes the library's way.
        """
        processing_event: ProcessingEvent[UUID] = ProcessingEvent()
        for obj in objs:
            if isinstance(obj, BaseAggregate):
                processing_event.events.extend(obj.collect_events())
                processing_event.aggregates[obj.id] = obj
            elif obj is not None:
                processing_event.collect_events(obj)  # type: ignore[arg-type]
        processing_event.saved_kwargs.update(kwargs)
        recordings = self._record(processing_event)
        self._take_snapshots(processing_event)
        self._notify(recordings)
        self.notify(processing_event.events)  # deprecated hook, kept as the library does
        return recordings


def ensure_tables(db: SqlDatabase, statements: list[str]) -> None:
    with db.transaction() as cur:
        for statement in statements:
            cur.execute(statement)


class Platform:
    """Everything a request handler or worker needs, built once per process."""

    def __init__(self, config: Config, clock: Clock | None = None, pool_size: int = 8) -> None:
        self.config = config
        self.clock = clock or SystemClock()
        self.location: DatabaseLocation = parse_database_url(config.service.database_url)
        ensure_schema(self.location)
        self.events = EventStore(env=self.location.eventsourcing_env())
        self.db = open_database(self.location, pool_size=pool_size)
        rate_schema = RATE_SCHEMA
        if self.db.dialect == "postgresql":  # counters need no crash safety: skip the WAL
            rate_schema = [
                st.replace("CREATE TABLE", "CREATE UNLOGGED TABLE") for st in RATE_SCHEMA
            ]
        ensure_tables(self.db, [*SESSION_SCHEMA, *rate_schema])
        self.limiter: RateLimiter | ProcessLimiter = (
            RateLimiter(self.db, self.clock)
            if config.service.rate_limits == "store"
            else ProcessLimiter(self.clock)
        )
        store_calls.set_probe(self.store_answers)
        self.directory = Directory.from_config(config)
        self.config_versions: dict[str, int] = {}
        self.catalog_versions: dict[int, int] = {}
        self.sessions = Sessions(
            self.db,
            self.clock,
            idle_seconds=config.service.session_idle_seconds,
            launch_ttl=config.service.launch_token_ttl_seconds,
        )

    def record_configuration(self) -> int:
        """Append the configuration's differences from the recorded state; returns the count."""
        appended = record_config(self.events, self.config)
        self.config_versions, self.catalog_versions = recorded_versions(self.events, self.config)
        log.info("configuration recorded: %d new events", appended)
        return appended

    def store_answers(self) -> bool:
        """A direct connection within 1 s (PostgreSQL); an embedded file always answers."""
        if self.location.kind != "postgresql":
            return True
        import psycopg

        try:
            psycopg.connect(self.location.conninfo(), connect_timeout=1).close()
        except psycopg.Error:
            return False
        return True

    def ping(self) -> None:
        """Raise StoreUnavailable when the database does not answer."""
        with self.db.transaction() as cur:
            cur.execute("SELECT 1")
            cur.fetchone()

    def close(self) -> None:
        self.db.close()
        self.events.close()

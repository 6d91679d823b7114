"""``database_url`` -> where the event store and our tables live.

``sqlite:///relative/path.db`` and ``sqlite:////absolute/path.db`` are an embedded SQLite
file (its folder is created); ``postgresql://user:pass@host:port/db`` is PostgreSQL, with an
optional ``?schema=name`` (default ``public``) so several deployments or test runs can share
one database.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


@dataclass(frozen=True)
class DatabaseLocation:
    kind: str  # "sqlite" or "postgresql"
    path: str = ""
    host: str = ""
    port: int = 5432
    user: str = ""
    password: str = ""
    dbname: str = ""
    schema: str = "public"

    def __repr__(self) -> str:
        if self.kind == "sqlite":
            return f"DatabaseLocation(sqlite {self.path})"
        return f"DatabaseLocation(postgresql {self.user}@{self.host}:{self.port}/{self.dbname})"

    def conninfo(self) -> str:
        from psycopg.conninfo import make_conninfo

        return make_conninfo(
            host=self.host,
            port=self.port,
            user=self.user,
            password=self.password or None,
            dbname=self.dbname,
        )

    def eventsourcing_env(self) -> dict[str, str]:
        if self.kind == "sqlite":
            return {
                "PERSISTENCE_MODULE": "eventsourcing.sqlite",
                "SQLITE_DBNAME": self.path,
                "SQLITE_LOCK_TIMEOUT": "15",
            }
        return {
            "PERSISTENCE_MODULE": "eventsourcing.postgres",
            "POSTGRES_DBNAME": self.dbname,
            "POSTGRES_HOST": self.host,
            "POSTGRES_PORT": str(self.port),
            "POSTGRES_USER": self.user,
            "POSTGRES_PASSWORD": self.password,
            "POSTGRES_SCHEMA": self.schema,
            "POSTGRES_LOCK_TIMEOUT": "5",
            "POSTGRES_POOL_SIZE": "4",
            "POSTGRES_MAX_OVERFLOW": "12",
            "POSTGRES_CONNECT_TIMEOUT": "2",
            "POSTGRES_PRE_PING": "y",
            # the lock, NOTIFY and INSERT in one server-side statement (pg_recorder.py)
            "APPLICATION_RECORDER_TOPIC": "application.store.pg_recorder:SerialInsertRecorder",
        }


def parse_database_url(url: str) -> DatabaseLocation:
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///") :]
        if not path:
            raise ValueError("database_url: sqlite:/// needs a file path")
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        return DatabaseLocation(kind="sqlite", path=path)
    parts = urlsplit(url)
    if parts.scheme not in ("postgresql", "postgres"):
        raise ValueError("database_url: must start with sqlite:/// or postgresql://")
    schema = parse_qs(parts.query).get("schema", ["public"])[0]
    if not _SCHEMA_NAME.match(schema):
        raise ValueError("database_url: schema must be a lowercase SQL identifier")
    return DatabaseLocation(
        kind="postgresql",
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 5432,
        user=unquote(parts.username or "postgres"),
        password=unquote(parts.password or ""),
        dbname=(parts.path or "/").lstrip("/") or "postgres",
        schema=schema,
    )


def ensure_schema(location: DatabaseLocation) -> None:
    """Create the PostgreSQL schema when missing (no-op for SQLite)."""
    if location.kind != "postgresql" or location.schema == "public":
        return
    import psycopg

    with psycopg.connect(location.conninfo(), autocommit=True, connect_timeout=5) as conn:
        conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{location.schema}"')

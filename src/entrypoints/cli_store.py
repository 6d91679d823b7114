"""The store of an operations command, checked before it is opened.

``audit``, ``report``, ``projections``, ``wallet``, ``outbox`` and ``shipping`` read (or
act on) a store that must already exist: opening a SQLite path that does not exist would
create an empty database and report on nothing ("OK: every rule holds"), so such a path
is refused with exit status 2, and so is a PostgreSQL server that cannot be reached or a
``?schema=`` that is not there. Exit status 1 keeps its meaning for the command (e.g.
``audit``: violations found). The check is one line on stderr, never a traceback; a store
lost while the command runs is reported the same way (``unreachable``).
"""

from __future__ import annotations

from pathlib import Path

SQLITE = "sqlite:///"
EXISTING_STORE_COMMANDS = frozenset(
    {"audit", "report", "projections", "wallet", "outbox", "shipping"}
)
CONNECT_TIMEOUT_SECONDS = 5


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def store_problem(url: str) -> str | None:
    """None when the store at ``url`` exists and answers; else one line saying why not."""
    if url.startswith(SQLITE):
        path = Path(url[len(SQLITE) :])
        if not path.is_file():
            return (
                f"no database at {path} (database_url {url}); start the platform on it "
                "first, or name the store with --config or --database-url"
            )
        return None
    import psycopg

    from application.store.database_url import parse_database_url

    try:
        location = parse_database_url(url)
    except ValueError as exc:
        return str(exc)
    where = f"{location.user}@{location.host}:{location.port}/{location.dbname}"
    try:
        with psycopg.connect(
            location.conninfo(), connect_timeout=CONNECT_TIMEOUT_SECONDS, autocommit=True
        ) as connection:
            found = connection.execute(
                "SELECT 1 FROM pg_namespace WHERE nspname = %s", (location.schema,)
            ).fetchone()
    except psycopg.Error as exc:
        return f"cannot reach PostgreSQL at {where}: {_one_line(exc)}"
    if found is None:
        return f"no schema {location.schema!r} in PostgreSQL at {where}"
    return None


def unreachable(exc: BaseException) -> str | None:
    """One line when ``exc`` says the store cannot be reached (else None: not ours)."""
    import psycopg
    from eventsourcing.persistence import OperationalError

    from application.store.sql import StoreUnavailable

    if isinstance(exc, OperationalError | psycopg.OperationalError | StoreUnavailable):
        return f"the database cannot be reached: {_one_line(exc)}"
    return None

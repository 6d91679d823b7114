"""The load bench charges each PostgreSQL backend to the process that holds its client
socket (ops/bench/cpu_groups.py): the API's backends apart from the worker's."""

from __future__ import annotations

import os
import uuid

import psycopg
import pytest

from ops.bench.cpu_groups import split_backends
from tests.conftest import POSTGRES_URL, SKIP_POSTGRES

pytestmark = pytest.mark.postgres


def test_a_backend_is_charged_to_the_process_holding_its_socket() -> None:
    if not POSTGRES_URL:
        pytest.skip(SKIP_POSTGRES)
    name = f"groups-{uuid.uuid4().hex[:8]}"
    with (
        psycopg.connect(f"{POSTGRES_URL}?application_name={name}") as mine,
        psycopg.connect(POSTGRES_URL, autocommit=True) as admin,
    ):
        backend = mine.info.backend_pid
        rows = admin.execute(
            "SELECT pid, client_port FROM pg_stat_activity WHERE application_name = %s",
            (name,),
        ).fetchall()
        assert [pid for pid, _ in rows] == [backend]
        split = split_backends(rows, {"api": [os.getpid()], "worker": [os.getppid()]})
        assert split == {"api_pg": [backend], "worker_pg": [], "other_pg": []}
        elsewhere = split_backends(rows, {"api": [os.getppid()]})
        assert elsewhere == {"api_pg": [], "other_pg": [backend]}

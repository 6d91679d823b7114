"""Shared fixtures: one store per test, SQLite always and PostgreSQL when configured."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from hypothesis import settings

# Property tests check values, not speed (speed is measured in ops/bench/): no per-example
# deadline, which a loaded machine (xdist workers, CI) otherwise trips at random.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")

POSTGRES_URL = os.environ.get("UPGRADER_TEST_POSTGRES_URL", "")
SKIP_POSTGRES = (
    "PostgreSQL tests skipped: set UPGRADER_TEST_POSTGRES_URL "
    "(e.g. postgresql://postgres@127.0.0.1:5432/test) to run them"
)


def pytest_report_header(config: pytest.Config) -> str:
    if POSTGRES_URL:
        return f"PostgreSQL tests: on ({POSTGRES_URL.split('@')[-1]})"
    return SKIP_POSTGRES


def fresh_postgres_url() -> Iterator[str]:
    if not POSTGRES_URL:
        pytest.skip(SKIP_POSTGRES)
    schema = f"t_{uuid.uuid4().hex[:12]}"
    yield f"{POSTGRES_URL}?schema={schema}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/store.db"
    else:
        yield from fresh_postgres_url()


@pytest.fixture
def postgres_url() -> Iterator[str]:
    yield from fresh_postgres_url()


# Modules whose module-scoped fixtures are expensive (a platform and operator site as
# processes, a browser, a compiled example, a generated log of 12,000 events) run on one
# xdist worker each: spread over workers, every worker would build the fixture again
# (15-19 s for each browser test's setup). Every other test is its own unit, as with
# `--dist load`. (xdist's own `--dist loadgroup` marks did not group anything with
# pytest 9 here, hence the scheduler.)
GROUPED_MODULES = {
    "tests/e2e/test_game_browser.py",
    "tests/e2e/test_game_phone.py",
    "tests/e2e/test_game_boxes.py",
    "tests/integration/test_explorers.py",
    "tests/integration/test_signing_examples.py",
    "tests/integration/test_audit_fast_paths.py",
    "tests/integration/test_audit_boxes.py",
    "tests/unit/test_fairness_js.py",
    "tests/unit/test_box_draw_js.py",
}


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    from xdist.scheduler import LoadScopeScheduling

    class ExpensiveModulesTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return module if module in GROUPED_MODULES else nodeid

    return ExpensiveModulesTogether(config, log)

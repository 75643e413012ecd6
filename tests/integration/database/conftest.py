"""A real PostgreSQL on 127.0.0.1:5432 (trust, user postgres): one database per test,
dropped after it."""

from __future__ import annotations

import pytest
from helpers_postgres import execute, fresh_database, people


@pytest.fixture
def pg_uri():
    """A fresh, empty database; its URI."""
    with fresh_database() as uri:
        yield uri


@pytest.fixture
def warehouse(tmp_path, pg_uri, monkeypatch) -> str:
    """A database with an empty schema ``research`` for table releases, in the environment
    variable SKALD_TEST_DB; the people as ``tmp_path/people.parquet``."""
    import pyarrow.parquet as pq

    pq.write_table(people(), tmp_path / "people.parquet")
    execute(pg_uri, "CREATE SCHEMA research")
    monkeypatch.setenv("SKALD_TEST_DB", pg_uri)
    return pg_uri

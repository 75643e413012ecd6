"""A real PostgreSQL on 127.0.0.1:5432 (trust, user postgres): one database per test,
dropped after it."""

from __future__ import annotations

import uuid

import pytest
from helpers_postgres import execute, people

SERVER = "postgresql://postgres@127.0.0.1:5432"


@pytest.fixture
def pg_uri():
    """A fresh, empty database; its URI."""
    psycopg2 = pytest.importorskip("psycopg2")
    name = f"skald_test_{uuid.uuid4().hex[:12]}"
    admin = psycopg2.connect(f"{SERVER}/postgres")
    admin.autocommit = True
    with admin.cursor() as cur:
        cur.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{SERVER}/{name}"
    finally:
        with admin.cursor() as cur:
            cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


@pytest.fixture
def warehouse(tmp_path, pg_uri, monkeypatch) -> str:
    """A database with an empty schema ``research`` for table releases, in the environment
    variable SKALD_TEST_DB; the people as ``tmp_path/people.parquet``."""
    import pyarrow.parquet as pq

    pq.write_table(people(), tmp_path / "people.parquet")
    execute(pg_uri, "CREATE SCHEMA research")
    monkeypatch.setenv("SKALD_TEST_DB", pg_uri)
    return pg_uri

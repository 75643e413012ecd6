"""A real PostgreSQL on 127.0.0.1:5432 (trust, user postgres): one database per test,
dropped after it."""

from __future__ import annotations

import uuid

import pytest

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

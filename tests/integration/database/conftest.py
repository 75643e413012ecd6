"""A real PostgreSQL on 127.0.0.1:5432 (trust, user postgres): one database per test,
dropped after it."""

from __future__ import annotations

import uuid

import pyarrow as pa
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


def load_table(uri: str, name: str, table: pa.Table, key: list[str] | None = None) -> None:
    """`table` into `name` (schema.table) through ADBC's bulk ingest (COPY), with a primary
    key on `key`."""
    import adbc_driver_postgresql.dbapi as pg

    schema, _, bare = name.rpartition(".")
    with pg.connect(uri) as conn:
        with conn.cursor() as cur:
            if schema:
                cur.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
            cur.adbc_ingest(bare, table, mode="create", db_schema_name=schema or None)
            if key:
                columns = ", ".join(f'"{c}"' for c in key)
                cur.execute(f"ALTER TABLE {name} ADD PRIMARY KEY ({columns})")
        conn.commit()


def execute(uri: str, sql: str) -> None:
    import adbc_driver_postgresql.dbapi as pg

    with pg.connect(uri) as conn:
        with conn.cursor() as cur:
            cur.execute(sql)
        conn.commit()

"""Loading tables into the test PostgreSQL (127.0.0.1:5432) through ADBC."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

import pyarrow as pa
import pytest
from helpers_data import make_table

SERVER = "postgresql://postgres@127.0.0.1:5432"


@contextlib.contextmanager
def fresh_database(prefix: str = "skald_test") -> Iterator[str]:
    """A new, empty database on the test server (its URI), dropped after."""
    psycopg2 = pytest.importorskip("psycopg2")
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
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


def people(n: int = 120) -> pa.Table:
    """`n` rows of `make_table`'s people (ids 0..n-1), in id order."""
    return pa.concat_tables([make_table(40, seed=i, start=i * 40) for i in range(n // 40)])


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


def query(uri: str, sql: str) -> pa.Table:
    """The rows of one statement, as Arrow."""
    import adbc_driver_postgresql.dbapi as pg

    with pg.connect(uri) as conn, conn.cursor() as cur:
        cur.execute(sql)
        return cur.fetch_arrow_table()

"""Loading tables into the test PostgreSQL (127.0.0.1:5432) through ADBC."""

from __future__ import annotations

import pyarrow as pa
from helpers_data import make_table


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

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


def execute(uri: str, *sql: str) -> None:
    """Each statement, in order, in one session and one transaction."""
    import adbc_driver_postgresql.dbapi as pg

    with pg.connect(uri) as conn:
        with conn.cursor() as cur:
            for statement in sql:
                cur.execute(statement)
        conn.commit()


def query(uri: str, sql: str) -> pa.Table:
    """The rows of one statement, as Arrow."""
    import adbc_driver_postgresql.dbapi as pg

    with pg.connect(uri) as conn, conn.cursor() as cur:
        cur.execute(sql)
        return cur.fetch_arrow_table()


def rows(uri: str, *sql: str) -> list[tuple]:
    """The rows of the last statement, the ones before run in the same session."""
    import adbc_driver_postgresql.dbapi as pg

    with pg.connect(uri) as conn, conn.cursor() as cur:
        for statement in sql[:-1]:
            cur.execute(statement)
        cur.execute(sql[-1])
        found = cur.fetchall()
        conn.rollback()
        return found


@contextlib.contextmanager
def temporary_roles(uri: str) -> Iterator[dict[str, str]]:
    """The roles of a test (roles are the server's, not the database's): a reader, a reader
    of one column, the table's owner, and a writer that is no superuser; dropped after."""
    tag = uuid.uuid4().hex[:8]
    names = {"reader": f"reader_{tag}", "columns": f"Col Reader {tag}", "owner": f"owner_{tag}"}
    names["writer"] = f"writer_{tag}"
    for name in names.values():
        execute(uri, f'CREATE ROLE "{name}" LOGIN')
    try:
        yield names
    finally:
        for name in names.values():
            execute(uri, f'DROP OWNED BY "{name}"')
            execute(uri, f'DROP ROLE "{name}"')


def properties_sql(table: str) -> dict[str, str]:
    """What a release table `table` (schema.name) has, as the catalogs print it."""
    schema, name = table.split(".")
    return {
        "rls": "SELECT relrowsecurity, relforcerowsecurity, relowner::regrole::text, "
        f"relacl::text FROM pg_class WHERE oid = '{table}'::regclass",
        "policies": "SELECT polname::text, polcmd::text, polpermissive, "
        "polroles::regrole[]::text, pg_get_expr(polqual, polrelid), "
        f"pg_get_expr(polwithcheck, polrelid) FROM pg_policy WHERE polrelid = '{table}'::regclass "
        "ORDER BY 1",
        "columns": "SELECT attname::text, attnotnull, attacl::text, col_description(attrelid, "
        f"attnum) FROM pg_attribute WHERE attrelid = '{table}'::regclass AND attnum > 0 "
        "ORDER BY attnum",
        "indexes": "SELECT indexname::text, indexdef, obj_description(format('%I.%I', "
        f"schemaname, indexname)::regclass, 'pg_class') FROM pg_indexes WHERE schemaname = "
        f"'{schema}' AND tablename = '{name}' ORDER BY 1",
        "constraints": "SELECT conname::text, pg_get_constraintdef(oid), obj_description(oid, "
        f"'pg_constraint') FROM pg_constraint WHERE conrelid = '{table}'::regclass ORDER BY 1",
    }


def properties(uri: str, table: str) -> dict[str, list[tuple]]:
    return {name: rows(uri, sql) for name, sql in properties_sql(table).items()}


def give_properties(uri: str, table: str, roles: dict[str, str]) -> None:
    """Row-level security, policies, table and column grants, an index, constraints, comments
    and another owner on the release table `table` (columns city, age, disease)."""
    schema = table.split(".")[0]
    reader, columns, owner = (f'"{roles[r]}"' for r in ("reader", "columns", "owner"))
    execute(
        uri,
        f"GRANT USAGE, CREATE ON SCHEMA {schema} TO {reader}, {columns}, {owner}",
        f"ALTER TABLE {table} OWNER TO {owner}",
        f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY",
        f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY",
        f"CREATE POLICY hide_all ON {table} FOR SELECT TO {reader} USING (false)",
        f"""CREATE POLICY "Not Berlin's" ON {table} AS PERMISSIVE FOR SELECT TO {columns} """
        """USING (city <> 'it''s')""",
        f"CREATE POLICY writes ON {table} AS RESTRICTIVE FOR INSERT TO {owner} "
        "WITH CHECK (disease IS NOT NULL)",
        f"GRANT SELECT ON {table} TO {reader}",
        f"GRANT SELECT (city, age) ON {table} TO {columns}",
        f"GRANT UPDATE (disease) ON {table} TO {columns} WITH GRANT OPTION",
        f'CREATE INDEX "People by City" ON {table} (city, age)',
        f"""COMMENT ON INDEX {schema}."People by City" IS 'for the city reports'""",
        f"ALTER TABLE {table} ALTER COLUMN city SET NOT NULL",
        f"ALTER TABLE {table} ADD CONSTRAINT disease_known CHECK (disease <> '')",
        f"COMMENT ON CONSTRAINT disease_known ON {table} IS 'no empty disease'",
        f"COMMENT ON COLUMN {table}.city IS 'the city, generalised (it''s k-anonymous)'",
    )

"""A table or a query as a run's input (docs/design.md §2a):

    input: {table: clinic.patients, connection: clinic_db, order_by: [patient_id]}
    input: {sql: "SELECT * FROM clinic.patients", connection: clinic_db, order_by: [patient_id]}

The source is read once, in `order_by` order (a table's primary key when not given; a query
without one is refused), into staged Parquet chunks that the three passes read like any
Parquet input (`extract.py`). The staged chunks live beside the output, in a folder only the
holder of the output's lease writes (`staged_path`): a later run replaces what a killed one
left there, never reads it.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Any

from airflow_skald.core.data.database.connection import check_named
from airflow_skald.core.errors import ConfigError
from airflow_skald.core.settings.parse import mapping, no_unknown

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*$")
STAGED_SUFFIX = ".skald-extract"


@dataclass(frozen=True)
class DatabaseSource:
    """Where the records are: a table or a query, through a named connection."""

    connection: str
    table: str | None = None
    sql: str | None = None
    order_by: tuple[str, ...] = ()

    def describe(self) -> dict[str, Any]:
        """As the settings list it (the connection's name, never a password)."""
        out: dict[str, Any] = {"connection": self.connection}
        out.update({"table": self.table} if self.table else {"sql": self.sql})
        out["order_by"] = list(self.order_by)
        return out

    def relation(self) -> str:
        """The table's name, each part quoted (``"clinic"."patients"``)."""
        return quote_name(self.table or "")

    def query(self, order_by: tuple[str, ...]) -> str:
        """The one statement that reads the source, in a deterministic order."""
        body = (
            f"SELECT * FROM {self.relation()}" if self.table else f"SELECT * FROM ({self.sql}) AS q"
        )
        return body + " ORDER BY " + ", ".join(quote_ident(c) for c in order_by)


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def quote_name(name: str) -> str:
    """A (schema-)qualified name, each part quoted."""
    return ".".join(quote_ident(p) for p in name.split("."))


def parse_source(raw: dict, where: str) -> DatabaseSource:
    """`input: {table|sql, connection, order_by}`."""
    raw = mapping(raw, where)
    no_unknown(raw, {"table", "sql", "connection", "order_by"}, where)
    if ("table" in raw) == ("sql" in raw):
        raise ConfigError(f"{where} takes one of 'table' or 'sql'")
    connection = raw.get("connection")
    if not isinstance(connection, str) or not connection:
        raise ConfigError(f"{where}.connection is required (a connection name or URI)")
    check_named(connection, f"{where}.connection")
    table, sql = raw.get("table"), raw.get("sql")
    if table is not None:
        parts = table.split(".") if isinstance(table, str) else []
        if not 1 <= len(parts) <= 2 or not all(_NAME.match(p) for p in parts):
            raise ConfigError(f"{where}.table must be a table name: name or schema.name")
    elif not isinstance(sql, str) or not sql.strip():
        raise ConfigError(f"{where}.sql must be a SELECT statement")
    else:
        sql = sql.strip().rstrip(";")
    order_by = raw.get("order_by") or []
    if not isinstance(order_by, list) or not all(isinstance(c, str) and c for c in order_by):
        raise ConfigError(f"{where}.order_by must be a list of column names")
    if sql is not None and not order_by:
        raise ConfigError(
            f"{where}: a query has no primary key to read it in a fixed order: give order_by"
        )
    return DatabaseSource(connection, table, sql, tuple(order_by))


def staged_path(output_path: str) -> str:
    """Where a run stages the extracted chunks: beside its output, named after it."""
    parent, name = posixpath.split(output_path.rstrip("/"))
    return posixpath.join(parent, f".{name}{STAGED_SUFFIX}")


def is_staged(file: str) -> bool:
    """A chunk file in a staging folder of `staged_path`'s (a database input's)."""
    folder = posixpath.basename(posixpath.dirname(file.rstrip("/")))
    return folder.startswith(".") and folder.endswith(STAGED_SUFFIX)

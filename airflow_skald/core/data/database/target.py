"""A table as the release (docs/design.md §2a):

    output: {table: research.patients_k10, connection: warehouse}          # path: optional

The rows go to the table; the release's records (manifest.json, report.html, run record,
effective config) go to the release folder `path`, by default ``skald-releases/{table}``
beside the config file (the operators: ``{artifacts}/releases/{table}``). The folder is the
release's place in the files world (its lease, staging folder, records of replaced releases);
the table's comment names the release it holds (`release_table.py`).
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
DEFAULT_FOLDER = "skald-releases"


@dataclass(frozen=True)
class TableTarget:
    """Where a table release goes: `table` (schema.name; schema ``public`` when not given)
    through the named `connection`; `folder_given`: the config named the release folder."""

    table: str
    connection: str
    folder_given: bool = True

    @property
    def schema(self) -> str:
        return self.table.split(".")[0] if "." in self.table else "public"

    @property
    def name(self) -> str:
        return self.table.rsplit(".", 1)[-1]

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.name}"

    def describe(self) -> dict[str, Any]:
        """As the settings list it (the connection's name, never a password)."""
        return {"table": self.qualified, "connection": self.connection}


def check_table_name(table: Any, where: str) -> str:
    parts = table.split(".") if isinstance(table, str) else []
    if not 1 <= len(parts) <= 2 or not all(_NAME.match(p) for p in parts):
        raise ConfigError(f"{where} must be a table name: name or schema.name")
    return table


def parse_target(raw: dict, where: str) -> tuple[TableTarget, str | None]:
    """`output: {table, connection, path?}`: the target and the release folder as given."""
    raw = mapping(raw, where)
    no_unknown(raw, {"table", "connection", "path"}, where)
    table = check_table_name(raw.get("table"), f"{where}.table")
    connection = raw.get("connection")
    if not isinstance(connection, str) or not connection:
        raise ConfigError(f"{where}.connection is required (a connection name or URI)")
    check_named(connection, f"{where}.connection")
    path = raw.get("path")
    if path is not None and (not isinstance(path, str) or not path):
        raise ConfigError(f"{where}.path must be the release folder (a path or URL)")
    target = TableTarget(table, connection, folder_given=path is not None)
    return target, path


def default_folder(root: str, target: TableTarget) -> str:
    """The release folder of a table release under `root` (an artifacts store, or the config
    file's folder): ``{root}/skald-releases/{schema.table}``."""
    return posixpath.join(root.rstrip("/"), DEFAULT_FOLDER, target.qualified)

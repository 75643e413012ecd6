"""DuckDB as an engine (docs/design.md §2b): embedded, in this process, over the input's
Parquet files. duckdb is imported here only (the optional extra `airflow-skald[duckdb]`)."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator, Sequence

import pyarrow as pa
from sqlglot import exp

from airflow_skald.core.engine.sql import dialect as D
from airflow_skald.core.engine.sql.session import (
    TemporaryRelations,
    create_temporary,
    temporary_name,
)
from airflow_skald.core.errors import ConfigError, DataError


def _duckdb():
    try:
        import duckdb
    except ImportError:
        raise ConfigError(
            "execution engine duckdb needs the duckdb package: pip install 'airflow-skald[duckdb]'"
        ) from None
    return duckdb


@contextlib.contextmanager
def _one_line() -> Iterator[None]:
    """A DuckDB error (e.g. a CSV cell that is not a number) as one line naming DuckDB."""
    try:
        yield
    except _duckdb().Error as exc:
        text = str(exc).strip().splitlines()
        raise DataError(f"DuckDB: {text[0] if text else type(exc).__name__}") from None


class DuckDBSession(TemporaryRelations):
    """One in-memory DuckDB connection; `threads` bounds its worker threads."""

    dialect = "duckdb"

    def __init__(self, threads: int | None = None):
        # what DuckDB spills (a GROUP BY larger than its memory) goes to a private folder of
        # its own, removed at close, never to the working directory's `.tmp`
        self.spill = tempfile.mkdtemp(prefix="skald-duckdb-")
        config = {"temp_directory": self.spill}
        if threads:
            config["threads"] = int(threads)
        self.db = _duckdb().connect(":memory:", config=config)
        super().__init__()

    def query(self, statement: exp.Expression, params: Sequence = ()) -> pa.Table:
        with _one_line():
            sql = D.render(statement, self.dialect)
            return self.db.execute(sql, list(params)).fetch_arrow_table()

    def execute(self, statement: exp.Expression, params: Sequence = ()) -> None:
        with _one_line():
            self.db.execute(D.render(statement, self.dialect), list(params))

    def send(self, prefix: str, table: pa.Table) -> str:
        name = temporary_name(prefix)
        view = name + "_arrow"
        self.db.register(view, table)
        try:
            self.temporaries.append(name)
            self.execute(create_temporary(name, exp.select(exp.Star()).from_(D.table(view))))
        finally:
            self.db.unregister(view)
        return name

    def close(self) -> None:
        try:
            self.drop_temporaries()
        finally:
            self.db.close()
            shutil.rmtree(self.spill, ignore_errors=True)

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
from airflow_skald.core.engine.sql.session import create_temporary, drop, temporary_name
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


class DuckDBSession:
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
        self.temporaries: list[str] = []

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

    def create(self, select: exp.Select, prefix: str) -> str:
        name = temporary_name(prefix)
        self.temporaries.append(name)
        self.execute(create_temporary(name, select))
        return name

    def view(self, select: exp.Select, prefix: str) -> str:
        """`select` as a new temporary view (gone with the in-memory database at `close`)."""
        name = temporary_name(prefix)
        view = exp.Create(this=D.table(name), kind="VIEW", expression=select)
        view.set("properties", exp.Properties(expressions=[exp.TemporaryProperty()]))
        self.execute(view)
        return name

    def close(self) -> None:
        try:
            for name in self.temporaries:
                self.execute(drop(name))
            self.temporaries.clear()
        finally:
            self.db.close()
            shutil.rmtree(self.spill, ignore_errors=True)

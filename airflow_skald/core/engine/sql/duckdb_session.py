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


#: DuckDB's `memory_limit` at least: room for its buffer pool and for the partitions of a hash
#: table it spills (below ~100 MB DuckDB refuses plain GROUP BYs of wide keys; the paper's
#: 125 x 1M rows failed "Out of Memory" under a 412 MiB limit and ran under 1 GiB, ADR 0077)
MEMORY_FLOOR = 1 << 30
#: a histogram bin's bytes in the chunk path's budget (paper eq. 3: N_RAM = n d / 16)
BIN_BYTES = 16


def memory_budget(chunk_rows: int, bytes_per_record: int, histogram_bins: int | None) -> int:
    """The run's memory budget in bytes (docs/design.md §4a: the chunk path holds one chunk of
    `chunk_rows` records plus N_RAM histogram bins; N_RAM derived as n d / 16 when
    `histogram_bins` is None), never below MEMORY_FLOOR."""
    chunk = int(chunk_rows) * int(bytes_per_record)
    bins = histogram_bins if histogram_bins is not None else chunk // BIN_BYTES
    return max(MEMORY_FLOOR, chunk + int(bins) * BIN_BYTES)


class DuckDBSession(TemporaryRelations):
    """One in-memory DuckDB connection: `threads` its worker threads, `memory_limit` (bytes)
    the memory it may hold before it spills, into a private folder made in `spill_dir` (the
    system's temporary folder when None; its name starts with `spill_prefix`) and removed at
    close."""

    dialect = "duckdb"

    def __init__(
        self,
        threads: int | None = None,
        memory_limit: int | None = None,
        spill_dir: str | None = None,
        spill_prefix: str = "skald-duckdb-",
    ):
        # what DuckDB spills (a GROUP BY larger than its memory) goes to a private folder of
        # its own, removed at close, never to the working directory's `.tmp`
        self.spill = tempfile.mkdtemp(prefix=spill_prefix, dir=spill_dir)
        config: dict = {"temp_directory": self.spill}
        if threads:
            config["threads"] = int(threads)
        if memory_limit:
            config["memory_limit"] = f"{int(memory_limit)}B"
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

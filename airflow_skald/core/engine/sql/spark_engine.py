"""`SparkEngine` (`execution: {engine: spark, connection: "local[2]" | "sc://host:port"}`,
docs/design.md §2b, ADR 0056): the three passes run as Spark SQL (sqlglot's dialect "spark",
the SQL layer DuckDB runs) over the input's Parquet files; the worker gets counts and labels,
Spark writes the release's parts into the staging folder, and the shared check, manifest and
commit publish them.

One part per input file (`list_input`: a chunk per file, as DuckDB's), so a record's first
row is its file's chunk and its row there (Parquet's `_metadata.row_index`). Spark writes a
part as a folder of files: the engine writes each part with one task into a folder beside it
and moves the one file onto the part's name (a killed write leaves no part). The files are
read and written by Spark's own process: with Spark Connect the server must see the same
(local or mounted) paths."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow.parquet as pq
from sqlglot import exp

from airflow_skald.core.count.first_rows import FirstRowScan
from airflow_skald.core.data.io import ChunkRef, file_version, list_input_files
from airflow_skald.core.encode.domain import DomainStats
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.engine.sql import dialect as D
from airflow_skald.core.engine.sql import passes, spark_input
from airflow_skald.core.engine.sql.domain import SqlInput
from airflow_skald.core.engine.sql.parquet_files import ParquetFilesEngine
from airflow_skald.core.engine.sql.release import class_columns, classes_of, grouped_release
from airflow_skald.core.engine.sql.spark_session import (
    CONNECT_SCHEMES,
    SparkSqlSession,
    _pyspark,
    is_local,
    spark_of,
)
from airflow_skald.core.engine.sql.utility import utility_partial
from airflow_skald.core.passes.written import Written
from airflow_skald.core.release.write.commit import part_name

if TYPE_CHECKING:
    from airflow_skald.core.count.root_counts import RootCounts
    from airflow_skald.core.passes.state import Run

NAME = "spark"
#: the master of a run that names no connection: a local Spark on every core
DEFAULT_MASTER = "local[*]"


def write_part(session: SparkSqlSession, select: exp.Select, path: str) -> None:
    """The rows of `select` as one Parquet file at `path`, written by Spark (one task into a
    folder beside it, its one file moved onto `path`)."""
    frame = session.frame(select)
    folder = path + ".writing"
    try:
        frame.coalesce(1).write.mode("overwrite").parquet(folder)
        files = sorted(glob.glob(os.path.join(folder, "part-*.parquet")))
        if not files:  # no rows: Spark may write no file; the part is the schema alone
            pq.write_table(frame.limit(0).toArrow(), folder + "/empty.parquet")
            files = [folder + "/empty.parquet"]
        os.replace(files[0], path)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class SparkEngine(ParquetFilesEngine):
    """The passes inside Spark (a local session or Spark Connect) over local Parquet files."""

    name = NAME
    input_formats = ("parquet", "csv")

    def require(self) -> None:
        _pyspark()

    def _spark(self, run: Run) -> Any:
        connection = self.execution.connection or DEFAULT_MASTER
        if not (is_local(connection) or connection.startswith(CONNECT_SCHEMES)):
            connection = run.resolve_connection(connection)  # a variable's or Airflow's
        return spark_of(connection)

    @contextlib.contextmanager
    def _session(self, run: Run) -> Iterator[SparkSqlSession]:
        session = SparkSqlSession(self._spark(run))
        try:
            yield session
        finally:
            session.close()

    @contextlib.contextmanager
    def _opened(
        self, run: Run, files: Sequence[str], rows: bool = False
    ) -> Iterator[tuple[SparkSqlSession, SqlInput]]:
        with self._session(run) as session:
            yield session, spark_input.view(session, run.config, files, rows)

    def _files(self, run: Run) -> list[str]:
        return [c.file for c in run.chunks()]

    def list_input(self, run: Run) -> list[ChunkRef]:
        config = run.config
        if config.input.format != "csv":
            return super().list_input(run)
        files = list_input_files(config.input)
        with self._session(run) as session:  # every row parsed by Spark, not by the worker
            counts = spark_input.count_csv_rows(session, config, files)
        return [ChunkRef(i, f, 0, counts[i], file_version(f)) for i, f in enumerate(files)]

    def domain_stats(self, run: Run) -> DomainStats:
        with self._opened(run, self._files(run)) as (session, source):
            return passes.domain_stats(session, source, run.config, run.chunks())

    def root_counts(self, run: Run) -> RootCounts:
        with self._opened(run, self._files(run)) as (session, source):
            return passes.histogram(session, source, run.config, run.plan())

    def first_rows(
        self, run: Run, plan: Plan, node: tuple[int, ...], keys: np.ndarray
    ) -> np.ndarray:
        scan = FirstRowScan(keys)
        with self._session(run) as session:
            for chunk in run.chunks():  # in input order: a class's first chunk holds its first row
                source = spark_input.view(session, run.config, [chunk.file], rows=True)
                args = (session, source, run.config, plan, node, scan.wanted, chunk.chunk_id)
                scan.add(*passes.chunk_first_rows(*args))
                if scan.done:
                    break
        return scan.result()

    def write_release(self, run: Run) -> Written:
        config, plan, decision = run.config, run.plan(), run.decision()
        chunks = run.chunks()
        names = [part_name(c.chunk_id, config.output.format) for c in chunks]
        staging = run.staging.rstrip("/")
        with self._opened(run, [c.file for c in chunks]) as (session, whole):
            parts = [
                (n, spark_input.view(session, config, [c.file]))
                for n, c in zip(names, chunks, strict=True)
            ]

            def write(select: exp.Select, name: str) -> None:
                write_part(session, select, staging + "/" + name)

            aggregates = run.microaggregates()
            passes.write_parts(session, whole, parts, config, plan, decision, write, aggregates)
            paths = [staging + "/" + n for n in names]
            qids, sensitive = class_columns(config)
            release = session.name(session.spark.read.parquet(*paths), "release")
            table = session.query(grouped_release(D.table(release), [*qids, *sensitive]))
            utility = None
            if config.utility is not None:  # from counts, the sample's records joined in Spark
                numbered = spark_input.view(session, config, self._files(run), rows=True)
                args = (config, chunks, plan.stats.n_rows, whole, numbered, table)
                utility = utility_partial(session, *args)
        return Written(names, classes_of(table, qids, sensitive), utility)

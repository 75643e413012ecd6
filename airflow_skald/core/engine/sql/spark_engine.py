"""`SparkEngine` (`execution: {engine: spark, connection: "local[2]" | "sc://host:port"}`,
docs/design.md §2b, ADR 0056): the three passes run as Spark SQL (sqlglot's dialect "spark",
the SQL layer DuckDB runs) over the input's Parquet files; the worker gets counts and labels,
Spark writes the release's parts into the staging folder, and the shared check, manifest and
commit publish them.

One part per input file (`list_input`: a chunk per file, as DuckDB's), so a record's first
row is its file's chunk and its row there (Parquet's `_metadata.row_index`). Spark writes
folders of files: the engine writes every part in one job (`write_parts`: each part's rows one
task, a UNION ALL of them written `partitionBy` the part, ADR 0077) into a folder beside them
and moves each part's one file onto its name (a killed write leaves no part). The files are
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
from airflow_skald.core.encode.domain import DomainStats
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.engine.sql import dialect as D
from airflow_skald.core.engine.sql import passes, spark_input
from airflow_skald.core.engine.sql.domain import SqlInput
from airflow_skald.core.engine.sql.grouped_classes import classes_of
from airflow_skald.core.engine.sql.parquet_files import ParquetFilesEngine
from airflow_skald.core.engine.sql.release import class_columns, grouped_release
from airflow_skald.core.engine.sql.spark_session import (
    CONNECT_SCHEMES,
    SparkSqlSession,
    _pyspark,
    is_local,
    spark_of,
)
from airflow_skald.core.engine.sql.utility import numbered_files, utility_partial
from airflow_skald.core.passes.written import Written
from airflow_skald.core.release.write.commit import part_name

if TYPE_CHECKING:
    from airflow_skald.core.count.root_counts import RootCounts
    from airflow_skald.core.passes.state import Run

NAME = "spark"
#: the master of a run that names no connection: a local Spark on every core
DEFAULT_MASTER = "local[*]"


#: the column that tells the parts apart in the one job that writes them (a folder per value)
PART = "skald_part"


def write_parts(session: SparkSqlSession, parts: Sequence[tuple[exp.Select, str]]) -> None:
    """The rows of each `select` as one Parquet file at its path, all written by one Spark job
    (ADR 0076): each part's rows one task (`coalesce(1)`: no shuffle, its file's order), the
    tasks a UNION ALL written with `partitionBy` into a folder beside the parts; then each
    part's one file moved onto its path (a killed write leaves no part)."""
    if not parts:
        return
    frames = [
        session.frame(select).selectExpr("*", f"{i} AS {PART}").coalesce(1)
        for i, (select, _) in enumerate(parts)
    ]
    whole = frames[0]
    for frame in frames[1:]:
        whole = whole.unionByName(frame)
    folder = os.path.dirname(parts[0][1]) + "/.parts.writing"
    try:
        whole.write.mode("overwrite").partitionBy(PART).parquet(folder)
        for i, (select, path) in enumerate(parts):
            files = sorted(glob.glob(os.path.join(folder, f"{PART}={i}", "part-*.parquet")))
            if len(files) > 1:
                raise RuntimeError(f"Spark wrote {len(files)} files for part {path}")
            if not files:  # no rows: Spark writes no file; the part is the schema alone
                empty = os.path.join(folder, f"empty-{i}.parquet")
                pq.write_table(session.frame(select).limit(0).toArrow(), empty)
                files = [empty]
            os.replace(files[0], path)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class SparkEngine(ParquetFilesEngine):
    """The passes inside Spark (a local session or Spark Connect) over local Parquet files."""

    name = NAME
    input_formats = ("parquet", "csv")
    utility = True

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

    def csv_row_counts(self, run: Run, files: list[str]) -> list[int]:
        with self._session(run) as session:
            return spark_input.count_csv_rows(session, run.config, files)

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
            parts = [  # the whole input's schema: no query per part
                (n, spark_input.view(session, config, [c.file], schema=whole.schema))
                for n, c in zip(names, chunks, strict=True)
            ]
            selects: list[tuple[exp.Select, str]] = []

            def write(select: exp.Select, name: str) -> None:
                selects.append((select, staging + "/" + name))

            aggregates = run.microaggregates()
            passes.write_parts(session, whole, parts, config, plan, decision, write, aggregates)
            write_parts(session, selects)  # every part by one job
            paths = [staging + "/" + n for n in names]
            qids, sensitive = class_columns(config)
            release = session.name(session.spark.read.parquet(*paths), "release")
            table = session.query(grouped_release(D.table(release), [*qids, *sensitive]))
            utility = None
            if config.utility is not None:  # from counts, the sample's records joined in Spark
                numbered = spark_input.view(session, config, self._files(run), rows=True)
                rows = numbered_files(config, chunks, numbered)
                args = (config, plan.stats.n_rows, whole, rows, table)
                utility = utility_partial(session, *args)
        return Written(names, classes_of(table, qids, sensitive), utility)

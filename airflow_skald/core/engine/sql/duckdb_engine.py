"""`DuckDBEngine` (`execution: {engine: duckdb}`, docs/design.md §2b, ADR 0053): the three
passes run as SQL inside an embedded DuckDB over the input's Parquet or CSV files (CSV parsed
as the chunk path parses it: `csv_input`, ADR 0064); the worker gets
counts and labels, DuckDB writes the release's parts into the staging folder (COPY ... TO
Parquet), and the shared check, manifest and commit publish them.

One part per input file (`list_input`: a chunk per file), so a record's first row is its
file's chunk and its row there (`file_row_number`), in input order as the chunk path reads.
The utility analysis joins its sample's rows with the same numbering over every file
(`numbered`, `sql.utility`, ADR 0077).

Each pass's DuckDB is set from the run (`DuckDBEngine._session`, ADR 0077): `memory_limit`
the run's memory budget (what the chunk path holds: one chunk of `chunk_rows` records plus
N_RAM histogram bins, `duckdb_session.memory_budget`, at least `MEMORY_FLOOR`), so DuckDB
spills beyond it instead of growing to its default 80 % of RAM; `threads` the run's workers
(`--workers`; one: the machine's cores, DuckDB's default); `temp_directory` a private folder
beside the run's staging folder, named after it, removed when the pass ends."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np
from sqlglot import exp

from airflow_skald.core.config.skald_config import SkaldConfig
from airflow_skald.core.count.first_rows import FirstRowScan
from airflow_skald.core.encode.domain import DomainStats, check_files
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.engine.sql import csv_input, passes
from airflow_skald.core.engine.sql import dialect as D
from airflow_skald.core.engine.sql.domain import SqlInput
from airflow_skald.core.engine.sql.duckdb_session import (
    MEMORY_FLOOR,
    DuckDBSession,
    _duckdb,
    memory_budget,
)
from airflow_skald.core.engine.sql.grouped_classes import classes_of
from airflow_skald.core.engine.sql.parquet_files import ParquetFilesEngine
from airflow_skald.core.engine.sql.release import (
    class_columns,
    copy_to_parquet,
    grouped_release,
)
from airflow_skald.core.engine.sql.utility import FILE, numbered_files, utility_partial
from airflow_skald.core.passes.written import Written
from airflow_skald.core.release.write.commit import part_name

if TYPE_CHECKING:
    from airflow_skald.core.count.root_counts import RootCounts
    from airflow_skald.core.passes.state import Run

NAME = "duckdb"


def insertion_order(keep: bool) -> exp.Expression:
    """SET preserve_insertion_order: whether DuckDB's threads keep the scan's row order."""
    item = exp.EQ(this=exp.var("preserve_insertion_order"), expression=exp.Boolean(this=keep))
    return exp.Set(expressions=[exp.SetItem(this=item)])


def read_parquet(files: Sequence[str], rows: bool = False) -> exp.Expression:
    """read_parquet([files]) (`rows`: with each row's number in its file)."""
    args: list[exp.Expression] = [exp.Array(expressions=[D.text(f) for f in files])]
    if rows:
        args.append(exp.EQ(this=exp.var("file_row_number"), expression=exp.true()))
    return exp.Table(this=exp.Anonymous(this="read_parquet", expressions=args))


def scan(config: SkaldConfig, files: Sequence[str], rows: bool = False) -> exp.Select:
    """The input's rows in `files` as the chunk path reads them (`rows`: one file, with each
    row's number in it): Parquet as stored, CSV parsed as the chunk path does (`csv_input`)."""
    if config.input.format == "csv":
        return csv_input.csv_select(config, files, rows)
    return exp.select(exp.Star()).from_(read_parquet(files, rows))


def numbered(config: SkaldConfig, files: Sequence[str]) -> exp.Query:
    """The rows of `files`, each with its file's index in `files` (`utility.FILE`) and its
    row in that file (`file_row_number`, as `first_rows` numbers it): a UNION ALL of one scan
    per file, so no file path is matched as text."""
    scans = [
        exp.select(exp.Star(), D.number(i).as_(FILE)).from_(
            exp.Subquery(this=scan(config, [f], rows=True), alias=exp.TableAlias(this=D.name("s")))
        )
        for i, f in enumerate(files)
    ]
    return scans[0] if len(scans) == 1 else exp.union(*scans, distinct=False)


def _view(
    session: DuckDBSession, relation: str, files: Sequence[str], select: exp.Query
) -> SqlInput:
    """A temporary view of `select` (the rows of `files`) in the session, as the passes' input."""
    view = exp.Create(
        this=D.table(relation),
        kind="VIEW",
        expression=select,
        properties=exp.Properties(expressions=[exp.TemporaryProperty()]),
    )
    session.execute(view)
    schema = session.query(exp.select(exp.Star()).from_(D.table(relation)).limit(0)).schema
    where = f"file {files[0]}" if len(files) == 1 else f"the {len(files)} input files"
    return SqlInput(relation, schema, where)


class DuckDBEngine(ParquetFilesEngine):
    """The passes inside an in-memory DuckDB over the input's local Parquet files."""

    name = NAME
    input_formats = ("parquet", "csv")
    utility = True

    def require(self) -> None:
        _duckdb()

    @contextlib.contextmanager
    def _session(self, run: Run, bytes_per_record: int | None = None) -> Iterator[DuckDBSession]:
        """A DuckDB session set from the run (ADR 0077): `threads` the run's workers (else
        the machine's cores, DuckDB's default), `memory_limit` the run's memory budget
        (`memory_budget`: one chunk of `chunk_rows` records of `bytes_per_record` bytes plus
        N_RAM bins; the floor alone before phase 1 knows the record size), spilling into a
        private folder beside the run's staging folder, named after it (so a killed CLI run's
        is removed with its staging folder, `remove_stale_staging`), removed at close."""
        config = run.config
        limit = MEMORY_FLOOR
        if bytes_per_record is not None:
            limit = memory_budget(config.chunk_rows, bytes_per_record, config.histogram_bins)
        head, tail = os.path.split(run.staging.rstrip("/"))
        session = DuckDBSession(
            self.workers if self.workers > 1 else os.cpu_count(),
            limit,
            head if os.path.isdir(head) else None,  # never a folder made for the spill
            tail + ".spill-",
        )
        try:
            yield session
        finally:
            session.close()

    @contextlib.contextmanager
    def _opened(
        self,
        run: Run,
        files: Sequence[str],
        rows: bool = False,
        bytes_per_record: int | None = None,
    ) -> Iterator[tuple[DuckDBSession, SqlInput]]:
        bpr = run.plan().stats.bytes_per_record if bytes_per_record is None else bytes_per_record
        with self._session(run, bpr) as session:
            select = scan(run.config, files, rows)
            yield session, _view(session, "skald_input", files, select)

    def csv_row_counts(self, run: Run, files: list[str]) -> list[int]:
        with self._session(run) as session:
            return [csv_input.count_rows(session, run.config, f) for f in files]

    def domain_stats(self, run: Run) -> DomainStats:
        chunks = run.chunks()
        checked = check_files(run.config, chunks)  # the schemas, and the record size
        with self._opened(run, self._files(run), bytes_per_record=checked[1]) as (session, src):
            return passes.relation_stats(session, src, run.config, len(chunks), checked)

    def root_counts(self, run: Run) -> RootCounts:
        with self._opened(run, self._files(run)) as (session, source):
            return passes.histogram(session, source, run.config, run.plan())

    def first_rows(
        self, run: Run, plan: Plan, node: tuple[int, ...], keys: np.ndarray
    ) -> np.ndarray:
        scan = FirstRowScan(keys)
        for chunk in run.chunks():  # in input order: a class's first chunk holds its first row
            with self._opened(run, [chunk.file], rows=True) as (session, source):
                args = (session, source, run.config, plan, node, scan.wanted, chunk.chunk_id)
                scan.add(*passes.chunk_first_rows(*args))
            if scan.done:
                break
        return scan.result()

    def write_release(self, run: Run) -> Written:
        config, plan, decision = run.config, run.plan(), run.decision()
        chunks = run.chunks()
        names = [part_name(c.chunk_id, config.output.format) for c in chunks]
        with self._opened(run, [c.file for c in chunks]) as (session, whole):
            parts = [
                (name, _view(session, f"skald_part_{c.chunk_id}", [c.file], scan(config, [c.file])))
                for name, c in zip(names, chunks, strict=True)
            ]

            def write(select: exp.Select, name: str) -> None:
                with passes.atomic_path(run.staging.rstrip("/") + "/" + name) as writing:
                    session.execute(copy_to_parquet(select, writing))

            # a part's rows in any order (the release is a multiset of rows, §2b): DuckDB's
            # threads write without keeping the file's order (~30 % less CPU, ADR 0081);
            # kept again after (the utility sample numbers CSV rows by their order)
            session.execute(insertion_order(False))
            aggregates = run.microaggregates()
            passes.write_parts(session, whole, parts, config, plan, decision, write, aggregates)
            session.execute(insertion_order(True))
            # the written parts' classes, from DuckDB's GROUP BY of them (in this session)
            paths = [run.staging.rstrip("/") + "/" + n for n in names]
            qids, sensitive = class_columns(config)
            table = session.query(grouped_release(read_parquet(paths), [*qids, *sensitive]))
            utility = None
            if config.utility is not None:  # from counts, the sample's records joined in DuckDB
                files = self._files(run)
                rows = _view(session, "skald_numbered", files, numbered(config, files))
                args = (
                    config,
                    plan.stats.n_rows,
                    whole,
                    numbered_files(config, chunks, rows),
                    table,
                )
                utility = utility_partial(session, *args)
            return Written(names, classes_of(table, qids, sensitive), utility)

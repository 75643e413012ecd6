"""`PostgresEngine` (`execution: {engine: postgresql}`, docs/design.md §2a and §2b, ADR 0061):
the three passes run as SQL inside the PostgreSQL that holds the input table, and the release
is written there as a table. What crosses to the worker: phase 1's statistics, the root
histogram, the first rows of the classes the search asks for, the release's class table.
No row is staged on the worker's disk, none crosses to it, but for the utility analysis's
sample when the config asks for it (`sql.utility`, at most `utility.max_records` records,
the analysis's columns, in memory; joined by the chunk path's numbering, `_numbered`, ADR 0079).

- **Input**: `input: {table, connection}` or `{sql, connection, order_by}`, read in
  `order_by` order (else the table's primary key; neither: refused), as the chunk path's
  extract reads it (`extract.read_order`). Its
  chunks are listed as the extract would cut them (`chunk_rows` rows each) without staging
  any: the manifest's chunk count and the first-row codes (`chunk_id << 32 | row`, from
  `row_number() OVER (ORDER BY order_by)`) are the chunk path's.
- **Output**: `output: {table, connection}` on the input's connection. Phase 3 is one
  `CREATE TABLE <new> AS SELECT` (`release_table.new_table_name` of the run), checked from the
  engine's `GROUP BY` of it by the shared release check, then swapped in by the chunk path's
  own swap (`table_release.publish_table(written=True)`), keeping grants, policies, indexes,
  comments and owner.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
import sqlglot
from sqlglot import exp

from airflow_skald.core.count.first_rows import ROW_BITS, FirstRowScan
from airflow_skald.core.data.database.extract import named, plain_types, read_order
from airflow_skald.core.data.database.release_table import failure, new_table_name
from airflow_skald.core.data.io import ChunkRef
from airflow_skald.core.encode.domain import DomainStats, check_schema
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.engine.base import Engine
from airflow_skald.core.engine.sql import dialect as D
from airflow_skald.core.engine.sql import passes
from airflow_skald.core.engine.sql.domain import SqlInput
from airflow_skald.core.engine.sql.grouped_classes import classes_of
from airflow_skald.core.engine.sql.postgres_session import PostgresSession, _driver
from airflow_skald.core.engine.sql.pseudonyms import check_hashable
from airflow_skald.core.engine.sql.release import (
    class_columns,
    grouped_release,
    released_select,
)
from airflow_skald.core.engine.sql.support import check_supported
from airflow_skald.core.engine.sql.table_checks import (
    check_privileges,
    fingerprint,
    pseudonyms_well_formed,
)
from airflow_skald.core.engine.sql.utility import FILE, ROW, Numbered, utility_partial
from airflow_skald.core.errors import ConfigError, DataError, SkaldError
from airflow_skald.core.passes.written import Written
from airflow_skald.core.release.write.commit import part_name

if TYPE_CHECKING:
    from airflow_skald.core.config.skald_config import SkaldConfig
    from airflow_skald.core.count.root_counts import RootCounts
    from airflow_skald.core.passes.state import Run

NAME = "postgresql"
PREFIX = f"execution.engine {NAME}"


class PostgresEngine(Engine):
    """The passes inside the input table's PostgreSQL; the release a table there."""

    name = NAME
    utility = True  # the sample joined by the staged extract's numbering (`_numbered`)

    def check(self, config: SkaldConfig) -> None:
        db, target = config.database, config.output_table
        if db is None:
            raise ConfigError(
                f"{PREFIX} runs the passes in the input's database: give input: "
                "{table: ..., connection: ...} or {sql: ..., connection: ..., order_by: [...]}"
            )
        if db.sql is not None:
            _query(db.sql)  # parsed now: a query PostgreSQL's dialect does not read is refused
        if target is None:
            raise ConfigError(
                f"{PREFIX} writes the release as a table in the input's database (a folder "
                "release would take the rows out of it): give output: {table: ..., "
                f"connection: {db.connection}}}"
            )
        if target.connection != db.connection:
            raise ConfigError(
                f"{PREFIX}: output.connection '{target.connection}' is not the input's "
                f"'{db.connection}' (the release is written by the input's database)"
            )
        check_supported(config, self)
        _driver()

    # ------------------------------------------------------------------ the session
    @contextlib.contextmanager
    def _opened(self, run: Run, rows: bool = False) -> Iterator[tuple[PostgresSession, SqlInput]]:
        """A session on the input's database and the input table as a temporary view (`rows`:
        with each row's number in the read order); a driver's error as one line without the
        connection's password; every temporary table and view dropped at the end."""
        db = run.config.database
        uri = run.resolve_connection(db.connection)
        session = None
        try:
            session = PostgresSession(uri)
            yield session, _source(session, run, rows)
        except SkaldError:
            raise
        except Exception as exc:
            raise failure(exc, uri, f"{PREFIX}: {_what(db)}") from None
        finally:
            if session is not None:
                session.close()

    # ------------------------------------------------------------------ the passes
    def list_input(self, run: Run) -> list[ChunkRef]:
        """Phase 0: the privileges checked, the read order, the rows counted and
        fingerprinted; the chunks the extract would cut, none staged."""
        config, db = run.config, run.config.database
        with self._opened(run) as (session, source):
            order = read_order(session.db, db)
            check_privileges(session, db.table, config.output_table)  # a query's: its view
            check_hashable(config, PREFIX, source.schema)
            n, version = fingerprint(session, source, _table(db.table) if db.table else None)
        if not n:
            raise DataError(f"{_what(db)} has no records")
        size = config.chunk_rows
        file = f"{NAME}:{db.table or 'query'}"
        chunks = [
            ChunkRef(i, file, 0, min(size, n - start), version)
            for i, start in enumerate(range(0, n, size))
        ]
        return named(chunks, db, order)

    def input_columns(self, run: Run) -> list[str]:
        with self._opened(run) as (_session, source):
            return list(source.schema.names)

    def domain_stats(self, run: Run) -> DomainStats:
        config, chunks = run.config, run.chunks()
        with self._opened(run) as (session, source):
            names = list(source.schema.names)
            bpr = check_schema(config, names, source.schema, source.where)
            checked = (names, bpr, [chunks[0].file])
            return passes.relation_stats(session, source, config, len(chunks), checked)

    def root_counts(self, run: Run) -> RootCounts:
        with self._opened(run) as (session, source):
            return passes.histogram(session, source, run.config, run.plan())

    def first_rows(
        self, run: Run, plan: Plan, node: tuple[int, ...], keys: np.ndarray
    ) -> np.ndarray:
        """Each class's first row in the read order, numbered as the chunk path's staged
        chunks number it: row r is chunk r // chunk_rows, row r % chunk_rows there."""
        scan = FirstRowScan(keys)
        with self._opened(run, rows=True) as (session, source):
            args = (session, source, run.config, plan, node, scan.wanted, 0)
            where, rows = passes.chunk_first_rows(*args)
        size = np.int64(run.config.chunk_rows)
        scan.add(where, ((rows // size) << ROW_BITS) | (rows % size))
        return scan.result()

    def write_release(self, run: Run) -> Written:
        """Phase 3: `CREATE TABLE <new> AS SELECT` the released rows, their class table the
        engine's GROUP BY of the new table (dropped again if anything fails here)."""
        config, plan, decision = run.config, run.plan(), run.decision()
        target = config.output_table
        new = D.table(new_table_name(target, run.token), target.schema)
        qids, sensitive = class_columns(config)
        with self._opened(run) as (session, source):
            aggregates = run.microaggregates()
            tables = passes.release_tables(session, source, config, plan, decision, aggregates)
            select = released_select(session, source, config, plan, decision, *tables)
            session.execute(exp.Drop(tables=[new], kind="TABLE", exists=True))
            try:
                session.execute(exp.Create(this=new, kind="TABLE", expression=select))
                # its statistics: the check's GROUP BY hashes the classes (a fresh table's
                # planner guess sorts every row of it, spilling to disk)
                session.execute(exp.Analyze(tables=[new]))
                select = grouped_release(new, [*qids, *sensitive])
                # the class table read as the cursor delivers it, unless the utility
                # analysis reads the grouped rows too (issue 43: its rows grow with the input's)
                grouped = session.query(select) if config.utility is not None else None
                rows = grouped if grouped is not None else session.batches(select)
                classes = classes_of(rows, qids, sensitive)
                pseudonyms_well_formed(session, new, config, target.qualified)
                columns = session.query(exp.select(exp.Star()).from_(new).limit(0)).schema.names
                utility = None
                if config.utility is not None:  # from counts, the sample's records joined here
                    args = (config, plan.stats.n_rows, source, _numbered(session, run, source))
                    utility = utility_partial(session, *args, grouped)
            except BaseException:
                session.execute(exp.Drop(tables=[new], kind="TABLE", exists=True))
                raise
        names = [part_name(c.chunk_id, config.output.format) for c in run.chunks()]
        return Written(names, classes, utility, table_columns=list(columns))


def _table(name: str) -> exp.Table:
    """`schema.table` (or `table`) as a quoted table."""
    schema, _, table = name.rpartition(".")
    return D.table(table, schema or None)


def _source(session: PostgresSession, run: Run, rows: bool) -> SqlInput:
    """The input table as a temporary view, its Arrow schema as the extract stages it."""
    db = run.config.database
    columns: list[exp.Expression] = [exp.Star()]
    if rows:
        order = read_order(session.db, db)  # the order the chunk path reads in
        number = exp.Window(
            this=exp.RowNumber(),
            order=exp.Order(expressions=[exp.Ordered(this=D.column(c)) for c in order]),
        )
        columns.append(exp.Sub(this=number, expression=D.number(1)).as_(passes.ROW_COLUMN))
    relation = _table(db.table) if db.table else exp.Subquery(this=_query(db.sql), alias="q")
    select = exp.select(*columns).from_(relation)
    view = session.view(select, "input")
    empty = session.query(exp.select(exp.Star()).from_(D.table(view)).limit(0))
    return SqlInput(view, plain_types(empty).schema, _what(db))


def _numbered(session: PostgresSession, run: Run, source: SqlInput) -> Numbered:
    """The input's rows numbered as the chunk path's staged extract cuts them (`list_input`,
    `extract.write_chunks`): row r of the read order is chunk r // chunk_rows, row
    r % chunk_rows there, the chunk's first row number r - r % chunk_rows (ADR 0079)."""
    size = run.config.chunk_rows
    number = D.column(passes.ROW_COLUMN)
    select = exp.select(
        *[D.column(n) for n in source.schema.names],
        D.int_div(number, size).as_(FILE),
        exp.Mod(this=number, expression=D.number(size)).as_(ROW),
    ).from_(D.table(_source(session, run, rows=True).relation))
    starts = np.arange(len(run.chunks()), dtype=np.int64) * size
    view = SqlInput(session.view(select, "numbered"), source.schema, source.where)
    return Numbered(view, starts, source.schema)


def _what(db) -> str:
    """The input as messages name it."""
    return f"input table {db.table}" if db.table else "the input query"


def _query(sql: str) -> exp.Expression:
    """`input.sql` read as PostgreSQL's dialect (the view over it is written by sqlglot);
    ConfigError, one line, if it is not one SELECT."""
    try:
        parsed = sqlglot.parse_one(sql, read="postgres")
    except sqlglot.errors.ParseError as exc:
        first = (str(exc).strip().splitlines() or ["unparsed"])[0]
        raise ConfigError(
            f"{PREFIX}: input.sql is not a query PostgreSQL's dialect reads ({first})"
        ) from None
    if not isinstance(parsed, exp.Query):
        raise ConfigError(f"{PREFIX}: input.sql must be one SELECT")
    return parsed

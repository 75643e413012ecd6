"""PostgreSQL as an engine (docs/design.md §2b): the input's own database runs the passes,
through ADBC (the driver the product reads tables with, `airflow-skald[postgres]`). The
worker's small tables go in as temporary tables (ADBC's bulk ingest: COPY, no values in the
statement text); they are dropped by `close`, and with the session anyway. Each statement's text
is logged at DEBUG (never its bind parameters): what an auditor, or a test, reads to see that
no value and no secret is in it."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence

import pyarrow as pa
from sqlglot import exp

from airflow_skald.core.engine.sql import dialect as D
from airflow_skald.core.engine.sql.session import TemporaryRelations, temporary_name
from airflow_skald.core.errors import ConfigError

log = logging.getLogger("airflow_skald.sql")


def _driver():
    try:
        import adbc_driver_postgresql.dbapi as pg
    except ImportError:
        raise ConfigError(
            "execution engine postgresql needs ADBC's PostgreSQL driver: "
            "pip install 'airflow-skald[postgres]'"
        ) from None
    return pg


class PostgresSession(TemporaryRelations):
    """One connection to the input's database (a URI)."""

    dialect = "postgres"

    def __init__(self, uri: str):
        self.db = _driver().connect(uri, autocommit=True)
        with self.db.cursor() as cur:  # a killed worker's statement is abandoned within a
            # second, not run to its end (PostgreSQL 14+; older servers ignore it)
            cur.execute(
                "SELECT set_config('client_connection_check_interval', '1000', false) "
                "WHERE current_setting('server_version_num')::int >= 140000"
            )
            cur.fetchall()
        super().__init__()
        #: bytes of the Arrow results this session received (what crossed to the worker)
        self.received = 0

    def query(self, statement: exp.Expression, params: Sequence = ()) -> pa.Table:
        with self.db.cursor() as cur:
            cur.execute(self._text(statement), list(params) or None)
            table = cur.fetch_arrow_table()
        self.received += table.nbytes
        return table

    def batches(self, statement: exp.Expression, params: Sequence = ()) -> Iterator[pa.RecordBatch]:
        """`query`'s result as the cursor delivers it, batch by batch (none held after)."""
        with self.db.cursor() as cur:
            cur.execute(self._text(statement), list(params) or None)
            for batch in cur.fetch_record_batch():
                self.received += batch.nbytes
                yield batch

    def execute(self, statement: exp.Expression, params: Sequence = ()) -> None:
        with self.db.cursor() as cur:
            cur.execute(self._text(statement), list(params) or None)

    def _text(self, statement: exp.Expression) -> str:
        text = D.render(statement, self.dialect)
        log.debug("postgresql: %s", text)
        return text

    def create(self, select: exp.Select, prefix: str) -> str:
        """The rows of `select` as a new temporary table, ANALYZEd (as `send`'s)."""
        name = super().create(select, prefix)
        self.execute(exp.Analyze(tables=[D.table(name)]))
        return name

    def send(self, prefix: str, table: pa.Table) -> str:
        name = temporary_name(prefix)
        self.temporaries.append(name)
        with self.db.cursor() as cur:
            cur.adbc_ingest(name, table, mode="create", temporary=True)
            # its statistics (autovacuum never analyzes a temporary table): the planner
            # otherwise guesses ~1000s of rows and joins the input to it by sorting both
            cur.execute(self._text(exp.Analyze(tables=[D.table(name)])))
        return name

    def close(self) -> None:
        try:
            self.drop_temporaries()
        finally:
            self.db.close()

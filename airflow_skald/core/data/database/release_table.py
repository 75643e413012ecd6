"""A table release in PostgreSQL (docs/design.md §2a): written to a new table, read back, swapped in.

- **One writer per table**: a `TableWriter` holds the target's session advisory lock
  (``pg_try_advisory_lock`` on ``skald-release:{schema.table}``) from before it creates the
  new table until the swap is committed. A second writer is refused at once; a killed
  writer's session ends and its lock with it, so what it left (its new table) is debris that
  the next writer drops first.
- **The new table** ``{name}__skald_new_{8 hex}`` sits in the target's schema. The parts (the
  verified Parquet parts of the staging folder) go into it as Arrow batches through ADBC's
  bulk ingest (``COPY ... FROM STDIN (FORMAT binary)``), never row by row, in one transaction.
- **Read back** (`read_back`): its rows as Parquet parts in a private folder, which the
  release check reads like a folder release.
- **Swap** (`swap`): one transaction: the target's comment is read again and judged (a newer
  release by another run: refused), what the old table keeps read (`table_properties`: owner,
  grants, row-level security and policies, indexes, constraints, comments...), the old table
  dropped, the new one renamed into its place, given those properties and commented with the
  release's identity (the manifest's SHA-256, the run token, ...) and the table's description.
  A kill anywhere before its COMMIT leaves the old table as it was, queryable.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from airflow_skald.core.data.database.connection import redacted, scrub
from airflow_skald.core.data.database.extract import connect, write_chunks
from airflow_skald.core.data.database.source import quote_ident
from airflow_skald.core.data.database.table_properties import (
    TableProperties,
    literal,
    read_acl,
    read_properties,
)
from airflow_skald.core.data.database.target import TableTarget
from airflow_skald.core.data.io import decode_dictionaries, local_path
from airflow_skald.core.errors import DataError

log = logging.getLogger("airflow_skald")

COMMENT_PREFIX = "skald release "
NEW_INFIX = "__skald_new_"
PART_NAME = "part-{:05d}.parquet"
_IDENT_MAX = 63  # PostgreSQL's identifier length (NAMEDATALEN - 1)


class TableBusyError(DataError):
    """Another run is writing the table."""


def quoted(schema: str, name: str) -> str:
    return f"{quote_ident(schema)}.{quote_ident(name)}"


def comment_text(identity: dict[str, Any], description: str | None = None) -> str:
    """The table's comment: ``skald release {json}`` (no value of a record, no secret), then
    on the next lines the table's description if it had one (kept from release to release)."""
    text = COMMENT_PREFIX + json.dumps(identity, sort_keys=True, separators=(",", ":"))
    return text + ("\n" + description if description else "")


def _split_comment(text: str | None) -> tuple[dict | None, str | None]:
    """The release identity a comment holds (None if it is not a skald release's) and the
    description after it."""
    if not text or not text.startswith(COMMENT_PREFIX):
        return None, None
    try:
        body, end = json.JSONDecoder().raw_decode(text, len(COMMENT_PREFIX))
    except ValueError:
        return None, None
    if not isinstance(body, dict) or "manifest_sha256" not in body:
        return None, None
    rest = text[end:]
    if rest and not rest.startswith("\n"):
        return None, None
    return body, rest[1:] or None


def parse_comment(text: str | None) -> dict | None:
    """The release identity a comment holds, None if it is not a skald release's."""
    return _split_comment(text)[0]


def comment_description(text: str | None) -> str | None:
    """What a skald release's comment says after its identity (the table's description)."""
    return _split_comment(text)[1]


def new_table_name(target: TableTarget, token: str) -> str:
    """The new table of run `token` (a retry of the run writes the same one)."""
    tag = hashlib.sha256(token.encode()).hexdigest()[:8]
    return _debris_prefix(target) + tag


def _debris_prefix(target: TableTarget) -> str:
    return target.name[: _IDENT_MAX - len(NEW_INFIX) - 8] + NEW_INFIX


def failure(exc: Exception, uri: str, what: str) -> DataError:
    """A driver's error as one line, without the connection's password."""
    text = str(exc).strip()
    first = scrub(text, uri).splitlines()[0] if text else ""
    return DataError(f"{what} on {redacted(uri)}: {type(exc).__name__}: {first}")


def _lock_key(target: TableTarget) -> str:
    return f"skald-release:{target.qualified}"


class TableState:
    """What is at the target now: whether the schema and the table exist, and its comment."""

    def __init__(self, schema_exists: bool, exists: bool, comment: str | None) -> None:
        self.schema_exists, self.exists, self.comment = schema_exists, exists, comment

    @property
    def release(self) -> dict | None:
        return parse_comment(self.comment)


def _state(cur, target: TableTarget) -> TableState:
    cur.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1), "
        "to_regclass($2) IS NOT NULL, obj_description(to_regclass($2), 'pg_class')",
        (target.schema, quoted(target.schema, target.name)),
    )
    schema_exists, exists, comment = cur.fetchone()
    return TableState(bool(schema_exists), bool(exists), comment)


state_of = _state  # the target's state read on a caller's cursor (`engine.sql.table_counts`)


def _read_only(uri: str, target: TableTarget, read: Callable[[Any], Any]) -> Any:
    """`read(cursor)` in one short read-only transaction on the target's database."""
    try:
        with connect(uri) as conn, conn.cursor() as cur:
            out = read(cur)
            conn.rollback()
            return out
    except DataError:
        raise
    except Exception as exc:
        raise failure(exc, uri, f"cannot read output table {target.qualified}") from None


def table_state(uri: str, target: TableTarget) -> TableState:
    """The target as it is now."""
    return _read_only(uri, target, lambda cur: _state(cur, target))


def table_properties(uri: str, target: TableTarget) -> TableProperties | None:
    """What the target table keeps when a release replaces it (None: there is no table)."""

    def read(cur) -> TableProperties | None:
        exists = _state(cur, target).exists
        return read_properties(cur, target.schema, target.name) if exists else None

    return _read_only(uri, target, read)


class TableWriter:
    """One writer's session on the target (see the module's rules). Use as a context manager:
    it takes the target's advisory lock (TableBusyError if another session holds it) and
    drops debris; at exit the new table is dropped unless it was swapped in."""

    def __init__(self, uri: str, target: TableTarget, token: str, written: bool = False) -> None:
        self.uri, self.target, self.token = uri, target, token
        self.new = new_table_name(target, token)
        #: the new table was written by the engine holding the rows (`sql.postgres_engine`):
        #: kept when debris is dropped, and only swapped in
        self.written = written
        self.conn = None
        self.swapped = False

    def __enter__(self) -> TableWriter:
        try:
            self.conn = connect(self.uri)
            with self.conn.cursor() as cur:
                # a killed writer's backend gives up within a second, even while it waits
                # for a lock (PostgreSQL 14+; older servers ignore it)
                cur.execute(
                    "SELECT set_config('client_connection_check_interval', '1000', false) "
                    "WHERE current_setting('server_version_num')::int >= 140000"
                )
                cur.fetchall()
                cur.execute("SELECT pg_try_advisory_lock(hashtext($1))", (_lock_key(self.target),))
                locked = bool(cur.fetchone()[0])
            self.conn.commit()
        except Exception as exc:
            self._close()
            what = f"cannot write output table {self.target.qualified}"
            raise failure(exc, self.uri, what) from None
        if not locked:
            self._close()
            raise TableBusyError(
                f"output table {self.target.qualified} is being written by another run (it "
                "holds the table's advisory lock); try again once that run is over"
            )
        self._run(self._drop_debris, "cannot clear what an interrupted run left")
        return self

    def __exit__(self, *exc_info) -> None:
        try:
            if not self.swapped and self.conn is not None:
                self._run(self._drop_new, "cannot drop the new table")
        finally:
            self._close()  # the session's end frees its advisory lock

    def _close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:  # a broken connection: the server ends the session anyway
                log.debug("closing the output table's connection failed", exc_info=True)
            self.conn = None

    def _run(self, step: Callable[[Any], Any], what: str) -> Any:
        try:
            with self.conn.cursor() as cur:
                out = step(cur)
            self.conn.commit()
            return out
        except DataError:
            self.conn.rollback()
            raise
        except Exception as exc:
            try:
                self.conn.rollback()
            except Exception:
                log.debug("rollback failed", exc_info=True)
            raise failure(exc, self.uri, f"{what} (output table {self.target.qualified})") from None

    def _drop_debris(self, cur) -> None:
        """New tables of writers that were killed (we hold the lock: no one else writes)."""
        cur.execute(
            "SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = $1 AND c.relkind = 'r' AND starts_with(c.relname::text, $2)",
            (self.target.schema, _debris_prefix(self.target)),
        )
        for (name,) in cur.fetchall():
            if self.written and name == self.new:
                continue  # this run's release, written by the engine
            cur.execute(f"DROP TABLE IF EXISTS {quoted(self.target.schema, name)}")
            if name != self.new:
                log.info("dropped %s.%s, left by an interrupted run", self.target.schema, name)

    def _drop_new(self, cur) -> None:
        cur.execute(f"DROP TABLE IF EXISTS {quoted(self.target.schema, self.new)}")

    def state(self) -> TableState:
        return self._run(lambda cur: _state(cur, self.target), "cannot read the output table")

    # ------------------------------------------------------------------------ write
    def load(self, parts: Sequence[str]) -> int:
        """The parts' rows, in order, into the new table (created from the first part's
        schema, dictionaries decoded); returns the rows written."""
        schema = _plain_schema(parts[0])
        written = 0

        def batches() -> Iterator[pa.RecordBatch]:
            nonlocal written
            for part in parts:
                with _parquet(part) as pf:
                    for batch in pf.iter_batches(batch_size=1 << 17):
                        table = decode_dictionaries(pa.Table.from_batches([batch]))
                        written += table.num_rows
                        yield from table.cast(schema).to_batches()

        reader = pa.RecordBatchReader.from_batches(schema, batches())

        def ingest(cur) -> None:
            cur.execute(f"DROP TABLE IF EXISTS {quoted(self.target.schema, self.new)}")
            cur.adbc_ingest(self.new, reader, mode="create", db_schema_name=self.target.schema)

        self._run(ingest, "cannot write the new table")
        return written

    def read_back(self, folder: str, chunk_rows: int) -> list[str]:
        """The new table's rows as Parquet parts ``part-NNNNN.parquet`` in `folder`."""

        def read(cur) -> list[str]:
            cur.execute(f"SELECT * FROM {quoted(self.target.schema, self.new)}")
            refs = write_chunks(cur.fetch_record_batch(), chunk_rows, folder, PART_NAME)
            return [r.file for r in refs]

        return self._run(read, "cannot read the new table back")

    def swap(self, identity: dict[str, Any], judge: Callable[[TableState], None]) -> None:
        """In one transaction: `judge` the target as it is now (it raises to refuse), read
        what the old table keeps (`table_properties`: refused in one line if the new table
        cannot have it), drop the old table, rename the new one into its place, give it the
        old one's properties, comment it. Nothing changes unless all of it commits."""
        schema, name = self.target.schema, self.target.name
        table = quoted(schema, name)

        def step(cur) -> None:
            state = _state(cur, self.target)
            judge(state)
            if self.written and not _exists(cur, quoted(schema, self.new)):
                raise DataError(
                    f"output table {self.target.qualified}: the new table {self.new} the "
                    "engine wrote is gone (dropped by another run?); the previous release "
                    "stays in place"
                )
            props = read_properties(cur, schema, name) if state.exists else None
            columns = _columns(cur, quoted(schema, self.new))
            problems = props.problems(columns) if props is not None else []
            if problems:
                raise DataError(cannot_keep(self.target, problems))
            cur.execute(f"DROP TABLE IF EXISTS {table}")
            cur.execute(f"ALTER TABLE {quoted(schema, self.new)} RENAME TO {quote_ident(name)}")
            if props is not None:
                self._keep(cur, props, columns)
            text = comment_text(identity, comment_description(state.comment))
            cur.execute(f"COMMENT ON TABLE {table} IS {literal(text)}")

        self._run(step, "cannot swap the new table in")
        self.swapped = True

    def _keep(self, cur, props: TableProperties, columns: list[str]) -> None:
        """The old table's properties on the new one (renamed), its privileges last."""
        table = quoted(self.target.schema, self.target.name)
        for what, sql in props.statements(table, columns):
            self._keep_one(cur, what, sql)
        for sql in props.acl_statements(table, read_acl(cur, table)):
            self._keep_one(cur, "its privileges", sql)

    def _keep_one(self, cur, what: str, sql: str) -> None:
        try:
            cur.execute(sql)
        except Exception as exc:
            text = scrub(str(exc).strip(), self.uri).splitlines()
            raise DataError(
                f"output table {self.target.qualified}: the new release cannot keep {what} of "
                f"the table it replaces ({text[0] if text else type(exc).__name__}); the "
                "previous release stays in place"
            ) from None


def cannot_keep(target: TableTarget, problems: list[str]) -> str:
    """One line: the table release cannot replace `target` keeping everything it has."""
    return (
        f"output table {target.qualified} cannot be replaced keeping who may read what and "
        f"how it is used: {'; '.join(problems)}"
    )


def _exists(cur, relation: str) -> bool:
    cur.execute("SELECT to_regclass($1) IS NOT NULL", (relation,))
    return bool(cur.fetchone()[0])


def _columns(cur, relation: str) -> list[str]:
    cur.execute(
        "SELECT attname::text FROM pg_attribute WHERE attrelid = to_regclass($1) "
        "AND attnum > 0 AND NOT attisdropped",
        (relation,),
    )
    return [r[0] for r in cur.fetchall()]


def _parquet(part: str) -> pq.ParquetFile:
    local = local_path(part)
    return pq.ParquetFile(local if local is not None else fsspec.open(part, "rb").open())


def _plain_schema(part: str) -> pa.Schema:
    """A part's schema with dictionary columns as their value type, without metadata."""
    with _parquet(part) as pf:
        schema = pf.schema_arrow
    fields = [
        pa.field(f.name, f.type.value_type if pa.types.is_dictionary(f.type) else f.type)
        for f in schema
    ]
    return pa.schema(fields)

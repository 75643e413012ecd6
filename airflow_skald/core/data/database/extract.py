"""Read a table or query once, as Arrow batches, into staged Parquet chunks (docs/design.md §2a).

ADBC's PostgreSQL driver runs the query as ``COPY (...) TO STDOUT (FORMAT binary)`` and hands
the rows over as Arrow record batches: no row passes through a Python object. The batches are
cut into chunks of exactly `chunk_rows` rows (the last one shorter), each written as one
Parquet file of one row group from contiguous columns, so the staged chunks are the same bytes
whatever batch sizes the driver chose (the Parquet writer cuts pages where its input's arrays
end). A chunk's `version` is the SHA-256 of its bytes, hashed as they are written: the chunks'
fingerprint (the run's input fingerprint) names the rows read, in their order, not when they
were read. The chunks are temporary (deleted at commit) and read by three passes: written
without statistics (no pass asks for them) and, on local disk, without compression (the
passes read them as fast; snappy elsewhere, where bytes cost transfer).
Memory: two chunks (one read while the other is written) and one batch.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import os
import posixpath
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_skald.core.data.database.connection import redacted, scrub
from airflow_skald.core.data.database.source import DatabaseSource, quote_ident
from airflow_skald.core.data.files import filesystem, full_path, local_path
from airflow_skald.core.data.io import ChunkRef
from airflow_skald.core.errors import DataError

log = logging.getLogger("airflow_skald")

CHUNK_NAME = "chunk-{:05d}.parquet"

_PRIMARY_KEY = """
SELECT a.attname::text
FROM pg_index i
JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
WHERE i.indrelid = to_regclass($1) AND i.indisprimary
ORDER BY array_position(i.indkey::int2[], a.attnum)
"""


def connect(uri: str):
    """An ADBC connection (autocommit off: the read is one transaction, one snapshot)."""
    import adbc_driver_postgresql.dbapi as pg

    return pg.connect(uri)


def primary_key(conn, source: DatabaseSource) -> tuple[str, ...]:
    """The table's primary key columns, in key order (none: empty)."""
    with conn.cursor() as cur:
        cur.execute("SELECT to_regclass($1) IS NOT NULL", (source.relation(),))
        if not cur.fetchone()[0]:
            raise DataError(f"input table {source.table} does not exist")
        cur.execute(_PRIMARY_KEY, (source.relation(),))
        return tuple(r[0] for r in cur.fetchall())


def read_order(conn, source: DatabaseSource) -> tuple[str, ...]:
    """`order_by`, else the table's primary key; no order: refused."""
    if source.order_by:
        return source.order_by
    key = primary_key(conn, source)
    if not key:
        raise DataError(
            f"input table {source.table} has no primary key: give input.order_by (columns "
            "that identify a row) so that every pass reads the rows in one order"
        )
    return key


def extract(
    source: DatabaseSource,
    uri: str,
    chunk_rows: int,
    folder: str,
    connector: Callable[[str], object] = connect,
) -> list[ChunkRef]:
    """Read the source once into `folder` (emptied first) as Parquet chunks of `chunk_rows`."""
    fs, root = filesystem(folder)
    if fs.exists(root):
        fs.rm(root, recursive=True)
    private_folder(fs, root)
    t0 = time.perf_counter()
    try:
        with connector(uri) as conn:
            order = read_order(conn, source)
            with conn.cursor() as cur:
                cur.execute(source.query(order))
                chunks = write_chunks(cur.fetch_record_batch(), chunk_rows, folder)
    except DataError:
        raise
    except Exception as exc:  # the driver's own message, without a password
        first = scrub(str(exc), uri).strip().splitlines()[0] if str(exc).strip() else ""
        raise DataError(
            f"cannot read input {source.table or 'query'} from {redacted(uri)}: "
            f"{type(exc).__name__}: {first}"
        ) from None
    if not chunks:
        raise DataError(f"input {source.table or 'query'} has no records")
    chunks = named(chunks, source, order)
    rows = sum(c.n_rows for c in chunks)
    log.info(
        "extracted %d rows of %s in %s order into %d staged chunks in %.1f s",
        rows,
        source.table or "the query",
        ", ".join(quote_ident(c) for c in order),
        len(chunks),
        time.perf_counter() - t0,
    )
    return chunks


def named(chunks: list[ChunkRef], source: DatabaseSource, order: tuple[str, ...]) -> list[ChunkRef]:
    """The chunks with what their rows are (the table or query, its read order) and where
    each starts there: messages name the input and its key columns, never a staged file (gone
    once the run ends)."""
    what = f"input table {source.table}" if source.table else "the input query"
    origin = f"{what} read in {', '.join(quote_ident(c) for c in order)} order"
    starts = itertools.accumulate((c.n_rows for c in chunks), initial=0)
    return [replace(c, origin=origin, origin_row=s) for c, s in zip(chunks, starts, strict=False)]


def private_folder(fs, root: str) -> None:
    """The staging folder, created for this user only (0700) on local disk: the staged rows
    are the raw input, direct identifiers included (object stores: the bucket's access)."""
    local = local_path(root)
    if local is None:
        fs.makedirs(root, exist_ok=True)
        return
    os.makedirs(os.path.dirname(local.rstrip("/")) or ".", exist_ok=True)
    os.mkdir(local, 0o700)
    os.chmod(local, 0o700)  # whatever the umask


def write_chunks(
    batches: Iterable[pa.RecordBatch], chunk_rows: int, folder: str, name: str = CHUNK_NAME
) -> list[ChunkRef]:
    """Cut the batches into chunks of `chunk_rows` rows, one Parquet file each (`name` with
    the chunk's number). A chunk is written in a second thread while the next one is read
    (memory: two chunks)."""
    chunks: list[ChunkRef] = []
    pending: list[pa.RecordBatch] = []
    held = submitted = 0
    schema = None
    with ThreadPoolExecutor(1, thread_name_prefix="skald-stage") as pool:
        writing: Future | None = None

        def flush() -> None:
            nonlocal writing, pending, held, submitted
            if writing is not None:
                chunks.append(writing.result())
            writing = pool.submit(
                _write, pending, schema, folder, name.format(submitted), submitted
            )
            pending, held, submitted = [], 0, submitted + 1

        for batch in batches:
            schema = batch.schema
            while batch.num_rows:
                take = min(chunk_rows - held, batch.num_rows)
                pending.append(batch.slice(0, take))
                held += take
                batch = batch.slice(take)
                if held == chunk_rows:
                    flush()
        if held:
            flush()
        if writing is not None:
            chunks.append(writing.result())
    return chunks


def plain_types(table: pa.Table) -> pa.Table:
    """The driver's columns as plain Arrow types, without its field metadata: PostgreSQL's
    ``numeric(p, s)`` (an opaque text extension) as int64 (scale 0, p <= 18) or
    decimal128(p, s), exactly; a ``numeric`` without precision stays text."""
    columns, fields = [], []
    for f, column in zip(table.schema, table.columns, strict=True):
        typ = f.type
        if isinstance(typ, pa.BaseExtensionType):
            column = pa.chunked_array([c.storage for c in column.chunks], typ.storage_type)
            typ = typ.storage_type
            meta = f.metadata or {}
            typmod = int(meta.get(b"POSTGRESQL:typmod", b"-1") or -1)
            if meta.get(b"POSTGRESQL:type") == b"numeric" and typmod >= 4:
                precision, scale = (typmod - 4) >> 16, (typmod - 4) & 0xFFFF
                typ = (
                    pa.int64()
                    if scale == 0 and precision <= 18
                    else pa.decimal128(precision, scale)
                )
                column = column.cast(typ)
        columns.append(column)
        fields.append(pa.field(f.name, typ, f.nullable))
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


def _write(
    batches: list[pa.RecordBatch], schema: pa.Schema, folder: str, name: str, i: int
) -> ChunkRef:
    table = pa.Table.from_batches(batches, schema)
    batches.clear()  # the chunk is held once, as `table`
    table = plain_types(table).combine_chunks()
    fs, root = filesystem(folder)
    path = posixpath.join(root.rstrip("/"), name)
    digest = hashlib.sha256()
    with _create(fs, path) as fh:
        pq.write_table(
            table,
            _Hashing(fh, digest),
            row_group_size=max(table.num_rows, 1),
            compression="none" if local_path(folder) is not None else "snappy",
            write_statistics=False,
        )
    return ChunkRef(i, full_path(fs, path), 0, table.num_rows, "sha256:" + digest.hexdigest())


def _create(fs, path: str):
    """A new file for writing; on local disk readable by this user only (0600) from its
    first byte on, as long as it exists."""
    local = local_path(path)
    if local is None:
        return fs.open(path, "wb")
    return os.fdopen(os.open(local, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb")


class _Hashing:
    """A file that hashes what is written to it (the bytes once, not read back)."""

    def __init__(self, fh, digest) -> None:
        self.fh, self.digest, self.at, self.closed = fh, digest, 0, False

    def write(self, data) -> int:
        self.digest.update(data)
        self.at += len(data)
        return self.fh.write(data)

    def tell(self) -> int:
        return self.at

    def flush(self) -> None:
        self.fh.flush()

    def close(self) -> None:
        self.closed = True


def remove_staged(folder: str) -> None:
    """Delete the staged chunks (personal data): after the commit, or when the run ends."""
    fs, root = filesystem(folder)
    if fs.exists(root):
        fs.rm(root, recursive=True)

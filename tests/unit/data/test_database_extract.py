"""Staging a database's batches (core/data/database/extract.py), without a server: chunks of
exactly chunk_rows rows whose bytes (and so versions) do not depend on the driver's batch
sizes; PostgreSQL's numeric(p, s) staged exactly; URIs shown without their password."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_skald.core.data.database.connection import namespace, redacted, scrub, table_uri
from airflow_skald.core.data.database.extract import plain_types, write_chunks


def _batches(table: pa.Table, size: int) -> list[pa.RecordBatch]:
    return table.to_batches(max_chunksize=size)


def test_chunks_do_not_depend_on_batch_sizes(tmp_path) -> None:
    table = pa.table({"id": list(range(103)), "name": [f"n{i}" for i in range(103)]})
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = write_chunks(_batches(table, 7), 25, str(tmp_path / "a"))
    b = write_chunks(_batches(table, 1000), 25, str(tmp_path / "b"))
    assert [c.n_rows for c in a] == [25, 25, 25, 25, 3]
    assert [c.version for c in a] == [c.version for c in b]
    assert pa.concat_tables([pq.read_table(c.file) for c in a]).equals(table)


def test_chunk_bytes_do_not_depend_on_batch_sizes_across_pages(tmp_path) -> None:
    """Chunks of several Parquet pages: the writer cuts pages where its input's arrays end,
    so each chunk is written from contiguous columns, whatever the driver's batches were."""
    n = 60_000
    table = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "name": [f"patient-{i * 7919 % n:08d}-{'x' * (i % 37)}" for i in range(n)],
            "group": [("A", "B", "AB", "O")[i % 4] for i in range(n)],
        }
    )
    versions = []
    for size in (777, 50_000):
        (tmp_path / str(size)).mkdir()
        refs = write_chunks(_batches(table, size), 40_000, str(tmp_path / str(size)))
        assert [c.n_rows for c in refs] == [40_000, 20_000]
        name = pq.ParquetFile(refs[0].file).metadata.row_group(0).column(1)
        assert name.total_uncompressed_size > 2**20  # more than one 1 MiB page
        versions.append([c.version for c in refs])
    assert versions[0] == versions[1]
    assert pa.concat_tables([pq.read_table(c.file) for c in refs]).equals(table)


def test_numeric_with_precision_is_staged_exactly() -> None:
    opaque = pa.opaque(pa.string(), "numeric", "PostgreSQL")
    storage = pa.array(["1.5", "-2.0", None])
    meta = {b"POSTGRESQL:type": b"numeric", b"POSTGRESQL:typmod": str((5 << 16) + 1 + 4).encode()}
    whole = {b"POSTGRESQL:type": b"numeric", b"POSTGRESQL:typmod": str((9 << 16) + 4).encode()}
    table = pa.Table.from_arrays(
        [
            pa.ExtensionArray.from_storage(opaque, storage),
            pa.ExtensionArray.from_storage(opaque, pa.array(["7", "8", "9"])),
        ],
        schema=pa.schema(
            [pa.field("x", opaque, metadata=meta), pa.field("n", opaque, metadata=whole)]
        ),
    )
    plain = plain_types(table)
    assert plain.schema.field("x").type == pa.decimal128(5, 1)
    assert plain.schema.field("n").type == pa.int64()
    assert plain.column("n").to_pylist() == [7, 8, 9]
    assert str(plain.column("x")[0].as_py()) == "1.5"


def test_uris_without_passwords() -> None:
    uri = "postgresql://alice:s3cret@db.example:6543/clinic?sslmode=require"
    assert "s3cret" not in redacted(uri) and "alice:***@db.example:6543" in redacted(uri)
    assert namespace(uri) == ("postgres://db.example:6543", "clinic")
    assert table_uri("postgres://u@h/db", "patients") == "postgres://h:5432/db.public.patients"


def test_a_password_given_as_a_query_parameter_is_never_shown() -> None:
    """libpq takes a password from the query string too (`?password=...`): a connection's
    variable holding that form printed it in the one error line of a failed read."""
    for uri in (
        "postgresql://alice@db.example:6543/clinic?password=s3cret-q",
        "postgresql://alice@db.example/clinic?sslmode=require&password=s3cret-q&x=1",
        "postgresql://alice:s3cret%2Dq@db.example/clinic",
    ):
        shown = redacted(uri)
        assert "s3cret" not in shown and "db.example" in shown, shown
        said = scrub(f"FATAL: bad password s3cret-q in {uri}", uri)  # as written, decoded
        assert "s3cret" not in said, said
    assert "sslmode=require" in redacted(
        "postgresql://alice@db.example/clinic?sslmode=require&password=s3cret-q"
    )

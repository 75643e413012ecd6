"""Release parts as files: `write_part` writes one deterministically (Parquet or CSV, local
or fsspec), `read_release_part` reads one back with every column as text (for verification),
`decode_dictionaries` turns dictionary-encoded columns into plain ones."""

from __future__ import annotations

from collections.abc import Sequence

import fsspec
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from airflow_skald.core.data.files import local_path
from airflow_skald.core.data.location import DataLocation

# Types that Parquet's own schema restores exactly, without Arrow's schema stored beside it.
_PARQUET_NATIVE = (
    pa.types.is_string,
    pa.types.is_integer,
    pa.types.is_float32,
    pa.types.is_float64,
    pa.types.is_boolean,
    pa.types.is_date32,
)


def _value_type(t: pa.DataType) -> pa.DataType:
    return t.value_type if pa.types.is_dictionary(t) else t


def decode_dictionaries(table: pa.Table) -> pa.Table:
    """Dictionary-encoded columns as plain columns of their value type."""
    if not any(pa.types.is_dictionary(t) for t in table.schema.types):
        return table
    return table.cast(pa.schema([(f.name, _value_type(f.type)) for f in table.schema]))


def write_part(table: pa.Table, location: DataLocation, path: str) -> None:
    """Write one release part deterministically (same table -> same bytes).

    Dictionary-encoded text goes to Parquet as dictionary pages directly (no per-row strings)
    without Arrow's schema, so readers see plain text columns (ADR 0006); its min/max statistics
    are left out (computing them decodes every row). Other columns keep their statistics.
    """
    encoded = [f.name for f in table.schema if pa.types.is_dictionary(f.type)]
    direct = location.format == "parquet" and all(
        any(is_type(_value_type(t)) for is_type in _PARQUET_NATIVE) for t in table.schema.types
    )
    if encoded and not direct:
        table = decode_dictionaries(table)
    local = local_path(path)
    if local is not None:  # pyarrow's own file: no Python call per written page
        with pa.OSFile(local, "wb") as fh:
            _write(table, location, fh, encoded and direct)
        return
    with fsspec.open(path, "wb") as fh:
        _write(table, location, fh, encoded and direct)


def _write(table: pa.Table, location: DataLocation, fh, direct: bool) -> None:
    if location.format == "parquet" and direct:
        stats = [f.name for f in table.schema if not pa.types.is_dictionary(f.type)]
        pq.write_table(
            table, fh, compression="zstd", store_schema=False, write_statistics=stats or False
        )
    elif location.format == "parquet":
        pq.write_table(table, fh, compression="zstd")
    else:
        pacsv.write_csv(table, fh, pacsv.WriteOptions(delimiter=location.delimiter))


def read_release_part(
    location: DataLocation, path: str, columns: Sequence[str] | None = None
) -> pa.Table:
    """Read back a written part with every column as text (for verification); Parquet text
    columns come dictionary-encoded, as they are stored, which avoids hashing every row."""
    if location.format == "parquet":
        cols = list(columns) if columns else None
        local = local_path(path)
        if local is not None:  # natively: no dataset discovery, no Python file wrapper
            with pq.ParquetFile(local, read_dictionary=cols) as pf:
                return pf.read(columns=cols)
        with fsspec.open(path, "rb") as fh:
            return pq.read_table(fh, columns=cols, read_dictionary=cols)
    with fsspec.open(path, "rb") as fh:
        names = pacsv.open_csv(
            fh, parse_options=pacsv.ParseOptions(delimiter=location.delimiter)
        ).schema.names
    with fsspec.open(path, "rb") as fh:
        return pacsv.read_csv(
            fh,
            parse_options=pacsv.ParseOptions(delimiter=location.delimiter),
            convert_options=pacsv.ConvertOptions(
                column_types={c: pa.string() for c in names},
                include_columns=list(columns) if columns else None,
                strings_can_be_null=False,
            ),
        )

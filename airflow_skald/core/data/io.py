"""Reading input chunks (Parquet or CSV, local paths or fsspec URLs).

A chunk is a consecutive slice of at most ``chunk_rows`` rows of one input file. The chunk list
is computed once from file metadata, so every pass (and every Airflow task) sees the same chunks.
Only the columns a pass needs are read. Where files live is `files`; chunks in threads,
`chunk_threads`; release parts written and read back, `part_files`; CSV errors told without
the data, `csv_errors`. The names other modules import from here are re-exported in `__all__`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from functools import lru_cache

import fsspec
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from airflow_skald.core.data.chunk_threads import chunk_threads, map_ahead
from airflow_skald.core.data.csv_errors import safe_csv_error
from airflow_skald.core.data.files import file_version, filesystem, full_path, local_path
from airflow_skald.core.data.location import DataLocation
from airflow_skald.core.data.part_files import decode_dictionaries, read_release_part, write_part
from airflow_skald.core.data.subset_keys import KeyedSubset, joined, with_flag
from airflow_skald.core.errors import DataError

__all__ = [
    "GLOB_CHARS",
    "ChunkRef",
    "chunk_threads",
    "column_names",
    "count_rows",
    "cut_chunks",
    "decode_dictionaries",
    "first_chunks",
    "file_version",
    "filesystem",
    "list_chunks",
    "list_input_files",
    "local_path",
    "map_ahead",
    "read_chunk",
    "read_release_part",
    "schema_of",
    "subset_keys",
    "write_part",
]

GLOB_CHARS = "*?["  # a path holding one of these is a glob pattern
_EXTENSIONS = {"parquet": (".parquet", ".parq", ".pq"), "csv": (".csv", ".txt", ".tsv")}


@dataclass(frozen=True)
class ChunkRef:
    """One chunk: rows [row_start, row_start + n_rows) of `file` (full URL or path)."""

    chunk_id: int
    file: str
    row_start: int
    n_rows: int
    version: str = ""  # the file's `file_version` when the chunks were listed
    # a database input's staged chunk: what its rows are ("input table T read in "k" order")
    # and its first row's place there, so that messages name the input, not a staged file
    # that is gone once the run ends
    origin: str = ""
    origin_row: int = 0

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> ChunkRef:
        return cls(**d)

    def span(self) -> str:
        """The chunk's rows, for messages that count within it: "rows 1-1000 of file F"."""
        first = self._first_row + 1
        return f"rows {first}-{first + self.n_rows - 1} of {self.where()}"

    def where(self, row_in_chunk: int | None = None) -> str:
        """Human location for error messages: the file (a database input: the table or query
        and its read order) and 1-based data row number."""
        name = self.origin or f"file {self.file}"
        if row_in_chunk is None:
            return name
        return f"row {self._first_row + row_in_chunk + 1} of {name}"

    @property
    def _first_row(self) -> int:
        return self.origin_row if self.origin else self.row_start


def first_chunks(chunks: Sequence[ChunkRef]) -> list[ChunkRef]:
    """Each file's first chunk, in file order: the file's checks name it by its `where`."""
    firsts: dict[str, ChunkRef] = {}
    for chunk in chunks:
        firsts.setdefault(chunk.file, chunk)
    return list(firsts.values())


def list_input_files(location: DataLocation) -> list[str]:
    """The input files in a stable order: one file, every data file under a folder, or a glob."""
    fs, root = filesystem(location.path)
    exts = _EXTENSIONS[location.format]
    if any(ch in root for ch in GLOB_CHARS):
        files = sorted(f for f in fs.glob(root) if fs.isfile(f))
    elif fs.isdir(root):
        files = sorted(
            f
            for f in fs.find(root)
            if f.lower().endswith(exts) and not any(p.startswith((".", "_")) for p in _rel(f, root))
        )
    elif fs.exists(root):
        files = [root]
    else:
        raise DataError(f"input path does not exist: {location.path}")
    if not files:
        raise DataError(f"no {location.format} files found at {location.path}")
    return [full_path(fs, f) for f in files]


def _rel(path: str, root: str) -> list[str]:
    return path[len(root) :].strip("/").split("/")


def list_chunks(location: DataLocation, chunk_rows: int) -> list[ChunkRef]:
    """Cut every input file into consecutive slices of at most `chunk_rows` rows."""
    files = list_input_files(location)
    whole = [
        ChunkRef(i, f, 0, count_rows(location, f), file_version(f)) for i, f in enumerate(files)
    ]
    chunks = cut_chunks(whole, chunk_rows)
    if not chunks:
        raise DataError(f"the input at {location.path} has no records")
    return chunks


def cut_chunks(chunks: Sequence[ChunkRef], chunk_rows: int) -> list[ChunkRef]:
    """`chunks` cut into consecutive slices of at most `chunk_rows` rows, numbered in order
    (an empty one left out): the chunk path's chunks of the same rows. A list whose chunks
    hold at most `chunk_rows` rows each is returned as it is (the chunk path's own, a staged
    extract's); an SQL engine's chunk of a whole file is cut as `list_chunks` cuts it."""
    if all(0 < c.n_rows <= chunk_rows for c in chunks):
        return list(chunks)
    out: list[ChunkRef] = []
    for c in chunks:
        end = c.row_start + c.n_rows
        for start in range(c.row_start, end, chunk_rows):
            at = c.origin_row + start - c.row_start
            out.append(
                replace(
                    c,
                    chunk_id=len(out),
                    row_start=start,
                    origin_row=at,
                    n_rows=min(chunk_rows, end - start),
                )
            )
    return out


def count_rows(location: DataLocation, file: str) -> int:
    if location.format == "parquet":
        return _parquet_file(file).metadata.num_rows
    first = column_names(location, file)[:1]
    return sum(b.num_rows for b in _csv_batches(location, file, first, {}))


def column_names(location: DataLocation, file: str) -> list[str]:
    """Column names in file order, from metadata (Parquet) or the header row (CSV)."""
    if location.format == "parquet":
        return list(_parquet_file(file).schema_arrow.names)
    try:
        with fsspec.open(file, "rb") as fh:
            reader = pacsv.open_csv(
                fh,
                parse_options=pacsv.ParseOptions(delimiter=location.delimiter),
                convert_options=pacsv.ConvertOptions(column_types={}, include_columns=[]),
            )
            return list(reader.schema.names)
    except pa.ArrowInvalid as exc:
        raise DataError(
            f"cannot read CSV file {file}: {safe_csv_error(exc, location, file)}"
        ) from None


def schema_of(location: DataLocation, file: str) -> pa.Schema | None:
    """Arrow schema from Parquet metadata; None for CSV (types come from the config)."""
    if location.format == "parquet":
        return _parquet_file(file).schema_arrow
    return None


def _source(file: str):
    """What pyarrow opens: a local path natively (reads without the GIL, no Python file
    wrapper per read call), anything else through fsspec."""
    local = local_path(file)
    return local if local is not None else fsspec.open(file, "rb").open()


def _parquet_file(
    file: str, read_dictionary: list[str] | None = None, metadata: pq.FileMetaData | None = None
) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(_source(file), read_dictionary=read_dictionary, metadata=metadata)
    except (pa.ArrowInvalid, OSError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise DataError(f"input file disappeared: {file}") from None
        raise DataError(f"cannot read Parquet file {file}: not a valid Parquet file") from None


def read_chunk(
    location: DataLocation,
    chunk: ChunkRef,
    columns: Sequence[str],
    csv_types: dict[str, pa.DataType] | None = None,
    text_as_dictionary: bool = False,
    subset: KeyedSubset | None = None,
) -> pa.Table:
    """Read `columns` of one chunk. `csv_types` fixes CSV column types (others: string); its
    dictionary-typed columns are also read dictionary-encoded from Parquet, and so is every
    text column with `text_as_dictionary` (phase 3 passes them through to Parquet as they are
    stored, never building one Python-level string per row). `subset`: a research subset
    given by keys, whose flag column (`subset_keys.FLAG`) `columns` may ask for."""
    return with_flag(
        lambda names: _read_chunk(location, chunk, names, csv_types, text_as_dictionary),
        columns,
        subset,
        subset_keys,
    )


@lru_cache(maxsize=2)
def subset_keys(subset: KeyedSubset) -> pa.Array:
    """The distinct keys of a research subset's dataset (its key columns only), once per
    process."""
    keys = []
    for chunk in list_chunks(subset.location, 1 << 22):
        table = _read_chunk(subset.location, chunk, list(subset.key), None, False)
        keys.append(joined(table, subset.key, f"research_subset {chunk.file}"))
    if not keys:
        raise DataError(f"research_subset {subset.location.path} holds no records")
    return pc.unique(pa.concat_arrays(keys).drop_null())


def _read_chunk(
    location: DataLocation,
    chunk: ChunkRef,
    columns: Sequence[str],
    csv_types: dict[str, pa.DataType] | None,
    text_as_dictionary: bool,
) -> pa.Table:
    columns = list(columns)
    if location.format == "parquet":
        dictionary = {c for c, t in (csv_types or {}).items() if pa.types.is_dictionary(t)}
        metadata = None
        if text_as_dictionary:  # the text columns come from the footer, parsed once
            first = _parquet_file(chunk.file)
            metadata = first.metadata
            dictionary |= {f.name for f in first.schema_arrow if pa.types.is_string(f.type)}
            first.close()
        wanted = [c for c in columns if c in dictionary] or None
        pf = _parquet_file(chunk.file, wanted, metadata)
        groups, offset, seen = [], None, 0
        for g in range(pf.metadata.num_row_groups):
            n = pf.metadata.row_group(g).num_rows
            if seen + n > chunk.row_start and seen < chunk.row_start + chunk.n_rows:
                groups.append(g)
                offset = seen if offset is None else offset
            seen += n
        try:
            table = pf.read_row_groups(groups, columns=columns) if groups else None
        except (pa.ArrowInvalid, OSError):
            raise DataError(f"cannot read {chunk.where()}: corrupt Parquet data") from None
        finally:
            pf.close()
        if table is None:
            return pa.table({c: pa.array([], pa.string()) for c in columns})
        table = table.slice(chunk.row_start - offset, chunk.n_rows)
    else:
        batches, seen = [], 0
        for batch in _csv_batches(location, chunk.file, columns, csv_types or {}):
            lo, hi = (
                max(chunk.row_start - seen, 0),
                min(chunk.row_start + chunk.n_rows - seen, batch.num_rows),
            )
            if hi > lo:
                batches.append(batch.slice(lo, hi - lo))
            seen += batch.num_rows
            if seen >= chunk.row_start + chunk.n_rows:
                break
        table = pa.Table.from_batches(batches) if batches else None
        if table is None:
            raise DataError(f"{chunk.where()} has fewer rows than when it was first read")
        table = table.select(columns)
    if table.num_rows != chunk.n_rows:
        raise DataError(f"{chunk.where()} changed since it was first read (row count differs)")
    if any(col.num_chunks > 1 for col in table.columns):
        table = table.combine_chunks()
    return table


def _csv_batches(
    location: DataLocation, file: str, columns: Sequence[str], types: dict[str, pa.DataType]
) -> Iterator[pa.RecordBatch]:
    column_types = {c: types.get(c, pa.string()) for c in columns}
    try:
        with fsspec.open(file, "rb") as fh:
            reader = pacsv.open_csv(
                fh,
                read_options=pacsv.ReadOptions(block_size=1 << 24),
                parse_options=pacsv.ParseOptions(delimiter=location.delimiter),
                convert_options=pacsv.ConvertOptions(
                    column_types=column_types,
                    include_columns=list(columns),
                    strings_can_be_null=False,
                    quoted_strings_can_be_null=False,
                ),
            )
            yield from reader
    except pa.ArrowInvalid as exc:
        raise DataError(
            f"cannot read CSV file {file}: {safe_csv_error(exc, location, file)}"
        ) from None

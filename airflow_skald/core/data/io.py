"""Reading input chunks and writing release parts (Parquet or CSV, local paths or fsspec URLs).

A chunk is a consecutive slice of at most ``chunk_rows`` rows of one input file. The chunk list
is computed once from file metadata, so every pass (and every Airflow task) sees the same chunks.
Only the columns a pass needs are read.
"""

from __future__ import annotations

import os
import re
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from functools import lru_cache
from itertools import islice
from typing import TypeVar

import fsspec
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from airflow_skald.core.data.location import DataLocation
from airflow_skald.core.data.subset_keys import KeyedSubset, joined, with_flag
from airflow_skald.core.errors import ConfigError, DataError

A = TypeVar("A")  # a chunk, or a release part
T = TypeVar("T")

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

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> ChunkRef:
        return cls(**d)

    def span(self) -> str:
        """The chunk's rows, for messages that count within it: "rows 1-1000 of file F"."""
        return f"rows {self.row_start + 1}-{self.row_start + self.n_rows} of file {self.file}"

    def where(self, row_in_chunk: int | None = None) -> str:
        """Human location for error messages: file and 1-based data row number."""
        if row_in_chunk is None:
            return f"file {self.file}"
        return f"row {self.row_start + row_in_chunk + 1} of file {self.file}"


def filesystem(path: str) -> tuple[fsspec.AbstractFileSystem, str]:
    """fsspec filesystem and in-filesystem path for a local path or URL."""
    try:
        fs, root = fsspec.core.url_to_fs(path)
    except (ValueError, ImportError) as exc:  # unknown protocol, or its package missing
        reason = "its protocol is not known" if isinstance(exc, ValueError) else str(exc)
        raise ConfigError(f"cannot use the path {path}: {reason}") from None
    return fs, root


def _full(fs: fsspec.AbstractFileSystem, path: str) -> str:
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    return path if protocol in ("file", "local") else f"{protocol}://{path}"


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
    return [_full(fs, f) for f in files]


def _rel(path: str, root: str) -> list[str]:
    return path[len(root) :].strip("/").split("/")


def list_chunks(location: DataLocation, chunk_rows: int) -> list[ChunkRef]:
    """Cut every input file into consecutive slices of at most `chunk_rows` rows."""
    chunks: list[ChunkRef] = []
    for file in list_input_files(location):
        n = count_rows(location, file)
        version = file_version(file)
        for start in range(0, n, chunk_rows):
            size = min(chunk_rows, n - start)
            chunks.append(ChunkRef(len(chunks), file, start, size, version))
    if not chunks:
        raise DataError(f"the input at {location.path} has no records")
    return chunks


# What a store keeps about a file that changes when the file is rewritten (local files and
# most fsspec stores: mtime; S3: LastModified, ETag, VersionId; GCS: updated, generation, md5)
_VERSION_KEYS = (
    "mtime",
    "LastModified",
    "last_modified",
    "updated",
    "ETag",
    "etag",
    "VersionId",
    "version_id",
    "generation",
    "md5Hash",
    "crc32c",
)


def file_version(file: str) -> str:
    """This version of `file`, without reading it: its size plus the modification time and
    entity tag its store keeps (a rewritten file gets new ones; an unchanged one, read again
    by a retry or another task, the same)."""
    fs, path = filesystem(file)
    try:
        info = fs.info(path)
    except FileNotFoundError:
        raise DataError(f"input file disappeared: {file}") from None
    parts = [f"size={info.get('size')}"]
    parts += [f"{key}={info[key]}" for key in _VERSION_KEYS if info.get(key) is not None]
    return ";".join(parts)


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
            f"cannot read CSV file {file}: {_safe_csv_error(exc, location, file)}"
        ) from None


def schema_of(location: DataLocation, file: str) -> pa.Schema | None:
    """Arrow schema from Parquet metadata; None for CSV (types come from the config)."""
    if location.format == "parquet":
        return _parquet_file(file).schema_arrow
    return None


def local_path(path: str) -> str | None:
    """The local filesystem path of `path` (a plain path or a file:// URL), else None."""
    if "://" not in path:
        return path
    return path[len("file://") :] if path.startswith("file://") else None


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
            raise DataError(f"cannot read Parquet file {chunk.file}: corrupt data") from None
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


# Chunks processed at once by `map_ahead`, each holding one chunk in memory (ADR 0007); None:
# the environment's SKALD_CHUNK_THREADS, default 2.
CHUNK_THREADS: int | None = None


def chunk_threads() -> int:
    if CHUNK_THREADS is not None:
        return CHUNK_THREADS
    raw = os.environ.get("SKALD_CHUNK_THREADS", "2").strip()
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"SKALD_CHUNK_THREADS must be a whole number >= 1, not '{raw}'")
    return int(raw)


# Rows between two hand-backs of pyarrow's freed memory in `map_ahead` (release parts, which
# carry no row count, count as this many each).
RELEASE_ROWS = 1_000_000


def map_ahead(
    fn: Callable[[A], T], chunks: Sequence[A], threads: int | None = None
) -> Iterator[tuple[A, T]]:
    """(chunk, fn(chunk)) in chunk order, `fn` running on up to `threads` chunks at once in
    background threads. pyarrow reads and decodes, and numpy computes, without holding the GIL,
    so a pass over chunks uses every core; at most `threads` chunks are in flight, so memory
    stays bounded by a few chunks. `fn`'s errors are raised here, in the caller's thread."""
    threads = threads or chunk_threads()
    if threads <= 1:  # inline: one chunk at a time, on the caller's thread
        for chunk in chunks:
            yield chunk, fn(chunk)
        return
    todo = iter(chunks)
    since_release = 0  # rows done since pyarrow's pool last handed memory back
    with ThreadPoolExecutor(threads, thread_name_prefix="skald-chunk") as pool:
        pending = deque((c, pool.submit(fn, c)) for c in islice(todo, threads))
        while pending:
            chunk, future = pending.popleft()
            result = future.result()
            nxt = next(todo, None)
            if nxt is not None:
                pending.append((nxt, pool.submit(fn, nxt)))
            yield chunk, result
            del result
            # Keep pyarrow's pool flat over chunks, handing memory back once per RELEASE_ROWS
            # rows (every chunk of that size; small chunks reuse the pool's pages in between,
            # which saves the kernel refaulting them: ~4 ms per 250k-row chunk).
            since_release += getattr(chunk, "n_rows", RELEASE_ROWS)
            if since_release >= RELEASE_ROWS:
                pa.default_memory_pool().release_unused()
                since_release = 0


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
            f"cannot read CSV file {file}: {_safe_csv_error(exc, location, file)}"
        ) from None


def _safe_csv_error(
    exc: Exception, location: DataLocation | None = None, file: str | None = None
) -> str:
    """pyarrow's CSV errors quote the offending row or value: keep only where, never what."""
    msg = str(exc)
    m = re.search(r"Expected (\d+) columns, got (\d+)", msg)
    found = re.search(r"[Rr]ow #(\d+)", msg)
    row = found.group(1) if found else None
    col = re.search(r"In CSV column #(\d+)", msg)
    conversion = bool(col and "conversion error" in msg)
    utf8 = conversion and "UTF8" in msg
    name = None
    if row is None and (m or conversion) and location is not None and file is not None:
        index = int(col.group(1)) if conversion else None
        bad = (lambda t: "\ufffd" in t) if utf8 else (lambda t: not _is_number(t))
        n, name = _locate_csv_problem(location, file, index, bad)
        row = None if n is None else str(n)
    where = f" at row {row}" if row else ""
    if m:
        ragged = f"ragged row {row}" if row else "ragged row"
        return f"{ragged}: expected {m.group(1)} columns, got {m.group(2)}"
    if conversion:
        column = f"column '{name}'" if name else f"column #{col.group(1)}"
        if utf8:
            return f"{column} holds text that is not valid UTF-8{where}"
        return f"{column} holds text that is not a number{where}"
    if "Empty CSV file" in msg or "empty" in msg.lower():
        return "the file is empty"
    return "malformed CSV" + where


_ARROW_NULLS = {"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND"}
_ARROW_NULLS |= {"1.#QNAN", "N/A", "NA", "NULL", "NaN", "n/a", "nan", "null"}


def _locate_csv_problem(
    location: DataLocation, file: str, col_index: int | None, bad=None
) -> tuple[int | None, str | None]:
    """Error path only: re-read the file slowly to find the 1-based data row that is ragged
    (col_index None) or whose column col_index holds a `bad` text, and that column's name."""
    import csv

    name = None
    try:
        with fsspec.open(file, "rt", encoding="utf-8", errors="replace", newline="") as fh:
            reader = csv.reader(fh, delimiter=location.delimiter)
            header = next(reader, None) or []
            if col_index is not None and col_index < len(header):
                name = header[col_index]
            row = 0
            for record in reader:
                if not record:
                    continue
                row += 1
                if col_index is None:
                    if len(record) != len(header):
                        return row, name
                elif col_index < len(record) and bad(record[col_index]):
                    return row, name
    except (OSError, csv.Error, UnicodeError):
        pass
    return None, name


def _is_number(text: str) -> bool:
    if text.strip() in _ARROW_NULLS:
        return True
    try:
        float(text)
    except ValueError:
        return False
    return True


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

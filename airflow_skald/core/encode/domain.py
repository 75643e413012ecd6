"""Phase 1 statistics: what one pass over the chunks learns about each QID's domain.

Per chunk we collect the row count, the schema, each numerical QID's min/max, the categorical
values seen, and the distinct values of encoded QIDs (the key-value map used for decoding).
Partial statistics merge exactly, so chunks may be scanned in any order or in parallel.
These statistics hold personal data (encoded values): they go to artifact storage, never XCom.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_skald.core.config.run_config import QidSpec, SkaldConfig
from airflow_skald.core.data.builders.dates import key_seconds
from airflow_skald.core.data.builders.dates import level0_labels as date_level0
from airflow_skald.core.data.builders.masked import code_text
from airflow_skald.core.data.io import ChunkRef, column_names, map_ahead, read_chunk, schema_of
from airflow_skald.core.encode.sensitive_domain import SensitiveStats
from airflow_skald.core.errors import DataError


@dataclass
class QidStats:
    """What phase 1 learnt about one QID."""

    name: str
    values: list | None = (
        None  # categorical: sorted observed labels; encoded: sorted distinct values
    )
    min: float | int | None = None
    max: float | int | None = None
    integral: bool = True  # every value seen is a whole number
    numeric: bool = False  # masked codes: every value is a number (SPEC §3a: needs `pad`)
    finer: bool = False  # dates: some value was finer than the first level and was cut
    zoned: bool = False  # dates: some value had a time zone and was normalised to UTC

    def merge(self, other: QidStats) -> QidStats:
        values = None
        if self.values is not None:
            values = _union_sorted(self.values, other.values)
        return QidStats(
            name=self.name,
            values=values,
            min=_opt(min, self.min, other.min),
            max=_opt(max, self.max, other.max),
            integral=self.integral and other.integral,
            numeric=self.numeric and other.numeric,
            finer=self.finer or other.finer,
            zoned=self.zoned or other.zoned,
        )


def _opt(fn, a, b):
    if a is None:
        return b
    if b is None:
        return a
    return fn(a, b)


def _union_sorted(a: list, b: list) -> list:
    return np.union1d(np.asarray(a), np.asarray(b)).tolist()


@dataclass
class DomainStats:
    """Merged phase-1 statistics over some chunks (exactly additive)."""

    n_rows: int
    n_chunks: int
    columns: list[str]
    bytes_per_record: int
    qids: dict[str, QidStats]
    files_checked: list[str] = field(default_factory=list)
    sensitive: dict[str, SensitiveStats] = field(default_factory=dict)  # criteria's attributes

    @staticmethod
    def merge(parts: Sequence[DomainStats]) -> DomainStats:
        """Combine partial statistics; schema drift between parts is an error."""
        if not parts:
            raise DataError("no chunks were scanned")
        first = parts[0]
        out = DomainStats(
            first.n_rows,
            first.n_chunks,
            first.columns,
            first.bytes_per_record,
            dict(first.qids),
            list(first.files_checked),
            dict(first.sensitive),
        )
        for p in parts[1:]:
            if p.columns != out.columns:
                raise DataError(_drift_message(out.columns, p.columns, p.files_checked[:1]))
            out.n_rows += p.n_rows
            out.n_chunks += p.n_chunks
            out.qids = {n: out.qids[n].merge(p.qids[n]) for n in out.qids}
            out.sensitive = {n: out.sensitive[n].merge(p.sensitive[n]) for n in out.sensitive}
            out.files_checked += [f for f in p.files_checked if f not in out.files_checked]
        return out

    def to_dict(self) -> dict:
        out = {
            "n_rows": self.n_rows,
            "n_chunks": self.n_chunks,
            "columns": self.columns,
            "bytes_per_record": self.bytes_per_record,
            "files_checked": self.files_checked,
            "qids": {n: vars(q) for n, q in self.qids.items()},
        }
        if self.sensitive:
            out["sensitive"] = {n: s.to_dict() for n, s in self.sensitive.items()}
        return out

    @classmethod
    def from_dict(cls, d: dict) -> DomainStats:
        return cls(
            n_rows=d["n_rows"],
            n_chunks=d["n_chunks"],
            columns=list(d["columns"]),
            bytes_per_record=d["bytes_per_record"],
            files_checked=list(d.get("files_checked", [])),
            qids={n: QidStats(**q) for n, q in d["qids"].items()},
            sensitive={
                n: SensitiveStats.from_dict(n, v) for n, v in d.get("sensitive", {}).items()
            },
        )

    def to_bytes(self) -> bytes:
        return json.dumps(self.to_dict(), sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> DomainStats:
        return cls.from_dict(json.loads(data))


def _drift_message(expected: list[str], got: list[str], files: list[str]) -> str:
    where = f" in file {files[0]}" if files else ""
    extra = [c for c in got if c not in expected]
    missing = [c for c in expected if c not in got]
    if extra:
        return f"schema drift{where}: unexpected column '{extra[0]}' not in the first file"
    if missing:
        return f"schema drift{where}: column '{missing[0]}' is missing"
    return f"schema drift{where}: columns are in a different order than in the first file"


DICTIONARY = pa.dictionary(pa.int32(), pa.string())


def csv_types(config: SkaldConfig) -> dict[str, pa.DataType]:
    """Read types: numbers for numerical QIDs, dictionary-encoded text for categorical QIDs
    (decoding a few distinct labels once is far cheaper than a string per row); CSV columns
    not named here are read as text."""
    return {
        q.name: pa.float64() if q.type == "numerical" else DICTIONARY
        for q in config.quasi_identifiers
    }


def counting_types(config: SkaldConfig) -> dict[str, pa.DataType]:
    """`csv_types` plus the criteria's sensitive attributes dictionary-encoded (Parquet text;
    numbers are read as they are stored; CSV text): phases 1 and 2 count and code their
    values by dictionary index, not one string per row."""
    return {**{a: DICTIONARY for a in config.counted_attributes}, **csv_types(config)}


def _is_fixed_width(typ: pa.DataType) -> bool:
    """pyarrow has no public is_fixed_width (in 26.x): bit_width raises for variable widths."""
    try:
        return typ.bit_width > 0
    except ValueError:
        return False


def _estimate_bytes_per_record(
    schema: pa.Schema | None, config: SkaldConfig, names: list[str]
) -> int:
    """Record size d of paper eq. 3, from the schema alone so it does not depend on chunking."""
    numeric = {q.name for q in config.quasi_identifiers if q.type == "numerical"}
    total = 0
    for name in names:
        typ = schema.field(name).type if schema is not None else None
        if typ is not None and _is_fixed_width(typ) and not pa.types.is_dictionary(typ):
            total += max(1, typ.bit_width // 8)
        elif typ is None and name in numeric:
            total += 8
        else:
            total += 32  # strings and other variable-width values: a typical short text
    return max(total, 1)


def one_line(value: str, limit: int = 40) -> str:
    """A value as a message may show it (SPEC §3 names the missing value): control characters
    escaped, so the message stays one line, and cut to `limit` characters."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def check_columns(config: SkaldConfig, names: list[str], file: str) -> None:
    """Every configured column must exist in the file."""
    needed = [
        *config.qid_names,
        *(q.name for q in config.microaggregated),
        *config.direct_identifiers,
        *config.pseudonymised,
        *config.sensitive_attributes,
        *(config.research_subset.input_columns if config.research_subset else ()),
    ]
    for name in needed:
        if name not in names:
            raise DataError(f"column '{name}' is missing from file {file}")


def scan_domain(config: SkaldConfig, chunks: Sequence[ChunkRef], progress=None) -> DomainStats:
    """Phase 1 over `chunks`: schema checks and per-QID domain statistics."""
    if not chunks:
        raise DataError("no chunks to scan")
    columns: list[str] | None = None
    bpr = 0
    qstats: dict[str, QidStats] | None = None
    files: list[str] = []
    n_rows = 0
    seen_types: dict[str, tuple[pa.DataType, str]] = {}
    for file in dict.fromkeys(c.file for c in chunks):  # every file's schema before any data
        names = column_names(config.input, file)
        check_columns(config, names, file)
        schema = schema_of(config.input, file)  # once per file, for every check below
        if columns is None:
            columns = names
            bpr = _estimate_bytes_per_record(schema, config, names)
        elif names != columns:
            raise DataError(_drift_message(columns, names, [file]))
        check_types(config, file, schema)
        _check_passed_through(config, file, schema, seen_types)
        files.append(file)

    attributes = config.counted_attributes
    numbers = {m.attribute for m in config.privacy if m.numeric_attribute}
    numbers |= set(config.microaggregations)
    sstats: dict[str, SensitiveStats] = {}
    types = counting_types(config)

    def scan(chunk: ChunkRef) -> tuple[dict[str, QidStats], dict[str, SensitiveStats], int]:
        columns = list(dict.fromkeys([*config.qid_names, *attributes]))
        table = read_chunk(config.input, chunk, columns, types, subset=config.keyed_subset)
        values = {a: _counted(config, table.column(a), a, a in numbers) for a in attributes}
        return scan_table(config, table, chunk), values, table.num_rows

    for i, (_, (part, values, rows)) in enumerate(map_ahead(scan, chunks)):
        qstats = part if qstats is None else {n: qstats[n].merge(part[n]) for n in qstats}
        sstats = values if not sstats else {a: sstats[a].merge(values[a]) for a in sstats}
        n_rows += rows
        if progress:
            progress(i + 1, len(chunks), rows)
    return DomainStats(n_rows, len(chunks), columns or [], bpr, qstats or {}, files, sstats)


def _counted(config: SkaldConfig, column: pa.ChunkedArray, name: str, numbers: bool):
    """An attribute's values and counts in one chunk; a microaggregated QID's must be numbers."""
    if name in config.microaggregations and name not in config.criteria_attributes:
        try:
            return SensitiveStats.of_column(name, column, numbers)
        except DataError:
            function = config.microaggregations[name].function
            raise DataError(
                f"quasi-identifier '{name}' holds text, but its microaggregation ({function}) "
                "needs numbers"
            ) from None
    return SensitiveStats.of_column(name, column, numbers)


def scan_table(config: SkaldConfig, table: pa.Table, chunk: ChunkRef) -> dict[str, QidStats]:
    """Phase 1's statistics of one chunk's QID columns (in memory; merge with QidStats.merge)."""
    return {q.name: _scan_qid(q, table.column(q.name), chunk) for q in config.quasi_identifiers}


def check_types(config: SkaldConfig, file: str, schema: pa.Schema | None) -> None:
    """A numerical QID must be stored as numbers in every file (Parquet; CSV, no `schema`:
    read as such)."""
    if schema is None:
        return
    for q in config.quasi_identifiers:
        typ = _logical(schema.field(q.name).type)
        number = pa.types.is_integer(typ) or pa.types.is_floating(typ)
        text = pa.types.is_string(typ)
        fits = {
            "numerical": number,
            "date": text or pa.types.is_date(typ) or pa.types.is_timestamp(typ),
            "masked": text or number,
        }.get(q.type, True)
        if not fits:
            raise DataError(
                f"column '{q.name}' in file {file} has type {typ}, but it is a {q.type} QID"
            )


def _logical(typ: pa.DataType) -> pa.DataType:
    """A column's type as released: dictionary-encoded and large text and binary as plain."""
    if pa.types.is_dictionary(typ):
        typ = typ.value_type
    return {pa.large_string(): pa.string(), pa.large_binary(): pa.binary()}.get(typ, typ)


def _check_passed_through(
    config: SkaldConfig,
    file: str,
    schema: pa.Schema | None,
    seen: dict[str, tuple[pa.DataType, str]],
) -> None:
    """Columns the release passes through unchanged (neither QIDs nor removed identifiers)
    must have one type in every input file, or the release's parts would disagree."""
    if schema is None:  # CSV: such columns are read as text
        return
    skip = {*config.qid_names, *config.direct_identifiers, *config.pseudonymised}
    for column in schema:
        if column.name in skip:
            continue
        typ = _logical(column.type)
        first = seen.setdefault(column.name, (typ, file))
        if first[0] != typ:
            raise DataError(
                f"column '{column.name}' has type {typ} in file {file} but {first[0]} in file "
                f"{first[1]}: every input file must give a released column the same type"
            )


def first_row(mask: pa.Array | np.ndarray) -> int:
    """Index of the first true entry of a boolean mask."""
    arr = (
        mask.to_numpy(zero_copy_only=False)
        if isinstance(mask, pa.Array | pa.ChunkedArray)
        else mask
    )
    return int(np.flatnonzero(arr)[0])


def dictionary_of(column: pa.ChunkedArray | pa.Array) -> pa.DictionaryArray:
    """A categorical column as a dictionary array of text (ARX hierarchies are text, e.g.
    Adult's ages), whatever type it was stored with."""
    arr = column
    if isinstance(arr, pa.ChunkedArray):
        if pa.types.is_dictionary(arr.type) and arr.num_chunks > 1:
            arr = arr.unify_dictionaries()
        arr = single_array(arr)
    if not pa.types.is_dictionary(arr.type):
        if not pa.types.is_string(arr.type):
            arr = arr.cast(pa.string())
        arr = pc.dictionary_encode(arr)
    if not pa.types.is_string(arr.type.value_type):
        arr = pa.DictionaryArray.from_arrays(arr.indices, arr.dictionary.cast(pa.string()))
    return arr


def used_labels(arr: pa.DictionaryArray) -> tuple[np.ndarray, np.ndarray]:
    """Row indices into the dictionary (nulls must be checked first) and the used entries."""
    idx = arr.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    used = np.bincount(idx, minlength=len(arr.dictionary)) > 0
    return idx, used


def single_array(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """The column as one array (no copy when it already is one chunk)."""
    if not isinstance(column, pa.ChunkedArray):
        return column
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def check_no_nulls(name: str, arr: pa.Array, chunk: ChunkRef) -> None:
    """Nulls (and NaN) in a QID cannot be generalised: a clear error with count and location."""
    floating = pa.types.is_floating(arr.type)
    if not floating and not arr.null_count:  # the validity bitmap's count: no pass over rows
        return
    bad = arr.is_null(nan_is_null=True) if floating else arr.is_null()
    n_bad = pc.sum(bad).as_py() or 0
    if n_bad:
        raise DataError(
            f"column '{name}' has {n_bad} null/NaN value(s) among {chunk.span()}, first at "
            f"{chunk.where(first_row(bad))}"
        )


def entries_of(
    column: pa.ChunkedArray | pa.Array, seconds: int = 1
) -> tuple[pa.Array, np.ndarray, bool]:
    """A column's distinct entries as stored (text, dates, numbers), each row's index into
    them, and whether timestamps were cut to whole `seconds` (`int_keys`): a dictionary
    column's own dictionary, a span of whole-number keys, else one hash pass."""
    chunked = isinstance(column, pa.ChunkedArray) and column.num_chunks > 1
    if chunked and pa.types.is_dictionary(column.type):
        column = column.unify_dictionaries()
    arr = single_array(column)
    if pa.types.is_dictionary(arr.type):
        return arr.dictionary, arr.indices.to_numpy(zero_copy_only=False), False
    keys = int_keys(arr, seconds, cut=True)
    cut = False
    if keys is not None:
        lo, hi = int(keys.keys.min()), int(keys.keys.max())
        if hi - lo < max(SPAN_ENTRIES, 2 * keys.keys.size):
            return keys.make(np.arange(lo, hi + 1, dtype=np.int64)), keys.keys - lo, keys.cut
        arr, cut = keys.make(keys.keys), keys.cut
    arr = pc.dictionary_encode(arr)
    return arr.dictionary, arr.indices.to_numpy(zero_copy_only=False), cut


SPAN_ENTRIES = 1 << 20  # a span of whole-number keys this wide (or twice the rows) is listed
_PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}
DAY_SECONDS = 86_400


@dataclass
class IntKeys:
    """A column as whole-number keys, and the way back to entries of its type."""

    keys: np.ndarray
    make: Callable[[np.ndarray], pa.Array]  # keys -> entries (the first instant of each key)
    cut: bool = False  # some timestamp had a part below the key's granularity


def int_keys(arr: pa.Array, seconds: int = 1, cut: bool = False) -> IntKeys | None:
    """Integers, Parquet dates (days) and timestamps (whole `seconds` since the epoch, in UTC;
    a day for `seconds` of a day or more) as integer keys: a span of keys can then be listed
    and looked up by subtraction, not hashed per row; with `cut`, whether a timestamp had a
    part below a key (phase 1 states it). None for other columns and empty ones."""
    typ = arr.type
    if not len(arr):
        return None
    if pa.types.is_integer(typ):
        return IntKeys(arr.to_numpy(zero_copy_only=False), lambda k: pa.array(k).cast(typ))
    if pa.types.is_date32(typ):
        days = arr.view(pa.int32()).to_numpy(zero_copy_only=False)
        return IntKeys(days, lambda k: pa.array(k.astype(np.int32), pa.int32()).view(typ))
    if pa.types.is_timestamp(typ):
        per = _PER_SECOND[typ.unit] * min(seconds, DAY_SECONDS)
        ints = arr.view(pa.int64()).to_numpy(zero_copy_only=False)
        if per == 1:
            return IntKeys(ints, lambda k: pa.array(k, pa.int64()).view(typ))
        make = lambda k: pa.array(k * per, pa.int64()).view(typ)  # noqa: E731
        if not cut:
            return IntKeys(np.floor_divide(ints, per), make)
        keys, rest = np.divmod(ints, per)
        return IntKeys(keys, make, bool(rest.any()))
    return None


def _scan_rule_qid(q: QidSpec, column: pa.ChunkedArray, chunk: ChunkRef) -> QidStats:
    """Phase 1 of a date or masked QID: the distinct level-0 labels (dates cut to the first
    granularity) or code texts, computed over the chunk's distinct entries, never per row."""
    arr = single_array(column)
    check_no_nulls(q.name, arr, chunk)
    seconds = key_seconds(q.rule) if q.type == "date" else 1
    entries, idx, cut = entries_of(arr, seconds)
    used = np.flatnonzero(np.bincount(idx, minlength=len(entries)) > 0)
    distinct = entries.take(pa.array(used))

    def where(i: int) -> str:
        return chunk.where(int(np.flatnonzero(idx == used[i])[0]))

    if q.type == "date":
        level0 = date_level0(q.name, q.rule, distinct, where)
        values = pc.unique(level0.labels).to_pylist()
        finer = cut or level0.finer
        return QidStats(q.name, values=sorted(values), finer=finer, zoned=level0.zoned)
    codes, numeric = code_text(q.name, distinct)
    return QidStats(q.name, values=sorted(pc.unique(codes).to_pylist()), numeric=numeric)


def _scan_qid(q: QidSpec, column: pa.ChunkedArray, chunk: ChunkRef) -> QidStats:
    if q.type in ("date", "masked"):
        return _scan_rule_qid(q, column, chunk)
    if q.type == "categorical":
        arr = dictionary_of(column)
        check_no_nulls(q.name, arr, chunk)
        idx, used = used_labels(arr)
        listed = q.hierarchy.values.astype(str).tolist() if q.rule is None else q.rule.order
        known = pa.array(list(listed), pa.string())
        in_hierarchy = pc.is_in(arr.dictionary, value_set=known).to_numpy(zero_copy_only=False)
        if (used & ~in_hierarchy).any():
            row = int(np.flatnonzero(~in_hierarchy[idx])[0])
            value = arr.dictionary[int(idx[row])].as_py()
            n_same = int((idx == idx[row]).sum())
            shown = f"value '{one_line(value)}'" if value.strip() else "an empty value"
            raise DataError(
                f"column '{q.name}' has {shown} not in its hierarchy ({n_same} row(s) among "
                f"{chunk.span()}, first at {chunk.where(row)})"
            )
        return QidStats(q.name, values=sorted(arr.dictionary.filter(pa.array(used)).to_pylist()))
    arr = single_array(column)
    if not (pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type)):
        raise DataError(f"column '{q.name}' in {chunk.where()} is not numeric")
    check_no_nulls(q.name, arr, chunk)
    mm = pc.min_max(arr).as_py()
    if pa.types.is_floating(arr.type):
        values = arr.to_numpy()
        if not np.isfinite(values).all():
            raise DataError(f"column '{q.name}' has infinite values in {chunk.where()}")
        integral = bool(np.all(values == np.floor(values)))
    else:
        integral = True
    stats = QidStats(q.name, min=mm["min"], max=mm["max"], integral=integral)
    if q.encode or q.rule is not None:  # ranks, or the level-0 bins an interval rule labels
        stats.values = np.unique(arr.to_numpy()).tolist()
    return stats

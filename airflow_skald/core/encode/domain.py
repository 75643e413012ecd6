"""Phase 1: one pass over the chunks learns each QID's domain (`scan_domain`).

Every file's schema is checked before any data (`input_schema`); then per chunk the row count,
each numerical QID's min/max, the categorical values seen, and the distinct values of encoded
QIDs (the key-value map used for decoding), gathered as `domain_stats.DomainStats`. Partial
statistics merge exactly, so chunks may be scanned in any order or in parallel. They hold
personal data (encoded values): they go to artifact storage, never XCom. The names other
modules import from here are re-exported in `__all__`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_skald.core.config.run_config import QidSpec, SkaldConfig
from airflow_skald.core.data.builders.dates import key_seconds
from airflow_skald.core.data.builders.dates import level0_labels as date_level0
from airflow_skald.core.data.builders.masked import code_text
from airflow_skald.core.data.io import (
    ChunkRef,
    column_names,
    first_chunks,
    map_ahead,
    read_chunk,
    schema_of,
)
from airflow_skald.core.encode.column_values import (
    SPAN_ENTRIES,
    IntKeys,
    check_no_nulls,
    dictionary_of,
    entries_of,
    int_keys,
    single_array,
    used_labels,
)
from airflow_skald.core.encode.domain_stats import DomainStats, QidStats, drift_message
from airflow_skald.core.encode.input_schema import (
    check_columns,
    check_passed_through,
    check_types,
    estimate_bytes_per_record,
)
from airflow_skald.core.encode.sensitive_domain import SensitiveStats, released_rows
from airflow_skald.core.errors import DataError
from airflow_skald.core.transform.research_subset.classes import judged_attributes

__all__ = [
    "DICTIONARY",
    "SPAN_ENTRIES",
    "DomainStats",
    "IntKeys",
    "QidStats",
    "check_files",
    "check_no_nulls",
    "check_types",
    "counting_types",
    "csv_types",
    "dictionary_of",
    "entries_of",
    "int_keys",
    "one_line",
    "scan_domain",
    "scan_table",
    "single_array",
]


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


def one_line(value: str, limit: int = 40) -> str:
    """A value as a message may show it (docs/design.md §3 names the missing value): control characters
    escaped, so the message stays one line, and cut to `limit` characters."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def check_files(
    config: SkaldConfig, chunks: Sequence[ChunkRef]
) -> tuple[list[str], int, list[str]]:
    """Every file's schema, from its metadata, before any data: the columns (in file order),
    the estimated bytes per record, and the files checked."""
    columns: list[str] | None = None
    bpr = 0
    files: list[str] = []
    seen_types: dict[str, tuple[pa.DataType, str]] = {}
    for first in first_chunks(chunks):
        file, where = first.file, first.where()  # "file F", or a database input's table
        names = column_names(config.input, file)
        if columns is not None and names != columns:
            check_columns(config, names, where)
            raise DataError(drift_message(columns, names, [file]))
        schema = schema_of(config.input, file)  # once per file, for every check below
        size = check_schema(config, names, schema, where, seen_types)
        if columns is None:
            columns, bpr = names, size
        files.append(file)
    return columns or [], bpr, files


def check_schema(
    config: SkaldConfig,
    names: list[str],
    schema: pa.Schema,
    where: str,
    seen_types: dict[str, tuple[pa.DataType, str]] | None = None,
) -> int:
    """One input's columns (`names`, in its order) and `schema` checked for the run (the
    columns the config names, their types, the passed-through types across inputs); returns
    its estimated bytes per record. The chunk path checks each file's; an engine the
    relation's (docs/design.md §2b)."""
    check_columns(config, names, where)
    check_types(config, where, schema)
    check_passed_through(config, where, schema, {} if seen_types is None else seen_types)
    return estimate_bytes_per_record(schema, config, names)


def scan_domain(config: SkaldConfig, chunks: Sequence[ChunkRef], progress=None) -> DomainStats:
    """Phase 1 over `chunks`: schema checks and per-QID domain statistics."""
    if not chunks:
        raise DataError("no chunks to scan")
    columns, bpr, files = check_files(config, chunks)
    qstats: dict[str, QidStats] | None = None
    n_rows = 0

    attributes = config.counted_attributes
    numbers = {m.attribute for m in config.privacy if m.numeric_attribute}
    numbers |= set(config.microaggregations)
    sstats: dict[str, SensitiveStats] = {}
    types = counting_types(config)

    def scan(chunk: ChunkRef) -> tuple[dict[str, QidStats], dict[str, SensitiveStats], int]:
        columns = list(dict.fromkeys([*config.qid_names, *attributes]))
        table = read_chunk(config.input, chunk, columns, types, subset=config.keyed_subset)
        values = {a: _counted(config, table.column(a), a, a in numbers) for a in attributes}
        if config.research_subset is not None:  # criteria count the subset's records (§4e)
            values.update(_subset_counted(config, table, numbers))
        return scan_table(config, table, chunk), values, table.num_rows

    for i, (_, (part, values, rows)) in enumerate(map_ahead(scan, chunks)):
        qstats = part if qstats is None else {n: qstats[n].merge(part[n]) for n in qstats}
        sstats = values if not sstats else {a: sstats[a].merge(values[a]) for a in sstats}
        n_rows += rows
        if progress:
            progress(i + 1, len(chunks), rows)
    return DomainStats(n_rows, len(chunks), columns or [], bpr, qstats or {}, files, sstats)


def _subset_counted(
    config: SkaldConfig, table: pa.Table, numbers: set[str]
) -> dict[str, SensitiveStats]:
    """The attributes criteria name, over the population's values but counting the research
    subset's records only (ARX's distributions with a subset, ADR 0045)."""
    flag = config.research_subset.column
    rows = pa.array(released_rows(flag, table.column(flag)))
    out = {}
    for a in judged_attributes(config):
        every = _counted(config, table.column(a), a, a in numbers)
        out[a] = every.with_counts_of(
            _counted(config, table.column(a).filter(rows), a, a in numbers)
        )
    return out


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

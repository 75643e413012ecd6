"""The utility analysis (docs/design.md §5) from what an SQL engine counts (ADR 0077): the same
`UtilityPartial` the chunk path's phase 3 gathers (`utility.collect.Collector`), so the shared
`passes.utility_step` writes the same manifest section.

- Each QID's input counts: one GROUP BY per QID in one scan (`domain.distinct_counts_of`, as
  phase 1 asks for a QID's distinct values and counts, which §2b lets cross), more than
  `DISTINCT_CAP` distinct values an overflow, as the chunk path's.
- The release's counts per QID and per contingency pair: summed in the worker from the
  release's class table (the engine's GROUP BY of the written parts, already fetched for the
  release check; no scan of its own).
- The sample: the records of smallest key, where a record's key is the seeded hash of its row
  number (`utility.sample`): which rows those are depends on the number of records alone, so
  the worker computes them (`sampled_rows`, blocks of row numbers, no data) and sends them as
  a temporary table (part index, row in the part) that the engine joins with the input's
  numbered rows (`Numbered`: a file and its row for DuckDB and Spark, a staged chunk and its
  row for PostgreSQL); the sampled records' columns (`settings.columns`: at most
  `max_records` rows, the classifiers' training data, as the chunk path holds them) are what
  crosses back, in memory.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.data.io import ChunkRef, schema_of
from airflow_skald.core.encode.domain import csv_types
from airflow_skald.core.engine.sql import dialect as D
from airflow_skald.core.engine.sql.domain import SqlInput, distinct_counts_of
from airflow_skald.core.engine.sql.session import SqlSession
from airflow_skald.core.settings.utility import SEED
from airflow_skald.core.utility.collect import UtilityPartial, file_offsets, pair_name
from airflow_skald.core.utility.sample import Sample, key_bound, row_keys
from airflow_skald.core.utility.summary import DISTINCT_CAP, Counts

#: row numbers hashed at a time when picking the sample (8 bytes each, a few copies)
BLOCK = 1 << 22
FILE, ROW = "skald_file", "file_row_number"  # the numbered input's columns (`spark_input`)


def sampled_rows(n_records: int, capacity: int, seed: int, bound: int) -> np.ndarray:
    """The row numbers (sorted) of the `capacity` records of smallest key among `n_records`,
    only keys below `bound` taken, ties by row number: `Sample.offer` over every record."""
    if not capacity or not n_records:
        return np.zeros(0, dtype=np.int64)
    rows_kept, keys_kept = [], []
    for start in range(0, n_records, BLOCK):
        rows = np.arange(start, min(start + BLOCK, n_records), dtype=np.int64)
        keys = row_keys(rows, seed)
        if bound < 1 << 64:
            chosen = keys < np.uint64(bound)
            rows, keys = rows[chosen], keys[chosen]
        rows_kept.append(rows)
        keys_kept.append(keys)
        rows_all, keys_all = np.concatenate(rows_kept), np.concatenate(keys_kept)
        if rows_all.size > capacity:
            best = np.lexsort((rows_all, keys_all))[:capacity]
            rows_all, keys_all = rows_all[best], keys_all[best]
        rows_kept, keys_kept = [rows_all], [keys_all]
    return np.sort(rows_kept[0])


def input_counts(session: SqlSession, source: SqlInput, qids: Sequence[str]) -> dict[str, Counts]:
    """Each QID's input values and their records (nulls are not values), by one scan."""
    out = {}
    for name, table in distinct_counts_of(session, source, qids).items():
        table = table.filter(pc.is_valid(table.column("v")))
        if table.num_rows > DISTINCT_CAP:
            out[name] = Counts(None, np.zeros(0, dtype=np.int64), True)
            continue
        values = table.column("v").combine_chunks()
        out[name] = Counts._sorted(values, table.column("n").to_numpy().astype(np.int64))
    return out


def _summed(classes: pa.Table, names: list[str]) -> pa.Table:
    """The release's records per label tuple of `names`, from its class table (`n`)."""
    return classes.select([*names, "n"]).group_by(names).aggregate([("n", "sum")])


def release_counts(
    classes: pa.Table, qids: Sequence[str], pairs: Sequence[tuple[str, str]]
) -> tuple[dict[str, Counts], dict[str, Counts]]:
    """Each QID's released labels and their records, and each pair's label pairs (keyed as
    `collect.pair_name`), from the release's class table."""
    after = {}
    for q in qids:
        table = _summed(classes, [q])
        table = table.filter(pc.is_valid(table.column(q)))
        values = table.column(q).combine_chunks()
        after[q] = Counts._sorted(values, table.column("n_sum").to_numpy().astype(np.int64))
    paired = {}
    for a, b in pairs:
        table = _summed(classes, [a, b])
        left = table.column(a).cast(pa.string()).to_pylist()
        right = table.column(b).cast(pa.string()).to_pylist()
        keys = pa.array([pair_name(x, y) for x, y in zip(left, right, strict=True)], pa.string())
        paired[pair_name(a, b)] = Counts._sorted(keys, table.column("n_sum").to_numpy())
    return after, paired


@dataclass(frozen=True)
class Numbered:
    """The input as the sample's join reads it: `source` each row with its part's index
    (FILE) and its row in that part (ROW); `starts` each part's first row number over the
    input (the chunk path's numbering, `collect.file_offsets`); `schema` the columns' types
    as the chunk path reads them (None: CSV's, from the config)."""

    source: SqlInput
    starts: np.ndarray
    schema: pa.Schema | None


def numbered_files(config: SkaldConfig, chunks: Sequence[ChunkRef], source: SqlInput) -> Numbered:
    """The numbering of an input of files (DuckDB, Spark): a part is a file, FILE its index
    among the chunks' files, ROW the row in it."""
    files = list(dict.fromkeys(c.file for c in chunks))
    offsets = file_offsets(chunks)
    starts = np.asarray([offsets[f] for f in files], dtype=np.int64)
    return Numbered(source, starts, schema_of(config.input, chunks[0].file))


def _as_read(config: SkaldConfig, schema: pa.Schema | None, table: pa.Table) -> pa.Table:
    """The sampled columns typed as the chunk path reads them (its sample decodes text
    dictionaries): `schema`'s types (Parquet's stored, PostgreSQL's staged), else CSV's
    numbers and text; a driver's extension type (PostgreSQL's numeric) by its storage."""
    types = csv_types(config)
    for i, name in enumerate(table.column_names):
        kind = schema.field(name).type if schema is not None else types.get(name, pa.string())
        if pa.types.is_dictionary(kind):
            kind = kind.value_type
        column = table.column(i)
        if isinstance(column.type, pa.BaseExtensionType):
            column = pa.chunked_array([c.storage for c in column.chunks], column.type.storage_type)
        if column.type != kind:
            table = table.set_column(i, pa.field(name, kind), column.cast(kind))
    return table


def sampled_records(
    session: SqlSession, numbered: Numbered, config: SkaldConfig, rows: np.ndarray
) -> pa.Table:
    """The sampled input records' columns (`settings.columns`), in the order of `rows`
    (global row numbers), joined in the engine from `numbered`."""
    starts = numbered.starts
    index = np.searchsorted(starts, rows, side="right") - 1
    wanted = pa.table({"f": index.astype(np.int32), "r": rows - starts[index]})
    sent = session.send("sampled", wanted)
    columns = config.utility.columns(config.qid_names)
    on = exp.and_(
        exp.EQ(this=D.column(FILE, "i"), expression=D.column("f", "w")),
        exp.EQ(this=D.column(ROW, "i"), expression=D.column("r", "w")),
    )
    select = (
        exp.select(*[D.column(c, "i") for c in columns], D.column("f", "w"), D.column("r", "w"))
        .from_(exp.alias_(D.table(numbered.source.relation), "i"))
        .join(exp.alias_(D.table(sent), "w"), on=on, join_type="inner")
    )
    found = session.query(select)
    got = starts[found.column("f").to_numpy().astype(np.int64)] + found.column("r").to_numpy()
    order = np.argsort(got, kind="stable")
    if not np.array_equal(got[order], rows):
        raise RuntimeError("the engine returned other rows than the sample's")
    return _as_read(config, numbered.schema, found.select(columns).take(pa.array(order)))


def utility_partial(
    session: SqlSession,
    config: SkaldConfig,
    n_records: int,
    whole: SqlInput,
    numbered: Numbered,
    classes: pa.Table,
) -> UtilityPartial:
    """Phase 3's share of the utility analysis from the engine's counts: `whole` the input,
    `numbered` the input with each row's part and row there, `classes` the release's class
    table (its QID columns and `n`)."""
    t0 = time.process_time()
    settings, qids = config.utility, config.qid_names
    bound = key_bound(settings.max_records, n_records)
    rows = sampled_rows(n_records, settings.max_records, SEED, bound)
    sample = Sample.empty(settings.max_records, SEED, bound)
    if rows.size:
        sample = Sample(settings.max_records, SEED, bound, rows, None)
        sample.table = sampled_records(session, numbered, config, rows)
    after, pairs = release_counts(classes, qids, settings.pairs)
    before = input_counts(session, whole, qids)
    return UtilityPartial(sample, before, after, pairs, time.process_time() - t0)

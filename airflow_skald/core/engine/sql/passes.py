"""SKALD's three passes as SQL in an engine (docs/design.md §2b, ADR 0053): what an SQL
engine answers for each pass, over a session and the input's relation in it. Only counts
and labels cross to the worker; the worker sends mapping, label and suppressed-key tables.

Nothing is kept between passes (each may run in a task of its own): phase 2 and 3 ask the
engine again for the distinct values their mapping tables are made from."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa
from sqlglot import exp

from airflow_skald.core.config.run_config import QidSpec, SkaldConfig
from airflow_skald.core.count.root_counts import RootCounts
from airflow_skald.core.data.io import ChunkRef
from airflow_skald.core.encode.dimensions import NumericalDimension
from airflow_skald.core.encode.domain import DomainStats, check_files
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.engine.sql import dialect as D
from airflow_skald.core.engine.sql import subset
from airflow_skald.core.engine.sql.coding import Coding, build_coding
from airflow_skald.core.engine.sql.counts import root_counts
from airflow_skald.core.engine.sql.domain import (
    SqlInput,
    distinct_counts_of,
    phase_1_scan,
    plain_numerical,
    qid_stats,
    sensitive_stats,
)
from airflow_skald.core.engine.sql.recoding import RecodedRelease, send_recoded
from airflow_skald.core.engine.sql.release import send_tables
from airflow_skald.core.engine.sql.session import SqlSession
from airflow_skald.core.release.count.classes import ReleaseClasses
from airflow_skald.core.search.decision import Decision
from airflow_skald.core.transform.microaggregation.aggregates import Aggregates
from airflow_skald.core.transform.pseudonyms import Pseudonyms
from airflow_skald.core.transform.research_subset.classes import flag_first

Opened = Callable[[], contextlib.AbstractContextManager[tuple[SqlSession, SqlInput]]]


def numbers_of(config: SkaldConfig) -> set[str]:
    """Attributes whose values the models read as numbers (as phase 1 on chunks)."""
    numbers = {m.attribute for m in config.privacy if m.numeric_attribute}
    return numbers | set(config.microaggregations)


def domain_stats(
    session: SqlSession, source: SqlInput, config: SkaldConfig, chunks: Sequence[ChunkRef]
) -> DomainStats:
    """Phase 1: the files' schemas checked from their metadata (as the chunk path does), then
    the engine's aggregates."""
    return relation_stats(session, source, config, len(chunks), check_files(config, chunks))


def relation_stats(
    session: SqlSession,
    source: SqlInput,
    config: SkaldConfig,
    n_chunks: int,
    checked: tuple[list[str], int, list[str]],
) -> DomainStats:
    """Phase 1's aggregates over `source`, whose schema was `checked` (its columns, bytes
    per record and what it is read from, as `encode.domain.check_files` returns them): the
    plain numerical QIDs' summaries with the row count, and every other QID's and counted
    attribute's distinct values (GROUPING SETS); two scans, one in Spark (`phase_1_scan`)."""
    columns, bpr, files = checked
    source = subset.flagged(session, source, config)
    qs = config.quasi_identifiers
    counted = list(config.counted_attributes)
    plain = [q if plain_numerical(q) else None for q in qs]
    grouped = [q.name for q in qs if not plain_numerical(q)] + counted
    summary, tables = phase_1_scan(session, source, plain, grouped)
    n = int(summary["n"])
    chunk = ChunkRef(0, source.where, 0, n, origin=source.where)
    qids = {
        q.name: qid_stats(source, q, chunk, summary, i, tables.get(q.name))
        for i, q in enumerate(qs)
    }
    numbers = numbers_of(config)
    sensitive = {a: sensitive_stats(source, a, a in numbers, tables[a]) for a in counted}
    if config.research_subset is not None:  # criteria count the subset's records (§4e)
        sensitive.update(subset.subset_counted(session, source, config, sensitive, numbers))
    return DomainStats(n, n_chunks, columns, bpr, qids, files, sensitive)


def stored_values(q: QidSpec, plan: Plan, typ: pa.DataType) -> pa.Array | None:
    """A QID's distinct values as phase 1 stored them in the plan, typed as the input's
    column, where they are its raw values: a categorical QID's text, an encoded numerical
    QID's numbers (None otherwise: a rule's values are what it made of them)."""
    values = plan.stats.qids[q.name].values
    if values is None or q.rule is not None:
        return None
    text = pa.types.is_string(typ) or pa.types.is_large_string(typ)
    number = pa.types.is_integer(typ) or pa.types.is_floating(typ)
    if (q.type == "categorical" and text) or (q.type == "numerical" and q.encode and number):
        return pa.array(values, type=typ)
    return None


def load_distinct(
    session: SqlSession,
    source: SqlInput,
    plan: Plan,
    config: SkaldConfig,
    attributes: Sequence[str],
) -> None:
    """The distinct values the mapping tables are made of: a mapped QID's from the plan where
    phase 1 stored them raw (`stored_values`), the others' and the counted attributes' by one
    query."""
    specs = {q.name: q for q in config.quasi_identifiers}
    asked = list(attributes)
    for d in plan.dims:
        if isinstance(d, NumericalDimension) and d.encoded_values is None:
            continue  # arithmetic: no mapping table
        stored = stored_values(specs[d.name], plan, source.type_of(d.name))
        if stored is None:
            asked.append(d.name)
        else:
            source.distinct[d.name] = stored
    for name, table in distinct_counts_of(session, source, asked).items():
        source.distinct[name] = table.column("v").combine_chunks()


def coding_of(session: SqlSession, source: SqlInput, plan: Plan, config: SkaldConfig) -> Coding:
    """The codes over `source` (a keyed subset's flag derived: `subset.flagged`), the
    subset's flag first and the criteria's codes null outside it (`subset.subset_codes`)."""
    attributes = flag_first(
        config.research_subset, plan.value_attributes(config.counted_attributes)
    )
    load_distinct(session, source, plan, config, attributes)
    coding = build_coding(session, source, plan, attributes)
    return subset.subset_codes(config, coding, plan.stats.sensitive)


def histogram(session: SqlSession, source: SqlInput, config: SkaldConfig, plan: Plan) -> RootCounts:
    """Phase 2: the root histogram, counted in the engine (and the class sums of the
    microaggregated QIDs counted as sums, `microaggregation.class_sums_at`)."""
    source = subset.flagged(session, source, config)
    coding = coding_of(session, source, plan, config)
    counts = root_counts(session, source, coding, plan)
    if plan.summed:
        from airflow_skald.core.engine.sql.microaggregation import class_sums_at

        node = tuple(counts.node or plan.root)
        counts.sums = class_sums_at(session, source, coding, plan, node)
    return counts


def chunk_first_rows(
    session: SqlSession,
    source: SqlInput,
    config: SkaldConfig,
    plan: Plan,
    node: tuple[int, ...],
    wanted: np.ndarray,
    chunk_id: int,
) -> tuple[np.ndarray, np.ndarray]:
    """For one chunk (a relation whose ROW_COLUMN numbers its rows in input order): the
    positions in `wanted` (sorted class keys at `node`) of the classes it holds, and each
    one's first row, `chunk_id << 32 | row` (`count.first_rows`)."""
    from airflow_skald.core.count.first_rows import ROW_BITS

    table = session.send("wanted", pa.table({"k": np.asarray(wanted, dtype=np.int64)}))
    source = subset.flagged(session, source, config)
    coding = coding_of(session, source, plan, config)
    key = coding.key(plan, node)
    select = coding.relation(source).join(
        exp.alias_(D.table(table), "w"),
        on=exp.EQ(this=key, expression=D.column("k", "w")),
        join_type="inner",
    )
    first = exp.Min(this=D.column(ROW_COLUMN, "i"))
    found = session.query(select.select(key.as_("k"), first.as_("r")).group_by(key))
    keys = found.column("k").to_numpy().astype(np.int64)
    rows = found.column("r").to_numpy().astype(np.int64)
    return np.searchsorted(wanted, keys).astype(np.int64), (np.int64(chunk_id) << ROW_BITS) + rows


ROW_COLUMN = "file_row_number"


ReleaseTables = tuple[
    Coding,
    list[str | None],
    str | None,
    str | None,
    dict[str, str],
    RecodedRelease | None,
    str | None,
]


def release_tables(
    session: SqlSession,
    whole: SqlInput,
    config: SkaldConfig,
    plan: Plan,
    decision: Decision,
    aggregates: Sequence[Aggregates] = (),
) -> ReleaseTables:
    """What phase 3's SELECT joins (`release.released_select`'s arguments after the
    decision), sent once from the `whole` input: the coding, the label tables, the suppressed
    keys' table, the pseudonym key's table, the aggregates' tables (`aggregates`:
    `run.microaggregates()`), local recoding's steps and the research subset's marks
    (`subset.subset_table`)."""
    from airflow_skald.core.engine.sql.microaggregation import send_aggregates
    from airflow_skald.core.engine.sql.pseudonyms import send_key

    whole = subset.flagged(session, whole, config)
    coding = coding_of(session, whole, plan, config)
    recoded = send_recoded(session, whole, plan, decision, coding) if decision.steps else None
    labels, suppressed = (
        send_tables(session, whole, plan, decision, coding) if recoded is None else ([], None)
    )
    aggregated = send_aggregates(session, aggregates)
    pseudonyms = config.transformation(Pseudonyms)
    key = send_key(session, pseudonyms.key.secret()) if pseudonyms and pseudonyms.names else None
    marks = subset.subset_table(session, whole, config, plan.stats.sensitive)
    return coding, labels, suppressed, key, aggregated, recoded, marks


def write_parts(
    session: SqlSession,
    whole: SqlInput,
    parts: Sequence[tuple[str, SqlInput]],
    config: SkaldConfig,
    plan: Plan,
    decision: Decision,
    write: Callable[[exp.Select, str], None],
    aggregates: Sequence[Aggregates] = (),
) -> None:
    """Phase 3: each part's released rows (`parts`: its name and its rows' relation), written
    by the engine (`write(select, name)`); the mapping, label, suppressed-key and aggregate
    tables (`aggregates`: `run.microaggregates()`) are made once, from the `whole` input."""
    from airflow_skald.core.engine.sql.release import released_select

    tables = release_tables(session, whole, config, plan, decision, aggregates)
    for name, source in parts:
        select = released_select(session, source, config, plan, decision, *tables)
        write(select, name)


@contextlib.contextmanager
def atomic_path(path: str) -> Iterator[str]:
    """A path to write, renamed onto `path` once written (a killed write leaves no part)."""
    temporary = path + ".writing"
    yield temporary
    os.replace(temporary, path)


__all__ = [
    "ReleaseClasses",
    "atomic_path",
    "domain_stats",
    "chunk_first_rows",
    "histogram",
    "write_parts",
]

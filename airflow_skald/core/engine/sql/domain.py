"""Phase 1 inside the engine (docs/design.md §2b): what `encode.domain.scan_domain` learns over
the chunks, from aggregates the engine computes. Per QID: its distinct values (a GROUP BY),
or for a plain numerical QID only its minimum, maximum and counts of nulls, non-finite and
non-whole values; per counted attribute its distinct values and their counts. The worker
turns them into the same `QidStats`/`SensitiveStats` with the chunk path's own functions, run
over the distinct values instead of the rows (their answers depend on the set of values, not
on how often each occurs), so the root and the codes are the chunk path's."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from airflow_skald.core.config.run_config import QidSpec
from airflow_skald.core.data.io import ChunkRef
from airflow_skald.core.encode.domain import QidStats, _scan_qid, one_line
from airflow_skald.core.encode.sensitive_domain import (
    SensitiveStats,
    as_stored,
    as_values,
    sorted_values,
)
from airflow_skald.core.engine.sql import dialect as D
from airflow_skald.core.engine.sql.session import SqlSession
from airflow_skald.core.errors import DataError

_DBL_MAX = float(np.finfo(np.float64).max)
_INFINITY = exp.cast(exp.Literal.string("Infinity"), exp.DataType.build("DOUBLE"))


@dataclass
class SqlInput:
    """The input as the engine sees it: a relation (a view or table) and its Arrow schema."""

    relation: str
    schema: pa.Schema
    where: str  # the input as messages name it
    #: per column: its distinct values as the engine returned them (phase 1's answer)
    distinct: dict[str, pa.Array] = field(default_factory=dict)

    def type_of(self, column: str) -> pa.DataType:
        return self.schema.field(column).type


def distinct_counts(session: SqlSession, source: SqlInput, column: str) -> pa.Table:
    """`column`'s distinct values (v, a null among them) and their record counts (n)."""
    return distinct_counts_of(session, source, [column])[column]


#: engines that read only the columns a query names (DuckDB over Parquet): one GROUP BY per
#: column costs them less than one scan of GROUPING SETS (DuckDB: ~4x less CPU, ADR 0081)
COLUMNAR = {"duckdb"}


def distinct_counts_of(
    session: SqlSession,
    source: SqlInput,
    columns: Sequence[str],
    extra: Sequence[exp.Expression] = (),
) -> dict[str, pa.Table]:
    """Each column's distinct values and counts (`distinct_counts`): a columnar engine
    (`COLUMNAR`) by one GROUP BY per column, the others by one scan of GROUPING SETS, one set
    per column, a row's set told by GROUPING() (its value may be a null). `extra`: aliased
    aggregates computed per row as well, columns of the first column's table
    (`phase_1_scan`; one scan: not with a columnar engine)."""
    columns = list(dict.fromkeys(columns))
    if not columns:
        return {}
    table = D.table(source.relation)
    if len(columns) == 1 or session.dialect in COLUMNAR:
        out = {}
        for i, c in enumerate(columns):
            x = D.column(c)
            more = extra if not i else ()
            select = exp.select(x.as_("v"), D.count_star().as_("n"), *more).from_(table)
            out[c] = session.query(select.group_by(x))
        return out
    xs = [D.column(c) for c in columns]
    values = [x.as_(f"v{i}") for i, x in enumerate(xs)]
    flags = [exp.Grouping(expressions=[x]).as_(f"g{i}") for i, x in enumerate(xs)]
    select = exp.select(*values, *flags, D.count_star().as_("n"), *extra).from_(table)
    sets = exp.GroupingSets(expressions=[D.paren(x) for x in xs])
    result = session.query(select.group_by(sets))
    out = {}
    for i, c in enumerate(columns):
        mine = result.filter(pc.equal(result.column(f"g{i}"), 0))
        more = {e.alias: mine.column(e.alias) for e in extra} if not i else {}
        out[c] = pa.table({"v": mine.column(f"v{i}"), "n": mine.column("n"), **more})
    return out


def plain_numerical(q: QidSpec) -> bool:
    """A numerical QID phase 1 summarises by its minimum and maximum (no distinct values)."""
    return q.type == "numerical" and not q.encode and q.rule is None


def _numeric(typ: pa.DataType) -> bool:
    return pa.types.is_integer(typ) or pa.types.is_floating(typ)


def summaries(session: SqlSession, source: SqlInput, qids: Sequence[QidSpec | None]) -> dict:
    """One scan: the row count (n) and each plain numerical QID's (None: another QID) minimum,
    maximum, nulls and, for doubles, its non-finite and non-whole values, named by its index
    (`_numeric_summary` reads them)."""
    parts = _summary_parts(source, qids)
    return session.query(exp.select(*parts).from_(D.table(source.relation))).to_pylist()[0]


#: engines whose phase 1 is one scan (`phase_1_scan`): the summaries computed per distinct
#: value of the first grouped column and combined by the worker (Spark: one job, not two, ADR 0082)
ONE_SCAN = {"spark"}


def phase_1_scan(
    session: SqlSession, source: SqlInput, qids: Sequence[QidSpec | None], columns: Sequence[str]
) -> tuple[dict, dict[str, pa.Table]]:
    """`summaries` and `distinct_counts_of(columns)`: two scans, or in an engine of
    `ONE_SCAN` with a column to group, one: the summaries' aggregates beside the distinct
    counts (GROUPING SETS where several columns), the first set's rows combined (the least
    minimum, the greatest maximum, the counts summed: each record is in one of its rows)."""
    columns = list(dict.fromkeys(columns))
    if session.dialect not in ONE_SCAN or not columns:
        return summaries(session, source, qids), distinct_counts_of(session, source, columns)
    parts = _summary_parts(source, qids)
    tables = distinct_counts_of(session, source, columns, parts[1:])
    first = tables[columns[0]]
    summary = {"n": int(pc.sum(first.column("n")).as_py() or 0)}
    for part in parts[1:]:
        summary[part.alias] = _combined(part.alias, first.column(part.alias))
    return summary, {c: t.select(["v", "n"]) for c, t in tables.items()}


def _combined(name: str, values: pa.ChunkedArray):
    """One summary figure over the whole input from its per-group figures: the least minimum
    and the greatest maximum (NaN the greatest, as the engines order doubles), else a sum."""
    if name.startswith("lo"):
        return pc.min(values).as_py()  # NaN left out unless every group's is NaN
    if name.startswith("hi"):
        nan = pa.types.is_floating(values.type) and pc.any(pc.is_nan(values)).as_py()
        return float("nan") if nan else pc.max(values).as_py()
    return int(pc.sum(values).as_py() or 0)


def _summary_parts(source: SqlInput, qids: Sequence[QidSpec | None]) -> list[exp.Expression]:
    """`summaries`' aggregates, the row count (n) first."""
    parts = [D.count_star().as_("n")]
    for i, q in enumerate(qids):
        if q is None or not _numeric(source.type_of(q.name)):
            continue  # a non-numeric type is refused in the QIDs' order by `qid_stats`
        typ = source.type_of(q.name)
        x = D.column(q.name)
        nulls = exp.Sub(this=D.count_star(), expression=exp.Count(this=x))
        parts += [exp.Min(this=x).as_(f"lo{i}"), exp.Max(this=x).as_(f"hi{i}")]
        parts.append(nulls.as_(f"nulls{i}"))
        if pa.types.is_floating(typ):
            # NaN by ISNAN: DuckDB folds a range test against Parquet's statistics (which
            # leave NaN out) to true, and engines order NaN differently
            parts.append(_count_where(exp.IsNan(this=x)).as_(f"nan{i}"))
            infinite = exp.EQ(this=exp.Abs(this=x), expression=_INFINITY)
            parts.append(_count_where(infinite).as_(f"infinite{i}"))
            whole = exp.NEQ(this=x, expression=exp.Floor(this=x))
            finite = exp.Between(this=x, low=D.double(-_DBL_MAX), high=D.double(_DBL_MAX))
            parts.append(_count_where(exp.and_(finite, whole)).as_(f"fractional{i}"))
    return parts


def _nulls(name: str, table: pa.Table, source: SqlInput) -> None:
    values = table.column("v")
    bad = values.is_null(nan_is_null=pa.types.is_floating(values.type))
    n_bad = int(pc.sum(pc.if_else(bad, table.column("n"), 0)).as_py() or 0)
    if n_bad:
        raise DataError(f"column '{name}' has {n_bad} null/NaN value(s) in {source.where}")


def _not_in_hierarchy(q: QidSpec, table: pa.Table, source: SqlInput) -> None:
    listed = q.hierarchy.values.astype(str).tolist() if q.rule is None else q.rule.order
    values = table.column("v")
    text = values if pa.types.is_string(values.type) else values.cast(pa.string())
    known = pc.is_in(text, value_set=pa.array(list(listed), pa.string()))
    missing = np.flatnonzero(~known.to_numpy(zero_copy_only=False))
    if missing.size:
        i = int(missing[0])
        value = text[i].as_py()
        shown = f"value '{one_line(value)}'" if value.strip() else "an empty value"
        n_same = int(table.column("n")[i].as_py())
        raise DataError(
            f"column '{q.name}' has {shown} not in its hierarchy ({n_same} row(s) in "
            f"{source.where})"
        )


def qid_stats(
    source: SqlInput, q: QidSpec, chunk: ChunkRef, summary: dict, index: int, table: pa.Table
) -> QidStats:
    """One QID's phase-1 statistics from the engine's answers: `summary` (`summaries`, this
    QID at `index`) for a plain numerical QID, else its distinct values and counts `table`."""
    if plain_numerical(q):
        return _numeric_summary(source, q.name, summary, index)
    _nulls(q.name, table, source)
    if q.type == "categorical":
        _not_in_hierarchy(q, table, source)
    values = table.column("v").combine_chunks()
    source.distinct[q.name] = values
    return _scan_qid(q, pa.chunked_array([values]), chunk)


def _numeric_summary(source: SqlInput, name: str, summary: dict, i: int) -> QidStats:
    typ = source.type_of(name)
    if not _numeric(typ):
        raise DataError(f"column '{name}' in {source.where} is not numeric")
    infinite = int(summary.get(f"infinite{i}") or 0)
    nulls = int(summary[f"nulls{i}"]) + int(summary.get(f"nan{i}") or 0)
    if nulls:  # a NaN is a null, as the chunk path counts them
        raise DataError(f"column '{name}' has {nulls} null/NaN value(s) in {source.where}")
    if infinite:
        raise DataError(f"column '{name}' has infinite values in {source.where}")
    integral = not summary.get(f"fractional{i}")
    lo, hi = summary[f"lo{i}"], summary[f"hi{i}"]
    if pa.types.is_floating(typ):
        lo, hi = float(lo), float(hi)
    return QidStats(name, min=lo, max=hi, integral=integral)


def _count_where(condition: exp.Expression) -> exp.Expression:
    return exp.Sum(this=exp.If(this=condition, true=D.number(1), false=D.number(0)))


def sensitive_stats(source: SqlInput, name: str, numbers: bool, table: pa.Table) -> SensitiveStats:
    """A counted attribute's statistics from its distinct values and counts `table` (as
    `SensitiveStats.of_column` makes them from rows: empty text a null, text read as numbers
    where the model orders them)."""
    raw = table.column("v").combine_chunks()
    source.distinct[name] = raw
    values, numeric = as_values(name, raw, numbers)
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    distinct = pc.unique(values)
    group = pc.index_in(values, value_set=distinct).to_numpy(zero_copy_only=False)
    totals = np.zeros(len(distinct), dtype=np.int64)
    np.add.at(totals, group.astype(np.intp), table.column("n").to_numpy())
    out = as_stored(distinct).to_pylist()
    return SensitiveStats(name, *sorted_values(out, totals.tolist()), numeric)

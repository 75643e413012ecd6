"""Microaggregation inside the engine (docs/design.md §4f, §2b; ARX's `MicroAggregationFunction`,
the chunk path's `transform.microaggregation`, ADR 0064).

Phase 2 counts what the chunk path counts for a microaggregated QID: its (class, value) table
(the layer's value codes, as for a sensitive attribute) or, for an integer mean the worker
takes from sums (`encode.class_sums`, `plan.summed`), each class's sum of value offsets, one
`SUM` per class at the counting node. The worker then computes every class's aggregate from
those counts with the chunk path's own functions (`run.pipeline.microaggregate`: mean, median,
mode, geometric mean, interval, rounded and written as ARX does), so the engine computes no
aggregate of its own: phase 3 sends the per-class labels (class key -> label at the chosen
node) as a temporary table and joins them on the record's class key, which keeps the released
values the chunk path's exactly (no floating-point sum in the engine's order)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
from sqlglot import exp

from airflow_skald.core.count.histogram import Histogram
from airflow_skald.core.encode import class_sums
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.engine.sql import dialect as D
from airflow_skald.core.engine.sql.coding import INPUT, Coding
from airflow_skald.core.engine.sql.domain import SqlInput, distinct_counts
from airflow_skald.core.engine.sql.session import SqlSession
from airflow_skald.core.transform.microaggregation.aggregates import Aggregates


def _offset(
    session: SqlSession, source: SqlInput, coding: Coding, plan: Plan, name: str, alias: str
) -> exp.Expression:
    """Each record's weight in the sum table (`class_sums.weights`: its value minus the
    smallest). A numeric column by arithmetic (every value a whole number below 2^53, so the
    cast is exact); any other (CSV text) through a table of its distinct values' offsets, made
    by the worker with `class_sums.offsets` (joined to `coding`)."""
    stats = plan.stats.sensitive[name]
    column = D.column(name, INPUT)
    typ = source.type_of(name) if name in source.schema.names else pa.string()
    if pa.types.is_integer(typ) or pa.types.is_floating(typ):
        return exp.Sub(this=D.bigint(column), expression=D.number(class_sums.smallest(stats)))
    if name not in source.distinct:
        source.distinct[name] = distinct_counts(session, source, name).column("v").combine_chunks()
    values = source.distinct[name]
    weights = class_sums.offsets(stats)[stats.codes(values)]
    table = session.send("offsets", pa.table({"v": values, "w": weights}))
    on = exp.EQ(this=column, expression=D.column("v", alias))
    coding.joins.append((table, alias, on, "inner"))
    return D.column("w", alias)


def class_sums_at(
    session: SqlSession, source: SqlInput, coding: Coding, plan: Plan, node: tuple[int, ...]
) -> dict[str, Histogram]:
    """`RootCounts.sums`: per QID of `plan.summed`, its records' summed value offsets per class
    of `node` (the node the counts are at); every class bin is listed, one summing to 0 too
    (as the chunk path's sparse tables list it)."""
    out: dict[str, Histogram] = {}
    radices = plan.radices(node)
    key = coding.key(plan, node)
    for j, name in enumerate(plan.summed):
        joined = Coding(coding.qids, {}, list(coding.joins))
        weight = _offset(session, source, joined, plan, name, f"w{j}")
        select = (
            joined.relation(source)
            .select(key.as_("k"), exp.Sum(this=weight).as_("s"))
            .group_by(key)
            .order_by(exp.Ordered(this=D.column("k")))
        )
        table = session.query(select)
        keys = table.column("k").to_numpy().astype(np.int64)
        sums = table.column("s").to_numpy().astype(np.int64)
        out[name] = Histogram(radices, keys, sums)
    return out


def send_aggregates(session: SqlSession, aggregates: Sequence[Aggregates]) -> dict[str, str]:
    """Each microaggregated QID's labels per class of the chosen node (`run.microaggregates()`)
    as a temporary table (k: class key, label), by QID name."""
    out = {}
    for a in aggregates:
        labels = np.asarray(a.labels, dtype=object)[a.index].tolist()
        table = pa.table(
            {"k": pa.array(a.keys, pa.int64()), "label": pa.array(labels, pa.string())}
        )
        out[a.name] = session.send("aggregates", table)
    return out


def aggregate_label(
    select: exp.Select, class_key: exp.Expression, table: str, alias: str
) -> tuple[exp.Select, exp.Expression]:
    """`select` joined to an aggregate table on the record's class key, and the label column
    (every record's class is one the counts saw: an inner join)."""
    on = exp.EQ(this=class_key, expression=D.column("k", alias))
    joined = select.join(exp.alias_(D.table(table), alias), on=on, join_type="inner")
    return joined, D.column("label", alias)

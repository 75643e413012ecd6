"""Phase 2 inside the engine (docs/design.md §2b): the root histogram as one GROUP BY of the
mapped codes, and what crosses to the worker is its counts only, at most `histogram_bins`.

The root is chosen in the engine too: in adaptive mode (ADR 0012) the chunk path rolls its
counts up the chain whenever their non-empty bins outgrow N_RAM, and ends at the FIRST chain
node whose bins over all the data fit (a subset never has more); here the engine counts the
distinct bins of every chain node at once (COUNT(DISTINCT key)) and groups at that node.
The counts are those `run.pipeline.count_histogram` sums over the chunks: the same codes
(`coding`), the same keys (mixed radix, value code innermost), the same node."""

from __future__ import annotations

import numpy as np
from sqlglot import exp

from airflow_skald.core.count.histogram import Histogram
from airflow_skald.core.count.root_counts import RootCounts
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.engine.sql import dialect as D
from airflow_skald.core.engine.sql.coding import Coding
from airflow_skald.core.engine.sql.domain import SqlInput
from airflow_skald.core.engine.sql.session import SqlSession


def _bin_keys(coding: Coding, plan: Plan, node: tuple[int, ...]) -> list[exp.Expression]:
    """The keys whose non-empty bins N_RAM bounds at `node`: (class, value) per attribute,
    or the class."""
    key = coding.key(plan, node)
    if not coding.values:
        return [key]
    return [
        exp.Add(this=D.times(D.paren(key), m), expression=code)
        for code, m in coding.values.values()
    ]


def chain_select(source: SqlInput, coding: Coding, plan: Plan) -> exp.Select:
    """The non-empty bins of every chain node below the last, as columns n0, n1, ..."""
    columns = []
    for j, node in enumerate(plan.counting_chain()[:-1]):
        distinct = [
            exp.Count(this=exp.Distinct(expressions=[k])) for k in _bin_keys(coding, plan, node)
        ]
        columns.append(D.total(distinct).as_(f"n{j}"))
    return coding.relation(source).select(*columns)


def counting_node(
    session: SqlSession, source: SqlInput, coding: Coding, plan: Plan
) -> tuple[int, ...]:
    """Where phase 2 counts: the root, or the first node of the chain whose bins fit."""
    chain = plan.counting_chain()
    if len(chain) == 1:
        return tuple(chain[0])
    row = session.query(chain_select(source, coding, plan)).to_pylist()[0]
    limit = plan.n_ram - 1
    for j, node in enumerate(chain[:-1]):
        if row[f"n{j}"] <= limit:
            return tuple(node)
    return tuple(chain[-1])


def grouped_select(source: SqlInput, coding: Coding, key: exp.Expression) -> exp.Select:
    """SELECT key AS k, COUNT(*) AS n ... GROUP BY key ORDER BY k: one histogram."""
    return (
        coding.relation(source)
        .select(key.as_("k"), D.count_star().as_("n"))
        .group_by(key)
        .order_by(exp.Ordered(this=D.column("k")))
    )


def _grouped(session: SqlSession, source: SqlInput, coding: Coding, key: exp.Expression):
    table = session.query(grouped_select(source, coding, key))
    keys = table.column("k").to_numpy().astype(np.int64)
    return keys, table.column("n").to_numpy().astype(np.int64)


def root_counts(session: SqlSession, source: SqlInput, coding: Coding, plan: Plan) -> RootCounts:
    """Records per class of the counting node and, per counted attribute, per (class, value)."""
    node = counting_node(session, source, coding, plan)
    radices = plan.radices(node)
    key = coding.key(plan, node)
    if not coding.values:
        return RootCounts(Histogram(radices, *_grouped(session, source, coding, key)), node=node)
    tables = {}
    for a, (code, m) in coding.values.items():
        pair = exp.Add(this=D.times(D.paren(key), m), expression=code)
        tables[a] = Histogram((*radices, m), *_grouped(session, source, coding, pair))
    classes = tables[next(iter(tables))].sum_last_axis()
    return RootCounts(classes, tables, node=node)

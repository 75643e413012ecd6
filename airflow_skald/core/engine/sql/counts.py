"""Phase 2 inside the engine (docs/design.md §2b): the root histogram as one GROUP BY of the
mapped codes, and what crosses to the worker is its counts only, at most `histogram_bins`.

The root is chosen in the engine too: in adaptive mode (ADR 0012) the chunk path rolls its
counts up the chain whenever their non-empty bins outgrow N_RAM, and ends at the FIRST chain
node whose bins over all the data fit (a subset never has more); here the engine counts the
distinct bins of every chain node at once (COUNT(DISTINCT key)) and groups at that node.
The counts are those `run.pipeline.count_histogram` sums over the chunks: the same codes
(`coding`), the same keys (mixed radix, value code innermost), the same node. DuckDB and
Spark first estimate where to group (`chain_estimate`), only for the chain nodes phase 1's
bounds leave in doubt (ADR 0077); DuckDB then groups once at the node estimated to fit, its
table judging it and the node before exactly (`stepped`, ADR 0083)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from sqlglot import exp

from airflow_skald.core.count.histogram import Histogram
from airflow_skald.core.count.root_counts import RootCounts
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.engine.sql import class_sample
from airflow_skald.core.engine.sql import dialect as D
from airflow_skald.core.engine.sql.chain_estimate import (
    ESTIMATE_ERROR,
    estimated_fit,
    estimated_start,
    sure_fits,
)
from airflow_skald.core.engine.sql.coding import INPUT, Coding
from airflow_skald.core.engine.sql.domain import SqlInput
from airflow_skald.core.engine.sql.grouped_table import (
    base_table,
    child_place,
    coded_place,
    drop_table,
    fits_rows,
    rolled_up,
    sizes,
)
from airflow_skald.core.engine.sql.session import SqlSession


def chain_select(source: SqlInput, coding: Coding, plan: Plan, node: tuple[int, ...]) -> exp.Select:
    """The non-empty bins N_RAM bounds at `node` (a column n)."""
    distinct = [exp.Count(this=exp.Distinct(expressions=[k])) for k in coding.bin_keys(plan, node)]
    return coding.relation(source, *distinct).select(D.total(distinct).as_("n"))


def counting_node(
    session: SqlSession, source: SqlInput, coding: Coding, plan: Plan, first: int = 0, last=None
) -> int:
    """The index of the first node of the chain, from `first` to `last` (the last if none
    before it does), whose non-empty bins fit N_RAM, judged over the grouped table `source`
    of the chain's node `first`. Each chain node generalises the one before, so its non-empty
    bins never grow along the chain: the first that fits is found by bisection after `first`
    (log2 of the chain's length judgements, not one per node; `last` is never judged). At
    `first`, with at most one counted attribute, the table's rows are its non-empty bins (a
    COUNT(*), no COUNT(DISTINCT))."""
    chain = [tuple(node) for node in plan.counting_chain()]
    last = len(chain) - 1 if last is None else last

    def fits(i: int) -> bool:
        if i == first and len(coding.values) <= 1:
            select = exp.select(D.count_star().as_("n")).from_(D.table(source.relation))
        else:
            select = chain_select(source, coding, plan, chain[i])
        return session.query(select).column("n")[0].as_py() <= plan.n_ram - 1

    if first == last or fits(first):  # the first node's judgement is the cheapest: first
        return first
    lo, hi = first + 1, last
    while lo < hi:
        mid = (lo + hi) // 2
        if fits(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def judged(
    session: SqlSession, source: SqlInput, coding: Coding, plan: Plan, start: int
) -> tuple[SqlInput, Coding, int, int]:
    """The grouped table, its coding, the index of its node on the chain and that of the
    counting node: the input grouped at chain node `start` (`estimated_start`), whose node
    is judged exactly. With at most one counted attribute and `start` after the first node
    (an engine that estimates): if it does not fit, the chain after it is rolled up from the
    table (`rolled_up`); if it fits (an estimate too high) and the node before does not
    (a table grouped there: one more scan), it is the counting node. Otherwise the chain
    after `start` is judged by bisection over its table, or, if `start` fits, the chain up to
    it over a table grouped at the first node. Any `start` gives the same counting node."""
    chain = plan.counting_chain()
    table, rolled = base_table(session, source, coding, plan, tuple(chain[start]))
    grouped = SqlInput(table, pa.schema([]), source.where)
    if start > 0 and len(coding.values) <= 1:
        if not fits_rows(session, grouped, plan):
            grouped, rolled, index = rolled_up(session, grouped, rolled, plan, start)
            return grouped, rolled, index, index
        # an estimate too high: if the node before does not fit, the counting node is `start`
        before, _ = base_table(session, source, coding, plan, tuple(chain[start - 1]))
        if not fits_rows(session, SqlInput(before, pa.schema([]), source.where), plan):
            drop_table(session, before)
            return grouped, rolled, start, start
        drop_table(session, before)
    index = counting_node(session, grouped, rolled, plan, start)
    if index == start and start > 0:
        drop_table(session, table)
        table, rolled = base_table(session, source, coding, plan, tuple(chain[0]))
        grouped = SqlInput(table, pa.schema([]), source.where)
        start, index = 0, counting_node(session, grouped, rolled, plan, 0, start)
    return grouped, rolled, start, index


#: engines that judge the node before the estimated counting node from the grouped table of
#: that node (`by_children`): Spark, whose GROUP BY of millions of bins costs as much as its
#: scan (ADR 0082)
CHILD_COUNTING = {"spark"}


def by_children(
    session: SqlSession, source: SqlInput, coding: Coding, plan: Plan, start: int
) -> tuple[SqlInput, Coding, int] | None:
    """Where the estimate places chain node `start` before the counting node (an engine in
    `CHILD_COUNTING`, at most one counted attribute): the input grouped at the next node
    with each row's finer bins as bits (`child_place`), so one GROUP BY judges both nodes
    exactly: the next node's bins are the table's rows, `start`'s the sum of its rows' bits.
    If `start` does not fit, the counting node is the next one or after it (rolled up from
    the table, `rolled_up`): the grouped table, its coding and the counting node's index.
    None where this does not apply or `start` fits (the estimate was high: `judged` then)."""
    chain = plan.counting_chain()
    if session.dialect not in CHILD_COUNTING or len(coding.values) > 1 or start + 1 >= len(chain):
        return None
    children = child_place(coding, tuple(chain[start]), tuple(chain[start + 1]))
    if children is None:
        return None
    table, rolled = base_table(
        session, source, coding, plan, tuple(chain[start + 1]), False, children
    )
    grouped = SqlInput(table, pa.schema([]), source.where)
    rows, finer = sizes(session, grouped, True)
    if finer <= plan.n_ram - 1:
        drop_table(session, table)
        return None
    if rows <= plan.n_ram - 1:
        return grouped, rolled, start + 1
    return rolled_up(session, grouped, rolled, plan, start + 1)


def stepped(
    session: SqlSession, source: SqlInput, coding: Coding, plan: Plan, at: int
) -> tuple[SqlInput, Coding, int, int]:
    """`judged`'s answer for an estimate near the exact counts (DuckDB's `class_sample`, at
    most one counted attribute, ADR 0083): the input grouped at chain node `at` (the first
    estimated to fit) with its rows' bits of the node before (`coded_place`), so its
    table's COUNT(*) judges `at` and its bits the node before, in one scan. `at` fits and
    the node before does not: `at` is the counting node and its table the histogram. `at`
    does not fit: the table is rolled up (`rolled_up`). Both fit (an estimate too high):
    the same from the node before (one scan per step back; where no bits tell the node
    before, its own table does, and the table of `at` is kept until it has). Any `at` gives
    the same counting node."""
    chain, budget = plan.counting_chain(), plan.n_ram - 1
    kept: tuple[SqlInput, Coding] | None = None  # the node after `at`'s table: it fits
    while True:
        place = coded_place(coding, tuple(chain[at - 1]), tuple(chain[at])) if at else None
        table, rolled = base_table(session, source, coding, plan, tuple(chain[at]), False, place)
        grouped = SqlInput(table, pa.schema([]), source.where)
        rows, finer = sizes(session, grouped, place is not None)
        if rows > budget and kept is not None:  # the node after fits, this one does not
            drop_table(session, table)
            return kept[0], kept[1], at + 1, at + 1
        if rows > budget:
            grouped, rolled, index = rolled_up(session, grouped, rolled, plan, at)
            return grouped, rolled, index, index
        if kept is not None:
            drop_table(session, kept[0].relation)
            kept = None
        if at == 0 or finer > budget:
            return grouped, rolled, at, at
        if place is None:
            kept = (grouped, rolled)
        else:
            drop_table(session, table)
        at -= 1


def _first_sure(
    session: SqlSession, source: SqlInput, coding: Coding, plan: Plan
) -> tuple[SqlInput, Coding, int] | None:
    """Before any estimate (`CHILD_COUNTING`): where the chain's first node that fits
    whatever the data (`sure_fits`) follows one in doubt whose bins, were the records spread
    evenly, would not fit (n records fill B bins' B(1 - e^(-n/B)) on average: large inputs),
    that node's table judged by `by_children` (no estimating scan when the one before does
    not fit); None otherwise, or where the one before fits."""
    sure = sure_fits(plan, len(coding.values))
    x = sure.index(True) if True in sure else 0
    if session.dialect not in CHILD_COUNTING or x == 0 or sure[x - 1] is not None:
        return None
    bins = plan.bins(tuple(plan.counting_chain()[x - 1])) - 1
    records = plan.stats.n_rows * max(len(coding.values), 1)
    spread = bins * -np.expm1(-records / bins) * (1 - ESTIMATE_ERROR)
    return by_children(session, source, coding, plan, x - 1) if spread > plan.n_ram - 1 else None


def grouped_select(
    source: SqlInput, coding: Coding, key: exp.Expression, weighted: bool = False
) -> exp.Select:
    """SELECT key AS k, COUNT(*) AS n ... GROUP BY key: one histogram (`weighted`: over a
    grouped table, the sum of its counts `n`), in no order (`_grouped` sorts its keys)."""
    # a BIGINT: PostgreSQL's SUM of a bigint is a NUMERIC, which reaches the worker as text
    # (issue 43: 2.9M bins' counts parsed from Python strings, +280 MB at 100M rows)
    count = D.bigint(exp.Sum(this=D.column("n", INPUT))) if weighted else D.count_star()
    return coding.relation(source, key).select(key.as_("k"), count.as_("n")).group_by(key)


def _grouped(session: SqlSession, source: SqlInput, coding: Coding, key: exp.Expression, how: str):
    """The histogram of `key`: `how` "rows" counts the input's rows, "weighted" sums a
    grouped table's counts, "grouped" reads a grouped table whose rows are already one per
    key (the chain's first node: no second GROUP BY). The keys are sorted by the worker (one
    key per row: the order is the same whoever sorts; an engine's ORDER BY of millions of
    keys cost Spark a sort job, ~5 % of its run at 4M rows, ADR 0082)."""
    if how == "grouped":
        select = coding.relation(source, key).select(key.as_("k"), D.column("n", INPUT).as_("n"))
    else:
        select = grouped_select(source, coding, key, how == "weighted")
    table = session.query(select)
    if table.column("k").null_count:  # a criterion's rows out of a subset
        table = table.filter(table.column("k").is_valid())
    keys = np.asarray(table.column("k").to_numpy(), dtype=np.int64)  # no copy if int64
    order = np.argsort(keys)
    return keys[order], np.asarray(table.column("n").to_numpy(), dtype=np.int64)[order]


def _first_fits(plan: Plan, counted: int) -> bool:
    """Whether the chain's first node fits N_RAM whatever the data: its non-empty bins are
    at most one per record and counted attribute (and at most its bins), so with few
    records it is counted by one GROUP BY of the input, with no grouped table to judge."""
    bound = min(plan.stats.n_rows * max(counted, 1), plan.bins(tuple(plan.counting_chain()[0])))
    return bound <= plan.n_ram - 1


def _on_chain(
    session: SqlSession, source: SqlInput, coding: Coding, plan: Plan
) -> tuple[SqlInput, Coding, int, int]:
    """The input grouped on the chain, where the estimate places it (`chain_estimate`), and
    the counting node judged exactly: DuckDB at the node estimated to fit (`stepped`);
    Spark from the node before it (`by_children`; first, without an estimate, from the node
    before the first that surely fits, `_first_sure`; else `judged`); `judged` otherwise."""
    if session.dialect in class_sample.SAMPLING and len(coding.values) <= 1:
        return stepped(session, source, coding, plan, estimated_fit(session, source, coding, plan))
    counted = _first_sure(session, source, coding, plan)  # large inputs: no estimate
    if counted is None:
        start = estimated_start(session, source, coding, plan)
        counted = by_children(session, source, coding, plan, start) if start else None
    if counted is not None:
        return counted[0], counted[1], counted[2], counted[2]
    return judged(session, source, coding, plan, start)


def root_counts(session: SqlSession, source: SqlInput, coding: Coding, plan: Plan) -> RootCounts:
    """Records per class of the counting node and, per counted attribute, per (class, value).
    On a chain (adaptive mode) the input is scanned once, grouped at a chain node in the
    engine (`judged`: where the estimates place the last node that does not fit); the
    chain's nodes from there are judged, and counted, over that table; unless the first
    node fits whatever the data (`_first_fits`): then it is counted directly."""
    chain = plan.counting_chain()
    how, node = "rows", tuple(chain[0])
    if len(chain) > 1 and not _first_fits(plan, len(coding.values)):
        source, coding, grouped_at, index = _on_chain(session, source, coding, plan)
        node = tuple(chain[index])
        first = index == grouped_at and len(coding.values) <= 1
        how = "grouped" if first else "weighted"
    radices = plan.radices(node)
    key = coding.key(plan, node)
    if not coding.values:
        counted = _grouped(session, source, coding, key, how)
        return RootCounts(Histogram(radices, *counted), node=node)
    tables = {}
    for a, (code, m) in coding.values.items():
        pair = exp.Add(this=D.times(D.paren(key), m), expression=code)
        tables[a] = Histogram((*radices, m), *_grouped(session, source, coding, pair, how))
    classes = tables[next(iter(tables))].sum_last_axis()
    return RootCounts(classes, tables, node=node)

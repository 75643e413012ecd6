"""Where an engine groups its input on the chain (docs/design.md §2b, ADR 0065, 0077, 0083):
the chain nodes phase 1's bounds settle (`sure_fits`), and an estimate of the others' non-empty
bins by one scan: DuckDB's exact counts over a hash sample of classes (`class_sample`),
Spark's APPROX_COUNT_DISTINCTs. An estimate only places the grouped table; `counts` decides
every node by exact counts."""

from __future__ import annotations

from sqlglot import exp

from airflow_skald.core.encode.dimensions import CategoricalDimension, NumericalDimension
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.engine.sql import class_sample
from airflow_skald.core.engine.sql import dialect as D
from airflow_skald.core.engine.sql.coding import Coding
from airflow_skald.core.engine.sql.domain import SqlInput
from airflow_skald.core.engine.sql.session import SqlSession

#: engines whose estimate of the chain's non-empty bins chooses where the grouped table is
#: built (never which node is counted: every node is judged by exact counts): DuckDB's exact
#: counts over a hash sample of classes (`class_sample`, ADR 0083), Spark's HyperLogLog
#: (APPROX_COUNT_DISTINCT); PostgreSQL has neither
ESTIMATING = {"duckdb", "spark"}
#: how far above the exact count an approximate count may be taken to be (5 %); DuckDB's
#: HyperLogLog was sometimes further off (16 % high at 20M rows of the paper's table, ADR
#: 0081): a start too late is then stepped back by one node (`judged`). DuckDB now samples
#: (`class_sample`, ADR 0083); Spark still approximates
ESTIMATE_ERROR = 0.05


def _every_code_seen(dim) -> bool:
    """Whether each of the QID's codes at every level holds a record (phase 1's observed
    labels or ranks), so its cards are exact counts of non-empty codes, not bounds."""
    if isinstance(dim, CategoricalDimension):
        return True
    return isinstance(dim, NumericalDimension) and dim.encoded_values is not None


def sure_fits(plan: Plan, counted: int) -> list[bool | None]:
    """Per chain node, whether its non-empty bins fit N_RAM whatever the data shows: True
    when an upper bound fits (at most one bin per record and counted attribute, and at most
    the product of the QIDs' codes: `_first_fits`' bound), False when a lower bound does not
    (with no counted attribute: a class per non-empty code of the QID with most, where phase
    1's codes are exact), None when only the data can tell. Bins never grow along the chain,
    so a node after one that fits fits, and one before one that does not does not."""
    chain = plan.counting_chain()
    budget = plan.n_ram - 1
    out: list[bool | None] = []
    for node in chain:
        upper = min(plan.stats.n_rows * max(counted, 1), plan.bins(tuple(node)) - 1)
        exact = [d.cards[lv] for d, lv in zip(plan.dims, node, strict=True) if _every_code_seen(d)]
        lower = max(exact, default=1) if not counted else 0
        out.append(True if upper <= budget else (False if lower > budget else None))
    last_fails = max((i for i, v in enumerate(out) if v is False), default=-1)
    first_fits = min((i for i, v in enumerate(out) if v is True), default=len(out))
    return [i >= first_fits if not last_fails < i < first_fits else None for i in range(len(out))]


def estimated_start(session: SqlSession, source: SqlInput, coding: Coding, plan: Plan) -> int:
    """The chain node to group the input at: the one before the first whose non-empty bins
    fit N_RAM (`estimated_fit`), so the grouped table is about N_RAM rows, not one per
    record (0 where the engine does not estimate)."""
    return max(estimated_fit(session, source, coding, plan) - 1, 0)


def estimated_fit(session: SqlSession, source: SqlInput, coding: Coding, plan: Plan) -> int:
    """The first chain node whose non-empty bins are estimated to fit N_RAM (the last if
    none is; 0 where the engine does not estimate). Where phase 1's bounds settle a node (`sure_fits`) it is not
    estimated; the nodes in doubt are, by one scan, and none when none is in doubt: DuckDB
    counts them exactly over a hash sample of classes (`class_sample`, 2 % margin), Spark by
    APPROX_COUNT_DISTINCTs (5 % margin). An estimate only places the grouped table: `judged`
    decides by exact counts."""
    chain = plan.counting_chain()
    if session.dialect not in ESTIMATING:
        return 0
    sure = sure_fits(plan, len(coding.values))
    doubt = [i for i, v in enumerate(sure) if v is None]
    fit = {i: bool(v) for i, v in enumerate(sure) if v is not None}
    if doubt:
        keys = [coding.bin_keys(plan, tuple(chain[i])) for i in doubt]
        if session.dialect in class_sample.SAMPLING:
            rate, top = class_sample.sample_rate(plan), tuple(chain[doubt[-1]])
            found = class_sample.estimates(session, source, coding, keys, top, rate)
            low = 1 - class_sample.SAMPLED_ERROR
        else:
            found = _approximate(session, source, coding, keys)
            low = 1 - ESTIMATE_ERROR
        fit.update({i: e * low <= plan.n_ram - 1 for i, e in zip(doubt, found, strict=True)})
    return next((i for i in range(len(chain)) if fit[i]), len(chain) - 1)


def _approximate(
    session: SqlSession, source: SqlInput, coding: Coding, keys: list[list[exp.Expression]]
) -> list[float]:
    """Per node (its bin keys), its non-empty bins by APPROX_COUNT_DISTINCT: one scan."""
    estimates = [D.total([exp.ApproxDistinct(this=k) for k in node]) for node in keys]
    columns = [e.as_(f"e{i}") for i, e in enumerate(estimates)]
    row = session.query(coding.relation(source, *columns).select(*columns))
    return [float(row.column(f"e{i}")[0].as_py()) for i in range(len(keys))]

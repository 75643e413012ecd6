"""Where DuckDB groups its input (docs/design.md §2b, ADR 0083): each chain node's non-empty
bins estimated by exact distinct counts over a hash sample of whole classes.

The input's rows are kept when the hash of their class at a node `top` (the coarsest node
to estimate) falls in one of `rate` equal parts of the hash space. Every finer node's bin
belongs to one class of `top`, so the sample holds each bin of those nodes with all its rows
or none, each with probability 1 / `rate`: `rate` times the sample's distinct bins estimates
the node's (a cluster sample: unbiased; at the paper's 20M rows within 0.1 % of the exact
count, DuckDB's APPROX_COUNT_DISTINCT within 12-36 %). Only the sample is coded and counted
(the mapping joins and the COUNT(DISTINCT)s read 1 row in `rate`), and the hash of the
whole input reads no mapping table where it can: a categorical or encoded QID at level 0 is
hashed by its raw value (one code per value: checked on its mapping table), a mapped QID
above level 0 is left out (the hash of a coarser class is a hash of `top`'s class too),
unless the classes left would be too few to sample (`MIN_CLASSES` per part). An estimate
only places the grouped table: `counts.judged` decides every node by exact counts."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sqlglot import exp

from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.engine.sql import dialect as D
from airflow_skald.core.engine.sql.coding import INPUT, Coding
from airflow_skald.core.engine.sql.domain import SqlInput
from airflow_skald.core.engine.sql.session import SqlSession

#: engines whose estimate is a hash sample's exact counts (their hash: DuckDB's `hash`)
SAMPLING = {"duckdb"}
#: the bins a sample should hold near N_RAM: the rate is N_RAM / SAMPLED_BINS (at least 1)
SAMPLED_BINS = 200_000
#: the classes of `top` per part of the hash space below which the mapped QIDs are hashed too
MIN_CLASSES = 10_000
#: how far below the exact count a sampled estimate may be taken to be (2 %)
SAMPLED_ERROR = 0.02


def sample_rate(plan: Plan) -> int:
    """1 row in `rate` parts of the hash space: about SAMPLED_BINS bins near N_RAM (1, i.e.
    every row and exact counts, when N_RAM is that small)."""
    return max(1, plan.n_ram // SAMPLED_BINS)


def _one_code_per_value(qid) -> bool:
    codes = qid.mapped["c0"]
    return len(np.unique(codes)) == len(codes)


def class_hash(coding: Coding, top: tuple[int, ...], rate: int) -> list[exp.Expression]:
    """The terms whose hash samples the classes of node `top`: its codes by arithmetic, a
    mapped QID at level 0 by its raw value, one above it by its code (a mapping join) only
    when the others leave fewer than MIN_CLASSES classes per part (a QID at its top is a
    constant: left out)."""
    plain: list[exp.Expression] = []
    mapped: list[exp.Expression] = []
    classes = 1
    for qid, level in zip(coding.qids, top, strict=True):
        if level == qid.dim.top:
            continue
        if qid.mapped is None or (level == 0 and _one_code_per_value(qid)):
            raw = qid.mapped is not None
            plain.append(D.column(qid.dim.name, INPUT) if raw else qid.at(level))
            classes *= int(qid.dim.cards[level])
        else:
            mapped.append(qid.at(level))
    return plain + mapped if classes < MIN_CLASSES * rate else plain


def sampled(
    session: SqlSession, source: SqlInput, coding: Coding, top: tuple[int, ...], rate: int
) -> SqlInput:
    """The input's rows whose class at `top` hashes into the sample (a view: 1 in `rate`
    parts of the hash space; every row when `rate` is 1)."""
    terms = class_hash(coding, top, rate)
    select = coding.relation(source, *terms).select(exp.Column(this=exp.Star(), table=INPUT))
    if rate > 1 and terms:
        hashed = exp.Anonymous(this="hash", expressions=terms)
        select = select.where(
            exp.EQ(this=exp.Mod(this=hashed, expression=D.number(rate)), expression=D.number(0))
        )
    view = session.view(select, "sample")
    return SqlInput(view, source.schema, source.where, source.distinct)


def estimates(
    session: SqlSession,
    source: SqlInput,
    coding: Coding,
    keys: Sequence[Sequence[exp.Expression]],
    top: tuple[int, ...],
    rate: int,
) -> list[float]:
    """Per node (its bin keys `keys`, every node at or below `top`): its non-empty bins
    estimated as `rate` times the sample's, by one scan of the input (the sample; every
    row, at rate 1, when `top` is one class: nothing to hash)."""
    rate = rate if class_hash(coding, top, rate) else 1
    sample = sampled(session, source, coding, top, rate)
    counts = [
        D.total([exp.Count(this=exp.Distinct(expressions=[k])) for k in node]) for node in keys
    ]
    columns = [c.as_(f"e{i}") for i, c in enumerate(counts)]
    row = session.query(coding.relation(sample, *columns).select(*columns))
    return [float(row.column(f"e{i}")[0].as_py()) * rate for i in range(len(keys))]

"""A grouped table in the engine (docs/design.md §2b, ADRs 0065, 0081-0083): the input's
records grouped by their codes at a chain node, kept as a temporary table; the codes of any
coarser node over it (`RolledCode`), so the chain is judged and rolled up from the table
without another scan of the input; and each row's bits of the places its records' bins at
the node before take in its bin (`coded_place`), so one GROUP BY judges two chain nodes."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from sqlglot import exp

from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.engine.sql import dialect as D
from airflow_skald.core.engine.sql.coding import INPUT, Coding
from airflow_skald.core.engine.sql.domain import SqlInput
from airflow_skald.core.engine.sql.session import SqlSession, drop

CHILDREN = "b"
MASK_BITS = 63  # the places a BIGINT's bits hold


def base_table(
    session: SqlSession,
    source: SqlInput,
    coding: Coding,
    plan: Plan,
    base: tuple[int, ...],
    weighted: bool = False,
    children: exp.Expression | None = None,
) -> tuple[str, Coding]:
    """One scan of the input: its records grouped by their codes at the chain node `base`
    (and value codes), kept in the engine as a temporary table; and the codes of any
    coarser node over that table (`RolledCode`: the same level maps the chunk path rolls
    its counts up with). `weighted`: `source` is such a table of a finer node, its counts
    `n` summed (a roll-up, no scan of the input). `children` (`child_place`): each row's
    bits (`CHILDREN`) of the places its records' finer bins take in its bin."""
    columns = [
        q.at(level).as_(f"q{i}") for i, (q, level) in enumerate(zip(coding.qids, base, strict=True))
    ]
    for j, (code, _) in enumerate(coding.values.values()):
        columns.append(code.as_(f"a{j}"))
    count = D.bigint(exp.Sum(this=D.column("n", INPUT))) if weighted else D.count_star()
    aggregates = [count.as_("n")]
    if children is not None:
        bit = exp.BitwiseLeftShift(this=D.bigint(D.number(1)), expression=children)
        aggregates.append(exp.BitwiseOrAgg(this=bit).as_(CHILDREN))
    select = coding.relation(source, *columns, *aggregates).select(*columns, *aggregates)
    # a QID at its top is a constant (not grouped: a number in GROUP BY is a position)
    keys = [D.paren(c.this) for c in columns if not isinstance(c.this, exp.Literal)]
    select = select.group_by(*keys) if keys else select
    table = session.create(select, "base")
    qids, joins = [], []
    for i, (q, level) in enumerate(zip(coding.qids, base, strict=True)):
        rolled = RolledCode(q.dim, level, D.column(f"q{i}", INPUT), q.mapped)
        if q.mapped is not None and level < q.dim.top:
            levels = range(level + 1, q.dim.top + 1)
            maps = {f"d{lv}": q.dim.level_map(level, lv) for lv in levels}
            codes = np.arange(q.dim.cards[level], dtype=np.int64)
            name = session.send("roll", pa.table({"c": codes, **maps}))
            on = exp.EQ(this=D.column(f"q{i}", INPUT), expression=D.column("c", f"r{i}"))
            joins.append((name, f"r{i}", on, "inner"))
            rolled.alias = f"r{i}"
        qids.append(rolled)
    values = {
        a: (D.column(f"a{j}", INPUT), m) for j, (a, (_, m)) in enumerate(coding.values.items())
    }
    return table, Coding(qids, values, joins)


class RolledCode:
    """A QID's code at a level at or above `base`, from its code at `base` (a column)."""

    def __init__(self, dim, base: int, column: exp.Expression, mapped=None):
        self.dim, self.base, self.column = dim, base, column
        self.alias: str | None = None  # a mapped QID's level-map table
        self.mapped = mapped  # a mapped QID's codes (rolled by level maps, not arithmetic)

    def at(self, level: int) -> exp.Expression:
        if level == self.base:
            return self.column
        if self.alias is not None:
            return D.column(f"d{level}", self.alias)
        if level == self.dim.top:
            return D.number(0)
        scaled = D.times(D.paren(self.column), self.dim.widths[self.base])
        return D.int_div(D.paren(scaled), self.dim.widths[level])


def drop_table(session: SqlSession, table: str) -> None:
    session.execute(drop(table))
    session.temporaries.remove(table)


def fits_rows(session: SqlSession, grouped: SqlInput, plan: Plan) -> bool:
    """Whether a grouped table's rows (its node's non-empty bins) fit N_RAM."""
    select = exp.select(D.count_star().as_("n")).from_(D.table(grouped.relation))
    return session.query(select).column("n")[0].as_py() <= plan.n_ram - 1


def rolled_up(
    session: SqlSession, grouped: SqlInput, rolled: Coding, plan: Plan, at: int
) -> tuple[SqlInput, Coding, int]:
    """From the grouped table of chain node `at` (rows one per bin: at most one counted
    attribute), the chain's first node from there whose bins fit N_RAM (the last if none
    does) and its grouped table: each node judged by its table's COUNT(*), and while it does
    not fit, its table rolled up to the next node's by a GROUP BY of the table (the tables
    shrink along the chain; the last one is the histogram, no further GROUP BY)."""
    chain = plan.counting_chain()
    while at < len(chain) - 1 and not fits_rows(session, grouped, plan):
        table, rolled = base_table(session, grouped, rolled, plan, tuple(chain[at + 1]), True)
        drop_table(session, grouped.relation)
        grouped, at = SqlInput(table, pa.schema([]), grouped.where), at + 1
    return grouped, rolled, at


def child_place(
    coding: Coding, finer: tuple[int, ...], coarser: tuple[int, ...]
) -> exp.Expression | None:
    """A record's finer bin's place (below `MASK_BITS`) in its bin at the next chain node
    `coarser`, where the two nodes differ in one arithmetic QID (`QidCode.at`: its code at
    a level is its units' integer quotient by the level's width) whose bins split into at
    most `MASK_BITS`; None otherwise."""
    moved = [i for i, (a, b) in enumerate(zip(finer, coarser, strict=True)) if a != b]
    if len(moved) != 1 or coding.qids[moved[0]].table is not None:
        return None
    q = coding.qids[moved[0]]
    dim, lo, hi = q.dim, int(finer[moved[0]]), int(coarser[moved[0]])
    if hi == dim.top:  # one bin: the place is the finer code
        return q.at(lo) if dim.cards[lo] <= MASK_BITS else None
    ratio, rest = divmod(dim.widths[hi], dim.widths[lo])
    if rest or ratio > MASK_BITS:
        return None
    return exp.Sub(this=q.at(lo), expression=D.times(D.paren(q.at(hi)), ratio))


def sizes(session: SqlSession, grouped: SqlInput, bits: bool) -> tuple[int, int]:
    """A grouped table's rows (its node's non-empty bins) and, with `bits` (a column
    `CHILDREN`), the sum of its rows' bits (the node before's non-empty bins; else -1)."""
    columns = [D.count_star().as_("n")]
    if bits:
        columns.append(exp.Sum(this=exp.BitwiseCount(this=D.column(CHILDREN))).as_("f"))
    row = session.query(exp.select(*columns).from_(D.table(grouped.relation))).to_pylist()[0]
    return int(row["n"]), (int(row["f"] or 0) if bits else -1)


#: a QID's codes at a level, at most, whose parents `coded_place` checks in the worker
PLACED_CODES = 1 << 24


def coded_place(coding: Coding, finer: tuple[int, ...], coarser: tuple[int, ...]):
    """`child_place` for any QID (a mapped one too: a categorical, encoded or rule-built
    QID's code from its mapping table): the finer code itself where its level has at most
    `MASK_BITS` codes, else the code modulo `MASK_BITS` where that tells apart the codes
    of every parent (checked on the level map in the worker: numerical levels, whose
    children are consecutive codes), else None."""
    place = child_place(coding, finer, coarser)
    moved = [i for i, (a, b) in enumerate(zip(finer, coarser, strict=True)) if a != b]
    if place is not None or len(moved) != 1:
        return place
    q, lo, hi = coding.qids[moved[0]], int(finer[moved[0]]), int(coarser[moved[0]])
    cards = int(q.dim.cards[lo])
    if cards <= MASK_BITS:
        return q.at(lo)
    if cards > PLACED_CODES:
        return None
    parents = q.dim.level_map(lo, hi).astype(np.int64)
    bits = np.arange(cards, dtype=np.int64) % MASK_BITS
    if len(np.unique(parents * MASK_BITS + bits)) < cards:
        return None
    return exp.Mod(this=D.paren(q.at(lo)), expression=D.number(MASK_BITS))

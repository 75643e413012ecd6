"""The codes the passes count with, computed in the engine (docs/design.md §2b).

Each QID's bin at a level is what `Dimension.key_part` gives the chunk path, by one of two
means:
- a mapping table (value -> code at every level), sent to the engine as a temporary table
  and joined on the value: categorical, rule-built and encoded QIDs, whose codes the worker
  computes with `key_part` itself over the distinct values phase 1 found (so they are the
  chunk path's codes by construction);
- arithmetic on a plain numerical QID (its domain may span 2^32 units, too many to list):
  units of min_width from the minimum, as `NumericalDimension.units` computes them (integer
  arithmetic on whole numbers; else the same IEEE double operations in the same order).
A counted attribute's value code comes from a mapping table the same way (`SensitiveStats`
codes of its distinct values), a null as its own code.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from sqlglot import exp

from airflow_skald.core.count.histogram import strides_of
from airflow_skald.core.data.io import ChunkRef
from airflow_skald.core.encode.dimensions import _FLOAT_TOLERANCE, NumericalDimension
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.engine.sql import dialect as D
from airflow_skald.core.engine.sql.domain import SqlInput
from airflow_skald.core.engine.sql.session import SqlSession

INPUT = "i"  # the input's alias in every coded query


@dataclass
class QidCode:
    """One QID's code at a level, as an expression over the input (and its mapping table)."""

    dim: object
    table: str | None  # its mapping table (alias `alias`), None: arithmetic
    alias: str
    units: exp.Expression | None = None  # arithmetic: level-0 units
    mapped: dict[str, np.ndarray] | None = None  # mapping table: its codes per level

    def at(self, level: int) -> exp.Expression:
        if self.table is not None:
            return D.column(f"c{level}", self.alias)
        dim = self.dim
        if level == dim.top:
            return D.number(0)
        if not level:
            return self.units
        scaled = D.times(D.paren(self.units), dim.widths[0])
        return D.int_div(D.paren(scaled), dim.widths[level])


@dataclass
class Coding:
    """Every QID's and counted attribute's code, with the joins they need."""

    qids: list[QidCode]
    values: dict[str, tuple[exp.Expression, int]]  # attribute -> (code, m)
    joins: list[tuple[str, str, exp.Expression, str]]  # (table, alias, on, kind)

    def key(self, plan: Plan, node: tuple[int, ...]) -> exp.Expression:
        """The class key at `node`: sum of code_i * stride_i (mixed radix, first QID first)."""
        strides = strides_of(plan.radices(node))
        terms = [
            D.times(D.paren(q.at(level)), stride)
            for q, level, stride, r in zip(
                self.qids, node, strides, plan.radices(node), strict=True
            )
            if r > 1
        ]
        return D.total(terms)

    def bin_keys(self, plan: Plan, node: tuple[int, ...]) -> list[exp.Expression]:
        """The keys whose non-empty bins N_RAM bounds at `node`: (class, value) per
        attribute, or the class."""
        key = self.key(plan, node)
        if not self.values:
            return [key]
        return [
            exp.Add(this=D.times(D.paren(key), m), expression=code)
            for code, m in self.values.values()
        ]

    def relation(self, source: SqlInput, *used: exp.Expression) -> exp.Select:
        """FROM the input with the joins the expressions `used` read (every join if none is
        given); the caller adds the select list. A mapping table holds every value of the
        input, so leaving out one nothing reads drops no row."""
        aliases = {c.table for e in used for c in e.find_all(exp.Column)} if used else None
        select = exp.select().from_(exp.alias_(D.table(source.relation), INPUT))
        for table, alias, on, kind in self.joins:
            if aliases is None or alias in aliases:
                select = select.join(exp.alias_(D.table(table), alias), on=on, join_type=kind)
        return select


def _pseudo_chunk(source: SqlInput, n: int) -> ChunkRef:
    return ChunkRef(0, source.where, 0, n, origin=source.where)


def _level_codes(dim, values: pa.Array, chunk: ChunkRef) -> dict[str, np.ndarray]:
    column = pa.chunked_array([values])
    return {f"c{lv}": dim.key_part(column, chunk, lv, 1) for lv in range(dim.top + 1)}


def _units(dim: NumericalDimension, typ: pa.DataType, column: exp.Expression) -> exp.Expression:
    """`NumericalDimension.units` in SQL."""
    if pa.types.is_integer(typ) and dim.integral:
        off = exp.Sub(this=column, expression=D.number(int(dim.minimum)))
        return D.int_div(D.paren(off), int(dim.min_width))
    x = exp.cast(column, exp.DataType.build("DOUBLE"))
    off = D.paren(exp.Sub(this=x, expression=D.double(float(dim.minimum))))
    scaled = D.paren(exp.Div(this=off, expression=D.double(float(dim.min_width))))
    tolerance = _FLOAT_TOLERANCE * max(1.0, float(dim.n_units))
    return D.bigint(exp.Floor(this=exp.Add(this=scaled, expression=D.double(tolerance))))


def build_coding(
    session: SqlSession, source: SqlInput, plan: Plan, attributes: tuple[str, ...]
) -> Coding:
    """The codes of `plan`'s QIDs (every level) and of `attributes`' values, their mapping
    tables sent to the engine."""
    qids, joins = [], []
    for i, dim in enumerate(plan.dims):
        alias = f"m{i}"
        col = D.column(dim.name, INPUT)
        if isinstance(dim, NumericalDimension) and dim.encoded_values is None:
            units = _units(dim, source.type_of(dim.name), col)
            qids.append(QidCode(dim, None, alias, units))
            continue
        values = source.distinct[dim.name]
        chunk = _pseudo_chunk(source, len(values))
        codes = _level_codes(dim, values, chunk)
        name = session.send("map", pa.table({"v": values, **codes}))
        joins.append((name, alias, exp.EQ(this=col, expression=D.column("v", alias)), "inner"))
        qids.append(QidCode(dim, name, alias, mapped=codes))
    coded: dict[str, tuple[exp.Expression, int]] = {}
    for j, a in enumerate(attributes):
        stats, alias = plan.stats.sensitive[a], f"s{j}"
        raw = source.distinct[a]
        present = raw.filter(raw.is_valid())
        codes = stats.codes(present) if len(present) else np.zeros(0, np.int64)
        name = session.send("values", pa.table({"v": present, "code": codes}))
        col = D.column(a, INPUT)
        joins.append((name, alias, exp.EQ(this=col, expression=D.column("v", alias)), "left"))
        code = D.column("code", alias)
        if len(present) < len(raw):  # a null: its own code
            null = int(stats.codes(pa.nulls(1, raw.type))[0])
            is_null = exp.Is(this=col, expression=exp.Null())
            code = exp.Case(ifs=[exp.If(this=is_null, true=D.number(null))], default=code)
        coded[a] = (code, stats.m)
    return Coding(qids, coded, joins)


LABELLED_BINS = 1 << 20


def present_codes(
    session: SqlSession, source: SqlInput, coding: Coding, index: int, level: int
) -> np.ndarray:
    """Codes of QID `index` at `level` to label: a mapped QID's from its mapping table (no
    scan); an arithmetic QID's every bin of the level, or those some record has (integers
    only cross)."""
    qid = coding.qids[index]
    if qid.mapped is not None:
        return np.unique(qid.mapped[f"c{level}"])
    if qid.dim.cards[level] <= LABELLED_BINS:
        return np.arange(qid.dim.cards[level], dtype=np.int64)
    code = qid.at(level)
    select = coding.relation(source, code).select(code.as_("c")).distinct()
    return np.sort(session.query(select).column("c").to_numpy().astype(np.int64))

"""One dimension per QID, whatever made its hierarchy (docs/design.md §3a, ADR 0017).

A hierarchy built from a rule (dates, masked codes, intervals, ordered groups) is built here
from phase 1's domain, once, into an ordinary `Hierarchy`; its dimension is a categorical one
over that hierarchy. What differs is only how a chunk's raw values reach their level-0 labels
(dates cut to the first granularity, codes padded, numbers quantised by `min_width`): computed
over a chunk's distinct entries, then looked up per row as any categorical value is, so the
search, the roll-ups, the report and the manifest never know which builder made a hierarchy.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_skald.core.config.run_config import QidSpec
from airflow_skald.core.data.builders.dates import (
    DateRule,
    build_dates,
    key_seconds,
    level0_labels,
)
from airflow_skald.core.data.builders.intervals import IntervalRule, build_intervals
from airflow_skald.core.data.builders.masked import (
    MaskedRule,
    build_masked,
    code_text,
    code_width,
    padded,
)
from airflow_skald.core.data.builders.ordered import OrderedRule, build_ordered
from airflow_skald.core.data.hierarchies import Hierarchy
from airflow_skald.core.data.io import ChunkRef
from airflow_skald.core.encode.dimensions import (
    CategoricalDimension,
    Dimension,
    NumericalDimension,
)
from airflow_skald.core.encode.domain import (
    SPAN_ENTRIES,
    IntKeys,
    QidStats,
    check_no_nulls,
    entries_of,
    int_keys,
    single_array,
)

_DENSE_UNITS = 1 << 24  # interval QIDs: a unit -> code table up to this many units, else search


_MEMO_ENTRIES = 1 << 20  # raw entries remembered per dimension (the domain is fixed)


@dataclass
class MappedDimension(CategoricalDimension):
    """A categorical dimension whose raw values reach their level-0 labels through a mapping
    of the column's distinct entries (`level0`). The level-0 code of each raw entry is
    remembered across chunks (the domain is phase 1's, so the memo stops growing): text by
    value, whole numbers, dates and whole-second timestamps as a dense table over their span,
    so a row costs a lookup, as a categorical value does."""

    def level0(self, entries: pa.Array, where) -> pa.Array:
        """Level-0 labels (text) of raw entries; `where(i)` names entry i in messages."""
        raise NotImplementedError

    def _codes_of(self, entries: pa.Array, where) -> np.ndarray:
        """Level-0 code of each entry, -1 where it is not in phase 1's domain."""
        labels = self.level0(entries, where)
        codes = pc.index_in(labels, value_set=self._labels()).fill_null(-1)
        return codes.to_numpy(zero_copy_only=False).astype(np.int64)

    def key_part(
        self, column: pa.ChunkedArray, chunk: ChunkRef, level: int, stride: int
    ) -> np.ndarray:
        arr = single_array(column)
        check_no_nulls(self.name, arr, chunk)
        keys = int_keys(arr, self.key_seconds)
        if keys is not None:
            known = self.__dict__.get("_span_table")
            if known is not None:  # one subtraction and one lookup per row
                offsets = keys.keys - (known[0] - 1)
                out = self.rows_of(known[1], offsets, chunk, level, stride, False)
                if out is not None:
                    return out
            span = self._span(keys, chunk)
            if span is not None:
                base, table = span
                return self.rows_of(table, keys.keys - (base - 1), chunk, level, stride)
            arr = keys.make(keys.keys)
        entries, index, _ = entries_of(arr)
        return self.rows_of(self._by_value(entries, index, chunk), index, chunk, level, stride)

    @property
    def key_seconds(self) -> int:
        """Timestamps are keyed by this many whole seconds (all share a level-0 label)."""
        return 1

    def _by_value(self, entries: pa.Array, index: np.ndarray, chunk: ChunkRef) -> np.ndarray:
        """Each entry's level-0 code; the last chunk's entries remembered (a chunk's
        dictionary is mostly the next one's)."""
        known, codes = self.__dict__.get("_memo", (None, None))
        if known is not None and known.type == entries.type:
            at = pc.index_in(entries, value_set=known).fill_null(-1).to_numpy(False)
            if (at >= 0).all():
                return codes[at]
        out = self._codes_of(entries, lambda i: chunk.where(int(np.flatnonzero(index == i)[0])))
        if len(entries) <= _MEMO_ENTRIES:
            self.__dict__["_memo"] = (entries, out)
        return out

    def _span(self, keys: IntKeys, chunk: ChunkRef) -> tuple[int, np.ndarray] | None:
        """(first key, level-0 code of every key from it between two -1 ends) covering the
        chunk's keys, grown from the remembered table; None when too wide to list."""
        ints = keys.keys
        lo, hi = int(ints.min()), int(ints.max())
        base, table = self.__dict__.get("_span_table", (lo, np.zeros(0, dtype=np.int64)))
        n = table.size - 2
        if n > 0 and base <= lo and hi < base + n:
            return base, table
        if n > 0:
            lo, hi = min(lo, base), max(hi, base + n - 1)
        if hi - lo >= max(SPAN_ENTRIES, 2 * ints.size):
            return None
        span = np.arange(lo, hi + 1, dtype=np.int64)
        codes = self._codes_of(
            keys.make(span), lambda i: chunk.where(int(np.flatnonzero(ints == span[i])[0]))
        )
        table = np.concatenate([[-1], codes, [-1]])
        self.__dict__["_span_table"] = (lo, table)
        return lo, table


@dataclass
class DateDimension(MappedDimension):
    """Dates and timestamps (Parquet types or ISO text) cut to the rule's first level."""

    rule: DateRule | None = None

    def level0(self, entries: pa.Array, where) -> pa.Array:
        return level0_labels(self.name, self.rule, entries, where).labels

    @property
    def key_seconds(self) -> int:
        return key_seconds(self.rule)


@dataclass
class MaskedDimension(MappedDimension):
    """Text codes (or numbers read as codes), padded to the domain's code length."""

    rule: MaskedRule | None = None
    width: int = 0

    def level0(self, entries: pa.Array, where) -> pa.Array:
        return padded(code_text(self.name, entries)[0], self.rule, self.width)


@dataclass
class IntervalDimension(CategoricalDimension):
    """A numerical QID with cut points: level 0 is the value quantised by `min_width` (as a
    plain numerical QID's), the levels above come from the cuts."""

    quantiser: NumericalDimension | None = None
    units: np.ndarray | None = None  # sorted level-0 units seen in phase 1
    unit_codes: np.ndarray | None = None  # their level-0 codes

    def key_part(
        self, column: pa.ChunkedArray, chunk: ChunkRef, level: int, stride: int
    ) -> np.ndarray:
        """Units as a plain numerical QID computes them, then one lookup per row in a table
        of the domain's units between two -1 ends (a unit past either end, or one phase 1
        did not see, is an error), or a binary search over a domain too wide to list."""
        arr = single_array(column)
        check_no_nulls(self.name, arr, chunk)
        units = self.quantiser.units(arr)
        table = self.__dict__.get("_dense")
        if table is None and self.quantiser.n_units <= _DENSE_UNITS:
            table = np.full(self.quantiser.n_units + 2, -1, dtype=np.int64)
            table[self.units + 1] = self.unit_codes
            self.__dict__["_dense"] = table
        if table is not None:
            units += 1
            return self.rows_of(table, units, chunk, level, stride)
        at = np.minimum(np.searchsorted(self.units, units), self.units.size - 1)
        codes = np.where(self.units[at] == units, self.unit_codes[at], -1)
        return self.rows_of(codes, np.arange(codes.size), chunk, level, stride)


def _interval_dimension(spec: QidSpec, stats: QidStats) -> IntervalDimension:
    quantiser = NumericalDimension.build(replace(spec, rule=None, widths=None), stats)
    values = pa.array(stats.values)
    units = np.unique(quantiser.units(values))
    labels = quantiser.labels(0, units)
    lows = [quantiser.minimum + int(u) * quantiser.min_width for u in units]
    hierarchy = build_intervals(spec.name, spec.rule, spec.min_width, labels, lows)
    dim = IntervalDimension.over(spec.name, hierarchy, labels, quantiser=quantiser, units=units)
    dim.unit_codes = dim.to_level[0]  # `over` codes the labels in the order given: the units'
    return dim


def rule_dimension(spec: QidSpec, stats: QidStats) -> CategoricalDimension:
    """The dimension of a QID whose hierarchy a rule builds over phase 1's domain."""
    rule = spec.rule
    if isinstance(rule, DateRule):
        hierarchy = build_dates(spec.name, rule, stats.values)
        return DateDimension.over(spec.name, hierarchy, stats.values, rule=rule)
    if isinstance(rule, MaskedRule):
        width = code_width(spec.name, rule, stats.values, stats.numeric)
        codes = padded(pa.array(stats.values, pa.string()), rule, width)
        codes = sorted(set(codes.to_pylist()))
        hierarchy = build_masked(spec.name, rule, codes, width)
        return MaskedDimension.over(spec.name, hierarchy, codes, rule=rule, width=width)
    if isinstance(rule, OrderedRule):
        hierarchy = build_ordered(spec.name, rule, stats.values)
        return CategoricalDimension.over(spec.name, hierarchy, stats.values)
    if isinstance(rule, IntervalRule):
        return _interval_dimension(spec, stats)
    raise TypeError(f"unknown rule {rule!r}")


def built_hierarchy(spec: QidSpec, stats: QidStats) -> Hierarchy | None:
    """The hierarchy a QID's rule builds over phase 1's domain (None: not a rule QID)."""
    return rule_dimension(spec, stats).hierarchy if spec.rule is not None else None


def build_dimensions(specs: tuple[QidSpec, ...], stats: dict[str, QidStats]) -> list[Dimension]:
    """One dimension per QID, in config order."""
    out: list[Dimension] = []
    for spec in specs:
        if spec.rule is not None:
            out.append(rule_dimension(spec, stats[spec.name]))
        elif spec.type == "categorical":
            out.append(CategoricalDimension.build(spec, stats[spec.name]))
        else:
            out.append(NumericalDimension.build(spec, stats[spec.name]))
    return out


__all__ = ["build_dimensions", "built_hierarchy", "rule_dimension"]

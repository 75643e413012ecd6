"""One dimension per QID, whatever made its hierarchy (SPEC §3a, ADR 0016).

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

from airflow_skald.core.config.run_config import QidSpec
from airflow_skald.core.data.builders.dates import DateRule, build_dates, level0_labels
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
from airflow_skald.core.encode.domain import QidStats, check_no_nulls, entries_of, single_array
from airflow_skald.core.errors import DataError

_DENSE_UNITS = 1 << 24  # interval QIDs: a unit -> code table up to this many units, else search


@dataclass
class DateDimension(CategoricalDimension):
    """Dates and timestamps (Parquet types or ISO text) cut to the rule's first level."""

    rule: DateRule | None = None

    def entries(self, column: pa.ChunkedArray, chunk: ChunkRef) -> tuple[pa.Array, np.ndarray]:
        arr = single_array(column)
        check_no_nulls(self.name, arr, chunk)
        entries, index = entries_of(arr)

        def where(i: int) -> str:
            return chunk.where(int(np.flatnonzero(index == i)[0]))

        return level0_labels(self.name, self.rule, entries, where).labels, index


@dataclass
class MaskedDimension(CategoricalDimension):
    """Text codes (or numbers read as codes), padded to the domain's code length."""

    rule: MaskedRule | None = None
    width: int = 0

    def entries(self, column: pa.ChunkedArray, chunk: ChunkRef) -> tuple[pa.Array, np.ndarray]:
        arr = single_array(column)
        check_no_nulls(self.name, arr, chunk)
        entries, index = entries_of(arr)
        return padded(code_text(self.name, entries)[0], self.rule, self.width), index


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
        codes = self.quantiser.codes(column, chunk)
        lut = self.__dict__.get("_dense")
        if lut is None and self.quantiser.n_units <= _DENSE_UNITS:
            lut = np.full(self.quantiser.n_units, -1, dtype=np.int64)
            lut[self.units] = self.unit_codes
            self.__dict__["_dense"] = lut
        if lut is not None:
            out = lut[codes]
            bad = out < 0
        else:
            at = np.minimum(np.searchsorted(self.units, codes), self.units.size - 1)
            out, bad = self.unit_codes[at], self.units[at] != codes
        if bad.any():
            raise DataError(
                f"column '{self.name}' has a value not seen in phase 1 (at "
                f"{chunk.where(int(np.flatnonzero(bad)[0]))}): the input changed between passes"
            )
        if level or stride != 1:
            out = self.level_map(0, level)[out] * stride
        return out


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

"""Generalisation dimensions: one per QID, built from its config and the phase-1 domain.

A dimension knows its levels (0 = original, top = one value), how many bins each level has
(paper eq. 1), how to turn raw values into level-0 codes, how codes roll up from one level to
a coarser one, and the output string of each bin (docs/design.md §3 interval format).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_skald.core.config.run_config import QidSpec
from airflow_skald.core.data.hierarchies import TOP_LABEL, Hierarchy
from airflow_skald.core.data.io import ChunkRef
from airflow_skald.core.encode.domain import (
    QidStats,
    check_no_nulls,
    dictionary_of,
    single_array,
)
from airflow_skald.core.errors import DataError

_MAX_UNITS = 2**32  # a numerical domain wider than this many min_width units is refused
_FLOAT_TOLERANCE = 1e-9  # a value on the min_width grid may sit a hair below it in binary


def _fraction(x: float | int) -> Fraction:
    return Fraction(str(x)) if isinstance(x, float) else Fraction(x)


def format_number(x: Fraction | float | int, decimals: int = 0) -> str:
    """Exact decimal text of a bin bound; integers without a trailing '.0'."""
    x = Fraction(x) if not isinstance(x, float) else _fraction(x)
    if decimals <= 0:
        if x.denominator == 1:
            return str(x.numerator)
        decimals = _decimals(x)
    return f"{float(x):.{decimals}f}"


def _decimals(*xs: Fraction) -> int:
    out = 0
    for x in xs:
        d = 0
        while (x * 10**d).denominator != 1 and d < 10:
            d += 1
        out = max(out, d)
    return out


@dataclass
class Dimension:
    """Base: levels 0..top with `cards[level]` bins each."""

    name: str
    cards: list[int]

    @property
    def top(self) -> int:
        return len(self.cards) - 1

    def level_map(self, src: int, dst: int) -> np.ndarray:
        """Array mapping each code at level `src` to its code at the coarser level `dst` (cached)."""
        cache = self.__dict__.setdefault("_maps", {})
        if (src, dst) not in cache:
            cache[(src, dst)] = self._level_map(src, dst)
        return cache[(src, dst)]

    def _level_map(self, src: int, dst: int) -> np.ndarray:
        raise NotImplementedError

    def codes(self, column: pa.ChunkedArray, chunk: ChunkRef) -> np.ndarray:
        """Level-0 codes of raw values; values outside the phase-1 domain are errors."""
        raise NotImplementedError

    def codes_at(self, column: pa.ChunkedArray, chunk: ChunkRef, level: int) -> np.ndarray:
        """Codes at `level` of raw values (the hot path of phases 2 and 3), a fresh array."""
        return self.key_part(column, chunk, level, 1)

    def key_part(
        self, column: pa.ChunkedArray, chunk: ChunkRef, level: int, stride: int
    ) -> np.ndarray:
        """`codes_at(column, chunk, level) * stride`, this QID's term of the mixed-radix key,
        computed in one pass per row where possible."""
        raise NotImplementedError

    def labels(self, level: int, codes: np.ndarray) -> list[str]:
        """Output strings of the given bins of `level`."""
        raise NotImplementedError

    def paper_value(self, level: int) -> str:
        raise NotImplementedError


@dataclass
class CategoricalDimension(Dimension):
    """Levels from the hierarchy; codes index the labels observed at each level."""

    level_labels: list[np.ndarray]  # per level: sorted distinct labels among observed values
    to_level: list[np.ndarray]  # per level: level-0 code -> level code
    kind: str = "categorical"
    hierarchy: Hierarchy | None = None  # the one hierarchy object, however it was made

    @classmethod
    def build(cls, spec: QidSpec, stats: QidStats) -> CategoricalDimension:
        return cls.over(spec.name, spec.hierarchy, stats.values)

    @classmethod
    def over(cls, name: str, hierarchy: Hierarchy, values: list, **extra) -> CategoricalDimension:
        """The dimension of `hierarchy` restricted to the level-0 `values` phase 1 observed."""
        table = hierarchy.table
        index = {v: i for i, v in enumerate(table[:, 0].tolist())}
        rows = table[[index[v] for v in values]]
        level_labels, to_level = [], []
        for level in range(table.shape[1]):
            labels, inverse = np.unique(rows[:, level].astype(str), return_inverse=True)
            level_labels.append(labels.astype(object))
            to_level.append(inverse.astype(np.int64))
        cards = [len(x) for x in level_labels]
        return cls(name, cards, level_labels, to_level, hierarchy=hierarchy, **extra)

    def _level_map(self, src: int, dst: int) -> np.ndarray:
        out = np.zeros(self.cards[src], dtype=np.int64)
        out[self.to_level[src]] = self.to_level[dst]
        return out

    def codes(self, column: pa.ChunkedArray, chunk: ChunkRef) -> np.ndarray:
        return self.codes_at(column, chunk, 0)

    def key_part(
        self, column: pa.ChunkedArray, chunk: ChunkRef, level: int, stride: int
    ) -> np.ndarray:
        """One lookup per row: the dictionary's labels are mapped to `level` codes (times the
        stride) first; rows are checked only when some dictionary entry is not a phase-1 value
        (a file's dictionary may hold values no row uses)."""
        entries, index = self.entries(column, chunk)
        lut = pc.index_in(entries, value_set=self._labels()).fill_null(-1).to_numpy()
        return self.rows_of(lut.astype(np.int64), index, chunk, level, stride)

    def rows_of(
        self,
        lut: np.ndarray,
        index: np.ndarray,
        chunk: ChunkRef,
        level: int,
        stride: int,
        strict: bool = True,
    ) -> np.ndarray | None:
        """`lut[index]` at `level` times `stride`: the level map and stride are applied to the
        small table of entries (-1: not a phase-1 value, kept negative), then one lookup per
        row (an index past either end takes the end's entry); a row on a negative entry is
        found by one reduction: an error (the input changed), or None when not `strict`."""
        holes = (lut < 0).any()
        if level or stride != 1:
            mapped = self.level_map(0, level)[np.maximum(lut, 0)] * stride
            lut = np.where(lut < 0, -1, mapped) if holes else mapped
        out = np.take(lut, index, mode="clip")
        if holes and out.size and out.min() < 0:
            if not strict:
                return None
            raise DataError(
                f"column '{self.name}' has a value not seen in phase 1 (at "
                f"{chunk.where(int(np.flatnonzero(out < 0)[0]))}): the input changed between "
                "passes"
            )
        return out

    def entries(self, column: pa.ChunkedArray, chunk: ChunkRef) -> tuple[pa.Array, np.ndarray]:
        """The column's distinct entries (text), and each row's index into them."""
        arr = dictionary_of(column)
        check_no_nulls(self.name, arr, chunk)
        return arr.dictionary, arr.indices.to_numpy(zero_copy_only=False)

    def _labels(self) -> pa.Array:
        """Level 0's labels as an Arrow array (made once)."""
        if "_labels0" not in self.__dict__:
            self.__dict__["_labels0"] = pa.array(self.level_labels[0].tolist(), pa.string())
        return self.__dict__["_labels0"]

    def labels(self, level: int, codes: np.ndarray) -> list[str]:
        return self.level_labels[level][codes].tolist()

    def paper_value(self, level: int) -> str:
        return str(level + 1)


@dataclass
class NumericalDimension(Dimension):
    """Integer units of min_width from the domain minimum (or ranks when encoded)."""

    minimum: Fraction
    min_width: Fraction
    n_units: int
    widths: list[int]  # bin width in units per level; the top's is n_units
    integral: bool
    encoded_values: np.ndarray | None = None
    kind: str = "numerical"

    @classmethod
    def build(cls, spec: QidSpec, stats: QidStats) -> NumericalDimension:
        mw = spec.min_width
        if spec.encode:
            values = np.asarray(stats.values)
            n_units, minimum, mw = len(values), Fraction(0), Fraction(1)
        else:
            values = None
            minimum = _fraction(stats.min)
            n_units = math.floor((_fraction(stats.max) - minimum) / mw) + 1
            if n_units > _MAX_UNITS:  # level-0 maps are dense arrays: this could never fit
                raise DataError(
                    f"column '{spec.name}' spans more than 2^32 units of min_width "
                    f"{format_number(mw)}: use a larger min_width, or encode: true"
                )
        if spec.widths:
            widths = [int(w / spec.min_width) for w in spec.widths]
            widths = [w for w in widths if w < n_units] or [1]
        else:
            widths = [1]
            while widths[-1] * 2 < n_units:
                widths.append(widths[-1] * 2)
        if widths[-1] < n_units:
            widths.append(n_units)
        cards = [-(-n_units // w) for w in widths]
        integral = stats.integral and mw.denominator == 1 and minimum.denominator == 1
        return cls(spec.name, cards, minimum, mw, n_units, widths, integral, values)

    def _level_map(self, src: int, dst: int) -> np.ndarray:
        if dst == self.top:
            return np.zeros(self.cards[src], dtype=np.int64)
        return np.arange(self.cards[src], dtype=np.int64) * self.widths[src] // self.widths[dst]

    def _rank_table(self) -> tuple[int, np.ndarray] | None:
        """Dense value -> rank table for integer encoded values over a modest span."""
        if "_ranks" not in self.__dict__:
            vals = self.encoded_values
            table = None
            if vals.dtype.kind in "iu" or np.all(vals == np.floor(vals)):
                lo, hi = int(vals.min()), int(vals.max())
                if hi - lo < max(1 << 24, 8 * vals.size):
                    ranks = np.full(hi - lo + 1, -1, dtype=np.int64)
                    ranks[vals.astype(np.int64) - lo] = np.arange(vals.size)
                    table = (lo, ranks)
            self.__dict__["_ranks"] = table
        return self.__dict__["_ranks"]

    def units(self, arr: pa.Array) -> np.ndarray:
        """Level-0 unit index of each value (no validation)."""
        if self.encoded_values is not None:
            table = self._rank_table()
            x = arr.to_numpy()
            if table is not None and (x.dtype.kind in "iu" or np.all(x == np.floor(x))):
                lo, ranks = table
                off = x.astype(np.int64, copy=False) - lo
                if x.size and (off.min() < 0 or off.max() >= ranks.size):
                    off = np.where((off < 0) | (off >= ranks.size), ranks.size, off)
                    ranks = np.append(ranks, -1)  # out of the table: no rank
                return ranks[off]
            return np.searchsorted(self.encoded_values, x).astype(np.int64)
        if pa.types.is_integer(arr.type) and self.integral:
            x = arr.to_numpy().astype(np.int64, copy=False) - int(self.minimum)
            return x if self.min_width == 1 else x // int(self.min_width)
        scaled = np.subtract(arr.to_numpy(), float(self.minimum), dtype=np.float64)
        scaled /= float(self.min_width)
        # values on the min_width grid may sit a hair below it in binary: nudge up, then floor
        scaled += _FLOAT_TOLERANCE * max(1.0, float(self.n_units))
        return np.floor(scaled, out=scaled).astype(np.int64)

    def codes(self, column: pa.ChunkedArray, chunk: ChunkRef) -> np.ndarray:
        arr = single_array(column)
        check_no_nulls(self.name, arr, chunk)
        units = self.units(arr)
        if units.size and (units.min() < 0 or units.max() >= self.n_units):
            bad = (units < 0) | (units >= self.n_units)
        elif self.encoded_values is not None and self._rank_table() is None:
            bad = self.encoded_values[units] != arr.to_numpy()
        else:
            return units
        if bad.any():
            raise DataError(
                f"column '{self.name}' has a value outside the phase-1 domain at "
                f"{chunk.where(int(np.flatnonzero(bad)[0]))}: the input changed between passes"
            )
        return units

    def key_part(
        self, column: pa.ChunkedArray, chunk: ChunkRef, level: int, stride: int
    ) -> np.ndarray:
        """Bins are runs of `widths[level]` units: integer arithmetic in place on the fresh
        unit array, no lookup table over the whole domain (which may span 2^32 units)."""
        codes = self.codes(column, chunk)
        if level == self.top:
            return np.zeros(codes.size, dtype=np.int64)
        if level:  # as level_map(0, level): code * widths[0] // widths[level]
            if self.widths[0] != 1:
                codes *= self.widths[0]
            codes //= self.widths[level]
        if stride != 1:
            codes *= stride
        return codes

    def bounds(self, level: int, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """First unit and one-past-last unit of each bin, clipped to the domain."""
        w = self.widths[level]
        lo = codes.astype(np.int64) * w
        return lo, np.minimum(lo + w, self.n_units)

    def labels(self, level: int, codes: np.ndarray) -> list[str]:
        """docs/design.md §3 intervals; the top level is "*": its bounds would be the domain's minimum and
        maximum, which an outlier alone may set (its exact value in every released row)."""
        if level == self.top:
            return [TOP_LABEL] * len(codes)
        lo, hi = self.bounds(level, codes)
        if self.encoded_values is not None:
            vals = self.encoded_values
            return [f"[{_num(vals[a])}-{_num(vals[b - 1])}]" for a, b in zip(lo, hi, strict=True)]
        hi = (
            lo + self.widths[level]
        )  # bins as docs/design.md §3 defines them, not clipped to the maximum
        m, w = self.minimum, self.min_width
        if self.integral:
            return [f"[{m + int(a) * w}-{m + int(b) * w - 1}]" for a, b in zip(lo, hi, strict=True)]
        d = _decimals(m, w)
        return [
            f"[{format_number(m + int(a) * w, d)}-{format_number(m + int(b) * w, d)})"
            for a, b in zip(lo, hi, strict=True)
        ]

    def paper_value(self, level: int) -> str:
        width = self.widths[level] * (1 if self.encoded_values is not None else self.min_width)
        return format_number(Fraction(width))


def _num(x) -> str:
    if isinstance(x, float | np.floating) and float(x).is_integer():
        return str(int(x))
    return str(x.item() if hasattr(x, "item") else x)


def paper_notation(dims: list[Dimension], levels: tuple[int, ...] | list[int]) -> str:
    """The paper's node notation: ((categorical levels, 1-based), (numerical bin widths))."""
    cat = [d.paper_value(lv) for d, lv in zip(dims, levels, strict=True) if d.kind == "categorical"]
    num = [d.paper_value(lv) for d, lv in zip(dims, levels, strict=True) if d.kind == "numerical"]
    return f"(({', '.join(cat)}), ({', '.join(num)}))"


TOP = TOP_LABEL

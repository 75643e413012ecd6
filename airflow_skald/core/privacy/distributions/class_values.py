"""The per-class counts of one sensitive attribute's values (`ClassValues`), the `Verdict` every
criterion returns, and the figures the manifest lists over the kept classes. Pure numpy."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import NamedTuple

import numpy as np

from airflow_skald.core.count.histogram import changes

EPS = float(np.finfo(np.float64).eps)
INT64_SAFE = 1 << 62  # an int64 product below this cannot overflow (sums of two stay in range)


class Verdict(NamedTuple):
    """`ok[i]`: class i satisfies the criterion; `figure[i]`: its figure (see each function)."""

    ok: np.ndarray
    figure: np.ndarray


@dataclass(frozen=True)
class ClassValues:
    """Counts per (class, sensitive value) of ONE sensitive attribute over a node's classes.

    `cls` (int64) is sorted ascending; within a class the rows are in ascending `value` order and
    each (class, value) pair appears once; `count` (int64) > 0. Value codes are 0..m_all-1 (a
    null is a code of its own). Classes 0..n_classes-1 without rows are empty (size 0).
    Build from unsorted or repeated pairs with `ClassValues.from_pairs`.
    """

    n_classes: int
    cls: np.ndarray
    value: np.ndarray
    count: np.ndarray

    def __post_init__(self) -> None:
        cls = np.asarray(self.cls, dtype=np.int64)
        value = np.asarray(self.value)
        count = np.asarray(self.count, dtype=np.int64)
        object.__setattr__(self, "cls", cls)
        object.__setattr__(self, "value", value.astype(np.int64, copy=False))
        object.__setattr__(self, "count", count)
        if not cls.shape == value.shape == count.shape or cls.ndim != 1:
            raise ValueError("cls, value and count must be 1-d arrays of one length")
        if cls.size:
            vmax = int(self.value.max())
            if cls[0] < 0 or cls[-1] >= self.n_classes or int(self.value.min()) < 0:
                raise ValueError("class index or value code out of range")
            if int(count.min()) <= 0:
                raise ValueError("counts must be > 0")
            if self.n_classes * (vmax + 1) < INT64_SAFE:
                key = cls * (vmax + 1)
                key += self.value
                in_order = bool(np.all(key[1:] > key[:-1]))
            else:
                dc = np.diff(cls)
                in_order = bool(np.all((dc > 0) | ((dc == 0) & (np.diff(self.value) > 0))))
            if not in_order:
                raise ValueError("rows must be in (class, value) order, each pair once")

    @classmethod
    def from_pairs(
        cls_, n_classes: int, cls: np.ndarray, value: np.ndarray, count: np.ndarray | None = None
    ) -> ClassValues:
        """Sum `count` (1 per row when None) per (class, value) pair, in any order and repeated."""
        c = np.asarray(cls, dtype=np.int64)
        v = np.asarray(value, dtype=np.int64)
        w = np.ones(c.size, dtype=np.int64) if count is None else np.asarray(count, np.int64)
        keep = w != 0
        c, v, w = c[keep], v[keep], w[keep]
        order = np.lexsort((v, c))
        c, v, w = c[order], v[order], w[order]
        if c.size == 0:
            return cls_(n_classes, c, v, w)
        new = changes(c)
        new[1:] |= v[1:] != v[:-1]
        starts = np.flatnonzero(new)
        return cls_(n_classes, c[starts], v[starts], np.add.reduceat(w, starts))

    @classmethod
    def of_runs(
        cls_, cls: np.ndarray, value: np.ndarray, count: np.ndarray, starts: np.ndarray
    ) -> ClassValues:
        """Rows already in (class, value) order, each pair once, counts > 0 (int64 arrays, as
        `histogram.grouped` returns keys `class * m + value`), every class 0..len(starts)-1
        non-empty, `starts` its first row: taken as they are, not re-checked (the search's
        hot path builds one per node)."""
        cv = object.__new__(cls_)
        object.__setattr__(cv, "n_classes", int(starts.size))
        object.__setattr__(cv, "cls", cls)
        object.__setattr__(cv, "value", value)
        object.__setattr__(cv, "count", count)
        n_values = np.empty(starts.size, dtype=np.int64)
        np.subtract(starts[1:], starts[:-1], out=n_values[:-1])
        if starts.size:
            n_values[-1] = cls.size - starts[-1]
        cv.__dict__.update(_starts=frozen(starts), _n_values=frozen(n_values), _every=True)
        return cv

    # -- per-class layout ---------------------------------------------------------------------

    @cached_property
    def _n_values(self) -> np.ndarray:
        return frozen(np.bincount(self.cls, minlength=self.n_classes).astype(np.int64))

    @cached_property
    def _starts(self) -> np.ndarray:
        starts = np.zeros(self.n_classes, dtype=np.int64)
        np.cumsum(self._n_values[:-1], out=starts[1:])
        return frozen(starts)

    @cached_property
    def _nonempty(self) -> np.ndarray:
        return self._n_values > 0

    @cached_property
    def _every(self) -> bool:
        """Every class has rows (no empty class to skip in per-class reductions)."""
        return bool(self._nonempty.all())

    def distinct(self) -> np.ndarray:
        """Number of distinct values per class (int64, length n_classes, read-only)."""
        return self._n_values

    def sizes(self) -> np.ndarray:
        """Records per class n (int64, length n_classes, read-only)."""
        return self._sizes

    @cached_property
    def _sizes(self) -> np.ndarray:
        return frozen(self.class_sum(self.count))

    def class_sum(self, x: np.ndarray) -> np.ndarray:
        """Per-class sum of a per-row array, in its dtype (exact for ints and Python ints)."""
        if self._every and x.size:
            return np.add.reduceat(x, self._starts)
        out = np.zeros(self.n_classes, dtype=x.dtype)
        if x.size:
            ne = self._nonempty
            out[ne] = np.add.reduceat(x, self._starts[ne])
        return out

    def class_max(self, x: np.ndarray, empty) -> np.ndarray:
        """Per-class maximum of a per-row array; `empty` for classes without rows."""
        if self._every and x.size:
            return np.maximum.reduceat(x, self._starts)
        out = np.full(self.n_classes, empty, dtype=x.dtype)
        if x.size:
            ne = self._nonempty
            out[ne] = np.maximum.reduceat(x, self._starts[ne])
        return out

    def distribution(self, i: int) -> dict[int, int]:
        """Counts per value code of class i (for reports: the classes most at risk)."""
        s = int(self._starts[i])
        e = s + int(self._n_values[i])
        return dict(zip(self.value[s:e].tolist(), self.count[s:e].tolist(), strict=True))

    def subset(self, classes: np.ndarray) -> ClassValues:
        """The classes `classes` (ascending), renumbered 0..len(classes)-1."""
        classes = np.asarray(classes, dtype=np.int64)
        lens = self._n_values[classes]
        first = self._starts[classes]
        total = int(lens.sum())
        offsets = np.r_[0, np.cumsum(lens)[:-1]]
        rows = np.repeat(first - offsets, lens) + np.arange(total, dtype=np.int64)
        new_cls = np.repeat(np.arange(classes.size, dtype=np.int64), lens)
        return ClassValues(int(classes.size), new_cls, self.value[rows], self.count[rows])


FLOOR_MARGIN = 1e-9  # suppression floors: far above the float figures' error (~1e-12)


def suppression_floor(sizes: np.ndarray, shortfall: np.ndarray) -> float:
    """Sum over classes of n * shortfall where the shortfall is positive (nan: an empty
    class, none), lowered by FLOOR_MARGIN: the records a criterion's monotone part says a node
    and every node below it suppress, never above the exact figure when each `shortfall` was
    computed with the margin too (`t_closeness.suppression_floor`,
    `l_diversity.entropy_floor`)."""
    hit = shortfall > 0
    if not hit.any():
        return 0.0
    return max(0.0, float(np.sum(sizes[hit] * shortfall[hit])) * (1 - FLOOR_MARGIN))


def frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def as_fraction(x: Fraction | str | int | float) -> Fraction:
    """An exact threshold: a Fraction, an int or a decimal string; a float read through its
    shortest repr."""
    if isinstance(x, float):
        return Fraction(repr(x))
    return Fraction(x)


# -- figures over the kept classes (manifest) ---------------------------------------------------

#: For each figure, whether its worst (most at-risk) value is the smallest or the largest.
WORST_IS_SMALLEST = {
    "distinct": True,
    "entropy": True,
    "recursive": False,
    "t_closeness": False,
}


def worst_figure(kind: str, figure: np.ndarray, kept: np.ndarray | None = None) -> float | None:
    """The figure the manifest lists over the kept classes: smallest distinct count, smallest
    entropy l, largest recursive ratio or largest distance (`kind` a key of WORST_IS_SMALLEST);
    None when no class is kept."""
    f = figure if kept is None else figure[kept]
    f = f[~np.isnan(f)] if f.dtype.kind == "f" else f
    if f.size == 0:
        return None
    v = f.min() if WORST_IS_SMALLEST[kind] else f.max()
    return int(v) if f.dtype.kind in "iu" else float(v)


def most_at_risk(
    kind: str, figure: np.ndarray, kept: np.ndarray | None = None, top: int = 5
) -> np.ndarray:
    """Indices of the `top` kept classes with the worst figures, worst first (ties by index)."""
    idx = np.arange(figure.size) if kept is None else np.flatnonzero(kept)
    f = figure[idx].astype(np.float64)
    f = np.where(np.isnan(f), np.inf if WORST_IS_SMALLEST[kind] else -np.inf, f)
    order = np.argsort(f if WORST_IS_SMALLEST[kind] else -f, kind="stable")
    return idx[order[:top]]

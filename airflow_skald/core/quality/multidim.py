"""What ARX's multi-dimensional models share (AbstractMetricMultiDimensional): one value per
QID, weighted (weights divided by the largest) and aggregated (`exact.aggregate_key`), and a
lattice-wide lower bound built from per-QID, per-level bounds by one broadcast."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from airflow_skald.core.lattice import HEIGHT_FIRST, Lattice
from airflow_skald.core.quality.context import QualityContext
from airflow_skald.core.quality.exact import aggregate_key, aggregate_value
from airflow_skald.core.quality.metric import Metric, Scored


class MultiDimensional(Metric):
    """A per-QID value aggregated; subclasses give `qid_values` (exact, per QID) and
    `level_bound(i, level)` (a float never above QID i's value at any node at that level or
    above it, with suppression or not)."""

    default_aggregate = "sum"
    ties = HEIGHT_FIRST

    def __init__(self, ctx: QualityContext, aggregate: str | None = None):
        self.ctx = ctx
        self.how = aggregate or self.default_aggregate
        self.g = ctx.settings.g_factor
        self.s = ctx.settings.s_factor

    def qid_values(self, scored: Scored) -> list[Fraction]:
        raise NotImplementedError

    def level_bound(self, i: int, level: int) -> float:
        raise NotImplementedError

    def value(self, scored: Scored) -> Any:
        return self.key_of(self.qid_values(scored))

    def key_of(self, values: Sequence[Fraction]) -> Any:
        """The value of a node of these per-QID values (exactly ordered: an int when the
        metric has a `scale`)."""
        key = aggregate_key(values, self.ctx.weights, self.how)
        scale = self.scale()
        if scale is None:
            return key
        scaled = key * scale
        assert scaled.denominator == 1, (key, scale)  # noqa: S101 (the scale's contract)
        return int(scaled)

    def display(self, value: Any) -> float:
        scale = self.scale()
        if scale is not None:
            value = Fraction(value, scale)
        return aggregate_value(value, len(self.ctx.dims), self.how)

    def denominators(self) -> list[int] | None:
        """Integers whose product times any per-QID value is an integer (None: unknown)."""
        return None

    def scale(self) -> int | None:
        """D such that D * every aggregate key is an integer: keys are then compared as ints,
        and exact integer bounds let the search break ties by rank (else float bounds keep
        every tie alive). Linear aggregates only."""
        if "_int_scale" not in self.__dict__:
            dens = self.denominators()
            scale = None
            if dens is not None and self.how in ("sum", "arithmetic_mean", "maximum"):
                scale = math.prod(dens) * math.lcm(*(w.denominator for w in self.ctx.weights))
                scale *= len(self.ctx.dims) if self.how == "arithmetic_mean" else 1
                scale = scale if scale < 2**40 else None
            self.__dict__["_int_scale"] = scale
        return self.__dict__["_int_scale"]

    def level_bound_exact(self, i: int, level: int) -> Fraction | None:
        """An exact per-QID bound (models with a `scale`)."""
        return None

    def per_qid(self, scored: Scored) -> list[float]:
        return [float(v) for v in self.qid_values(scored)]

    def node_bounds(self, lattice: Lattice) -> np.ndarray:
        scale = self.scale()
        if scale is not None:  # exact integer keys: floor(D * weighted bound) per QID
            d = len(lattice.shape)
            per = Fraction(1, d) if self.how == "arithmetic_mean" else Fraction(1)
            tables = [
                np.asarray(
                    [
                        math.floor(self.level_bound_exact(i, lv) * w * per * scale)
                        for lv in range(lo, up + 1)
                    ],
                    dtype=np.int64,
                )
                for i, (lo, up, w) in enumerate(
                    zip(lattice.lower, lattice.upper, self.ctx.weights, strict=True)
                )
            ]
            if self.how == "maximum":
                out = np.full(lattice.shape, np.iinfo(np.int64).min, dtype=np.int64)
                for i, t in enumerate(tables):
                    shape = [1] * d
                    shape[i] = -1
                    out = np.maximum(out, t.reshape(shape))
                return out.reshape(-1)
            return lattice.grid_sum(tables)
        tables = [
            np.asarray([self.level_bound(i, lv) for lv in range(lo, up + 1)], dtype=np.float64)
            for i, (lo, up) in enumerate(zip(lattice.lower, lattice.upper, strict=True))
        ]
        return grid_aggregate(lattice, tables, [float(w) for w in self.ctx.weights], self.how)


def grid_aggregate(
    lattice: Lattice, tables: Sequence[np.ndarray], weights: Sequence[float], how: str
) -> np.ndarray:
    """Flat array over the lattice of the aggregate key of per-QID values `tables[i][level -
    lower_i]` (floats), rounded down so that it never exceeds the exact key of values at or
    above the tables' (`exact.aggregate_key` order: geometric -> product of (v+1)w)."""
    d = len(lattice.shape)
    if how == "geometric_mean":
        out = np.ones(lattice.shape, dtype=np.float64)
        for i, (t, w) in enumerate(zip(tables, weights, strict=True)):
            out = out * ((np.maximum(t, 0.0) + 1.0) * w).reshape(_axis(d, i))
    elif how in ("maximum", "rank"):  # rank: its first (largest) element, `rank.RankKey`
        out = np.full(lattice.shape, -np.inf)
        for i, (t, w) in enumerate(zip(tables, weights, strict=True)):
            out = np.maximum(out, (t * w).reshape(_axis(d, i)))
    else:
        out = np.zeros(lattice.shape, dtype=np.float64)
        for i, (t, w) in enumerate(zip(tables, weights, strict=True)):
            out = out + (t * w).reshape(_axis(d, i))
        if how == "arithmetic_mean":
            out = out / max(d, 1)
    flat = out.reshape(-1)
    return flat - np.abs(flat) * 1e-9


def _axis(d: int, i: int) -> list[int]:
    shape = [1] * d
    shape[i] = -1
    return shape


def exact_int_dot(a: np.ndarray, b: np.ndarray) -> int:
    """sum a*b of non-negative int arrays, exactly (int64 when it cannot overflow)."""
    if a.size == 0:
        return 0
    if float(a.max(initial=0)) * float(b.max(initial=0)) * a.size < 2.0**62:
        return int(np.dot(a.astype(np.int64), b.astype(np.int64)))
    nz = np.flatnonzero(a)
    return sum(int(x) * int(y) for x, y in zip(a[nz].tolist(), b[nz].tolist(), strict=True))

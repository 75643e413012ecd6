"""Information-loss and risk metrics of a node, from its equivalence-class sizes.

DM* (the paper's, El Emam et al.) = sum over kept classes |E|^2 + s^2; ARX's monotone DM* sums
|E|^2 over all classes; DM (Bayardo-Agrawal) = kept |E|^2 + N*s; precision is Sweeney's.
All sums are exact Python integers (a 10-billion-row table overflows int64 squares).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np


def max_suppressed(limit: Fraction, n_records: int) -> int:
    """floor(limit * N), exactly."""
    return math.floor(Fraction(limit) * n_records)


def sum_squares(sizes: np.ndarray) -> int:
    """Exact sum of squares (few distinct sizes, so group them)."""
    if sizes.size == 0:
        return 0
    sizes = sizes.astype(np.int64, copy=False)
    total = int(sizes.sum())
    if total < 3_000_000_000:  # total^2 < 2^63: int64 arithmetic is exact
        return int(np.dot(sizes, sizes))
    values, mult = np.unique(sizes, return_counts=True)
    return sum(int(v) * int(v) * int(m) for v, m in zip(values, mult, strict=True))


@dataclass(frozen=True)
class ClassStats:
    """Outcome of applying k to a node's class sizes."""

    n_records: int
    n_suppressed: int
    n_classes: int  # kept classes
    min_class_size: int  # kept classes; 0 if none
    dm_star: int
    dm_star_arx: int
    dm: int
    passes: bool

    @classmethod
    def of(cls, sizes: np.ndarray, k: int, limit: Fraction) -> ClassStats:
        """`sizes`: any integer dtype (int32 from the search's roll-ups; sums are int64)."""
        sizes = np.asarray(sizes)
        if sizes.dtype.kind not in "iu":
            sizes = sizes.astype(np.int64)
        n = int(sizes.sum(dtype=np.int64))
        small = sizes < k
        s = int(sizes[small].sum(dtype=np.int64))
        kept = sizes[~small]
        kept_sq = sum_squares(kept)
        return cls(
            n_records=n,
            n_suppressed=s,
            n_classes=int(kept.size),
            min_class_size=int(kept.min()) if kept.size else 0,
            dm_star=kept_sq + s * s,
            dm_star_arx=kept_sq + sum_squares(sizes[small]),
            dm=kept_sq + n * s,
            passes=s <= max_suppressed(limit, n),
        )


def precision(levels: tuple[int, ...] | list[int], tops: list[int]) -> float:
    """Sweeney's precision 1 - mean_i(level_i / top_i); a one-level QID contributes 0."""
    terms = [Fraction(lv, t) if t else Fraction(0) for lv, t in zip(levels, tops, strict=True)]
    return float(1 - sum(terms) / len(terms))


def risk(sizes: np.ndarray, k: int) -> dict:
    """Re-identification risk of kept classes: prosecutor risk and records in small classes."""
    sizes = np.asarray(sizes, dtype=np.int64)
    kept = sizes[sizes >= k]
    if kept.size == 0:
        return {"prosecutor_risk_max": 0.0, "prosecutor_risk_avg": 0.0, "share_below_2k": 0.0}
    n = int(kept.sum())
    return {
        "prosecutor_risk_max": 1.0 / int(kept.min()),
        "prosecutor_risk_avg": float(kept.size / n),
        "share_below_2k": float(kept[kept < 2 * k].sum() / n),
    }

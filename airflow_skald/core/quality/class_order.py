"""The order in which the sample-based models suppress classes of one size (docs/design.md §4c, ARX's
``HashGroupifyDistribution``): by each class's own loss under the objective, ascending, where
ARX has one for this (Loss: ``MetricMDNMLoss.getInformationLossInternal(node, entry)``), then
by first record. A class of size c whose label of QID i has domain share num_i / U_i scores
c * num_i / U_i per QID, weighted (w_i, divided by the largest) and aggregated as ARX's
``ILMultiDimensional*`` does: geometric mean ``prod (v_i w_i + 1)^(1/d) - 1``, arithmetic mean,
sum, maximum, rank (the weighted values largest first, lexicographically: ADR 0043). ARX
compares those doubles; here they are compared exactly (ADR 0041).

Vectorised: the classes' share vectors are made unique, ordered by a float key, and only
distinct vectors whose float keys are too close to tell apart are compared as integers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from airflow_skald.core.quality.rank import rank_key

_CLOSE = 1e-9  # relative gap under which two float keys are compared exactly


def loss_ranks(
    nums: Sequence[np.ndarray],
    domains: Sequence[int],
    weights: Sequence[Fraction],
    size: int,
    how: str,
) -> np.ndarray:
    """Per class (all of size `size`), a rank of its loss: smaller is smaller, equal is equal.
    `nums[i]`: each class's share numerator of QID i (share = num / domains[i])."""
    if not nums or nums[0].size == 0:
        return np.zeros(nums[0].size if nums else 0, dtype=np.int64)
    matrix = np.stack([np.asarray(n, dtype=np.int64) for n in nums], axis=1)
    rows, inverse = np.unique(matrix, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    approx = _float_keys(rows, domains, weights, size, how)
    order = np.argsort(approx, kind="stable")
    ranks = np.empty(rows.shape[0], dtype=np.int64)
    ranks[order] = _ranks_in_order(rows[order], approx[order], domains, weights, size, how)
    return ranks[inverse]


def _float_keys(
    rows: np.ndarray, domains: Sequence[int], weights: Sequence[Fraction], size: int, how: str
) -> np.ndarray:
    """Each share vector's aggregate as a float (monotone in the exact key)."""
    per = rows / np.asarray(domains, dtype=np.float64) * np.asarray(weights, dtype=np.float64)
    if how == "geometric_mean":
        return np.log1p(per * size).sum(axis=1)
    if how in ("maximum", "rank"):  # rank: its first element (ties compared exactly)
        return per.max(axis=1)
    return per.sum(axis=1)  # sum, arithmetic mean: the same order (size and d are common)


def _ranks_in_order(
    rows: np.ndarray,
    approx: np.ndarray,
    domains: Sequence[int],
    weights: Sequence[Fraction],
    size: int,
    how: str,
) -> np.ndarray:
    """Dense ranks of share vectors sorted by their float keys: a new rank wherever the gap
    to the previous key is clear; runs of close keys (rare: distinct vectors, near-equal
    losses) are ordered and ranked exactly, one run at a time."""
    gap = np.diff(approx)
    close = gap <= _CLOSE * np.maximum(np.abs(approx[1:]), np.abs(approx[:-1]))
    run = np.r_[0, np.cumsum(~close)]  # runs of close keys, in order
    if not close.any():
        return run
    sub = np.zeros(rows.shape[0], dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, ~close])
    stops = np.r_[starts[1:], rows.shape[0]]
    several = stops - starts > 1
    for a, b in zip(starts[several].tolist(), stops[several].tolist(), strict=True):
        keys = [_exact_key(rows[j], domains, weights, size, how) for j in range(a, b)]
        distinct = sorted(set(keys))
        sub[a:b] = [distinct.index(k) for k in keys]
    combined = run * rows.shape[0] + sub
    return np.unique(combined, return_inverse=True)[1].reshape(-1)


def _exact_key(
    row: np.ndarray, domains: Sequence[int], weights: Sequence[Fraction], size: int, how: str
) -> Fraction:
    """The class's loss key exactly (ARX's aggregate up to a monotone map)."""
    per = [Fraction(int(n), int(u)) * w for n, u, w in zip(row, domains, weights, strict=True)]
    if how == "geometric_mean":
        return math.prod((size * v + 1 for v in per), start=Fraction(1))
    if how == "maximum":
        return max(per)
    if how == "rank":
        return rank_key(per)  # type: ignore[return-value]
    return sum(per, Fraction(0))

"""The tie order of nodes of equal loss (docs/design.md §4): higher precision first, then the
levels in priority order, finer first; `HEIGHT_FIRST` puts the smaller sum of levels before
precision (docs/design.md §4d: ARX's multi-dimensional models and AECS).

A strategy object a quality model names (`Metric.ties`); the search ranks every node by it
once (`TieOrder.rank`), a permutation of 0..n-1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from airflow_skald.core.lattice.grid import INT_LIMIT, Lattice


def generalisation_cost(nodes: np.ndarray, tops: Sequence[int]) -> np.ndarray:
    """Integer proportional to sum_i level_i/top_i (so lower = higher precision), exactly."""
    positive = [t for t in tops if t > 0]
    lcm = math.lcm(*positive) if positive else 1
    weights = [lcm // t if t > 0 else 0 for t in tops]
    if lcm * max(1, sum(tops)) < INT_LIMIT:
        return nodes.astype(np.int64) @ np.asarray(weights, dtype=np.int64)
    return (nodes.astype(object) * np.asarray(weights, dtype=object)).sum(axis=1)


def _cost_terms(lattice: Lattice, tops: Sequence[int]) -> tuple[list[list[int]], int]:
    positive = [t for t in tops if t > 0]
    lcm = math.lcm(*positive) if positive else 1
    terms = [
        [lv * (lcm // t) if t > 0 else 0 for lv in range(lo, u + 1)]
        for lo, u, t in zip(lattice.lower, lattice.upper, tops, strict=True)
    ]
    return terms, lcm


def lattice_cost(lattice: Lattice, tops: Sequence[int]) -> np.ndarray:
    """generalisation_cost of every node (int64 when exact, else dense int ranks of it)."""
    terms, lcm = _cost_terms(lattice, tops)
    if lcm * max(1, sum(tops)) < INT_LIMIT:
        return lattice.grid_sum(terms)
    exact = generalisation_cost(lattice.nodes, tops)
    return np.unique(exact, return_inverse=True)[1].reshape(-1).astype(np.int64)


class TieOrder:
    """Higher precision first, then levels in priority order, lexicographic, finer first."""

    def cost(self, lattice: Lattice, tops: Sequence[int]) -> np.ndarray:
        """Per node, an int64 key ordered as the tie order before the priority levels."""
        return lattice_cost(lattice, tops)

    def rank(self, lattice: Lattice, tops: Sequence[int], priority: Sequence[int]) -> np.ndarray:
        """Every node's position in the tie order: a permutation of 0..n-1 (int64)."""
        n = len(lattice)
        cost = self.cost(lattice, tops)
        # the priority levels as one mixed-radix number (priority[0] most significant) ...
        terms = [np.zeros(s, dtype=np.int64) for s in lattice.shape]
        weight = 1
        for p in reversed(priority):
            terms[p] = np.arange(lattice.shape[p], dtype=np.int64) * weight
            weight *= lattice.shape[p]
        levels = lattice.grid_sum(terms)
        if int(cost.max(initial=0)) < INT_LIMIT // max(n, 1):  # ... and cost before it: one key
            order = np.argsort(cost * n + levels, kind="stable")
        else:
            order = np.lexsort([levels, cost])
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n, dtype=np.int64)
        return rank


class HeightFirst(TieOrder):
    """The smaller sum of levels first, then as `TieOrder` (docs/design.md §4d)."""

    def cost(self, lattice: Lattice, tops: Sequence[int]) -> np.ndarray:
        cost = super().cost(lattice, tops)  # the sum of levels, then this, as one dense rank
        height = lattice.heights.astype(np.int64)
        span = int(cost.max(initial=0)) + 1
        if int(height.max(initial=0)) < INT_LIMIT // span:
            return height * span + cost
        cost = np.unique(np.stack([height, cost]), axis=1, return_inverse=True)[1]
        return cost.reshape(-1).astype(np.int64)


PRECISION_FIRST = TieOrder()
HEIGHT_FIRST = HeightFirst()


def static_rank(
    lattice: Lattice, tops: Sequence[int], priority: Sequence[int], ties: TieOrder = PRECISION_FIRST
) -> np.ndarray:
    """Every node's position in the tie order `ties` (a permutation of 0..n-1, int64)."""
    return ties.rank(lattice, tops, priority)


def best_by_precision(
    lattice: Lattice, candidates: np.ndarray, tops: Sequence[int], priority: Sequence[int]
) -> int | None:
    """The candidate with the highest precision; ties by levels in priority order, finer first."""
    candidates = np.asarray(candidates, dtype=np.int64)
    if candidates.size == 0:
        return None
    cost = lattice_cost(lattice, tops)[candidates]  # one int per candidate, no level table
    tied = candidates[cost == cost.min()]
    idx = np.unravel_index(tied, lattice.shape)
    keys = [idx[p] for p in reversed(priority)]
    return int(tied[np.lexsort(keys)[0]]) if keys else int(tied[0])

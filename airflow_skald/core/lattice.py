"""The generalisation lattice: nodes, predictive tagging, and the optimal-node search.

Nodes are rows of a small integer array, so "every generalisation of n" is one vectorised
comparison. A monotone predicate (fits in RAM; k-anonymous within the suppression limit) is
classified with predictive tagging: evaluate a node from the middle of what is still unknown;
a pass tags every node above it as passing, a fail every node below it as failing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

MAX_NODES = 20_000_000


@dataclass
class Lattice:
    """All nodes with lower[i] <= level_i <= upper[i], in lexicographic order."""

    lower: tuple[int, ...]
    upper: tuple[int, ...]
    nodes: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        sizes = [u - lo + 1 for lo, u in zip(self.lower, self.upper, strict=True)]
        if math.prod(sizes) > MAX_NODES:
            raise ValueError(f"lattice of {math.prod(sizes)} nodes is too large to search")
        grids = np.indices(sizes, dtype=np.int16).reshape(len(sizes), -1).T
        self.nodes = grids + np.asarray(self.lower, dtype=np.int16)

    def __len__(self) -> int:
        return int(self.nodes.shape[0])

    @property
    def heights(self) -> np.ndarray:
        return self.nodes.sum(axis=1, dtype=np.int64)

    def node(self, i: int) -> tuple[int, ...]:
        return tuple(int(x) for x in self.nodes[i])

    def above(self, i: int) -> np.ndarray:
        """Mask of the nodes that generalise node i (including itself)."""
        return np.all(self.nodes >= self.nodes[i], axis=1)

    def below(self, i: int) -> np.ndarray:
        return np.all(self.nodes <= self.nodes[i], axis=1)


def classify(lattice: Lattice, passes: Callable[[int], bool]) -> tuple[np.ndarray, list[int]]:
    """Pass/fail of every node for a predicate monotone upwards, by predictive tagging.

    Returns the pass mask and the indices of the nodes actually evaluated, in order.
    """
    status = np.zeros(len(lattice), dtype=np.int8)  # 0 unknown, 1 pass, -1 fail
    heights = lattice.heights
    evaluated: list[int] = []
    while True:
        unknown = np.flatnonzero(status == 0)
        if unknown.size == 0:
            break
        i = _middle(unknown, heights)
        evaluated.append(i)
        _tag(lattice, status, i, passes(i))
    return status == 1, evaluated


def generalisation_cost(nodes: np.ndarray, tops: Sequence[int]) -> np.ndarray:
    """Integer proportional to sum_i level_i/top_i (so lower = higher precision), exactly."""
    positive = [t for t in tops if t > 0]
    lcm = math.lcm(*positive) if positive else 1
    weights = np.asarray([lcm // t if t > 0 else 0 for t in tops], dtype=object)
    return (nodes.astype(object) * weights).sum(axis=1)


def best_by_precision(
    lattice: Lattice, candidates: np.ndarray, tops: Sequence[int], priority: Sequence[int]
) -> int | None:
    """The candidate with the highest precision; ties by levels in priority order, finer first."""
    if candidates.size == 0:
        return None
    cost = generalisation_cost(lattice.nodes[candidates], tops)
    nodes = lattice.nodes[candidates]
    j = min(
        range(candidates.size),
        key=lambda j: (cost[j], tuple(int(nodes[j, p]) for p in priority)),
    )
    return int(candidates[j])


def _exceeds(bound: float | np.ndarray, best: float) -> bool | np.ndarray:
    """bound > best (elementwise for arrays), with a margin for float rounding of huge exact integers (never over-prune)."""
    return bound > best * (1 + 1e-12)


@dataclass
class SearchOutcome:
    """What the optimal-node search found, with the counters an auditor wants."""

    best: int | None
    evaluated: int
    passing: int  # nodes known to pass (evaluated or tagged)
    pruned: int = 0  # nodes never classified: their DM* lower bound exceeds the best score
    scores: dict[int, tuple] = field(default_factory=dict)


def _tag(lattice: Lattice, status: np.ndarray, i: int, passed: bool) -> None:
    """Predictive tagging: a pass tags every unknown node above i, a fail every one below."""
    if passed:
        status[lattice.above(i) & (status == 0)] = 1
    else:
        status[lattice.below(i) & (status == 0)] = -1


def _middle(candidates: np.ndarray, heights: np.ndarray) -> int:
    """A node from the middle height of a region (most tagging per evaluation, as OLA)."""
    h = heights[candidates]
    mid = (int(h.min()) + int(h.max())) // 2
    level = candidates[h == mid]
    if level.size == 0:
        level = candidates[np.abs(h - mid) == np.abs(h - mid).min()]
    return int(level[level.size // 2])


def search_optimal(
    lattice: Lattice,
    evaluate: Callable[[int], tuple[bool, int, int]],
    tops: Sequence[int],
    priority: Sequence[int],
) -> SearchOutcome:
    """Minimise DM* over passing nodes; ties by precision, then priority (SPEC §4).

    `evaluate(i)` returns (passes, dm_star, dm_star_arx). Pass/fail is tagged predictively
    (a pass tags every node above, a fail every node below). ARX's DM* of an evaluated node is
    a lower bound of the paper's DM* of every node above it (merging classes never lowers
    sum |E|^2, and suppressed |E|^2 sums to at most s^2), so nodes whose bound exceeds the
    best score found so far are neither classified nor scored; ties are always evaluated.
    """
    n = len(lattice)
    status = np.zeros(n, dtype=np.int8)  # 0 unknown, 1 pass, -1 fail
    bound = np.zeros(n, dtype=np.float64)
    heights = lattice.heights
    cost = generalisation_cost(lattice.nodes, tops)
    scores: dict[int, tuple[bool, int, int]] = {}
    state: dict[str, int | None] = {"best": None}

    def rank(i: int) -> tuple:
        return (scores[i][1], cost[i], tuple(int(lattice.nodes[i, p]) for p in priority))

    def best_dm() -> float:
        best = state["best"]
        return math.inf if best is None else float(scores[best][1])

    def run(i: int) -> None:
        scores[i] = evaluate(i)
        passes, _, arx = scores[i]
        _tag(lattice, status, i, passes)
        if passes and (state["best"] is None or rank(i) < rank(state["best"])):
            state["best"] = i
        _raise_bound(lattice, bound, i, arx)

    while True:
        relevant = np.flatnonzero((status == 0) & ~_exceeds(bound, best_dm()))
        if relevant.size == 0:
            break
        run(_middle(relevant, heights))
    initial = bound.copy()
    for i in sorted(
        np.flatnonzero(status == 1).tolist(), key=lambda j: (initial[j], heights[j], j)
    ):
        if _exceeds(initial[i], best_dm()):
            break
        if i not in scores and not _exceeds(bound[i], best_dm()):
            run(i)
    return SearchOutcome(
        state["best"], len(scores), int((status == 1).sum()), int((status == 0).sum()), scores
    )


def _raise_bound(lattice: Lattice, bound: np.ndarray, i: int, value: int) -> None:
    mask = lattice.above(i)
    np.maximum(bound, np.where(mask, float(value), 0.0), out=bound)

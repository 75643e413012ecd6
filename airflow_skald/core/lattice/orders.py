"""The order in which the optimal-node search evaluates nodes: strategy objects a quality
model names (`Metric.search_order`). The answer never depends on it, only the nodes evaluated.

- `LowestFirst` (Flash-like): the lowest alive node (ties: the static tie order) is evaluated,
  as a large bound there clears everything above it; then an upward path of alive nodes from
  it, each step to the successor of least bound (ties: the QID relatively least generalised),
  checked top first (a fail there clears the whole path and more below it), then in
  binary-search order (a fail clears the path below, a large bound the path above).
- `HighestFirst`: as `LowestFirst` until a passing node is known, then the highest alive node
  next, as its fail clears every node below it (with bounds known for every node, the alive
  nodes are then those whose bound can still win, and a lowest-first order tags little there).
  `climb_fails`: before that node, the unknown nodes of a balanced upward path from it are
  checked in binary-search order, since a fail high up tags more of the alive nodes than the
  node's own fail (height and precision: once a best is known the alive nodes are the lower
  ones, and most fail). They may be nodes that cannot win: evaluating them tags, never changes
  the best.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from airflow_skald.core.lattice.grid import Lattice
from airflow_skald.core.lattice.state import SearchState


class SearchOrder:
    """Walks the lattice, evaluating nodes through `SearchState.run` until none is alive."""

    def walk(self, state: SearchState) -> None:
        raise NotImplementedError


class LowestFirst(SearchOrder):
    def walk(self, state: SearchState) -> None:
        steps = FlashSteps(state)
        while steps.step():
            pass


@dataclass(frozen=True)
class HighestFirst(SearchOrder):
    climb_fails: bool = False

    def walk(self, state: SearchState) -> None:
        steps = FlashSteps(state)
        while state.best.index is None:
            if not steps.step():
                return
        lattice, alive = state.lattice, state.alive
        descending = np.lexsort((state.rank, -lattice.heights)).astype(np.int32)
        high = 0
        while True:
            high = next_alive(alive, descending, high)
            if high >= descending.size:
                return
            node = int(descending[high])
            if self.climb_fails:
                steps.check_above(node)
            if alive[node]:
                state.run(node)


LOWEST_FIRST = LowestFirst()
HIGHEST_FIRST = HighestFirst()
HIGHEST_FIRST_CLIMBING = HighestFirst(climb_fails=True)


def default_order(node_bounds: np.ndarray | None) -> SearchOrder:
    """Highest alive first once a best is known when every node's bound is known in advance
    (node-only quality models), else lowest first."""
    return HIGHEST_FIRST if node_bounds is not None else LOWEST_FIRST


class FlashSteps:
    """The lowest-first steps over one search's state: each evaluates the lowest alive node,
    then an upward path of alive nodes from it (module docstring)."""

    def __init__(self, state: SearchState):
        self.state = state
        lattice = state.lattice
        self.order = np.lexsort((state.rank, lattice.heights)).astype(np.int32)  # lowest first
        self.climb = climb_keys(lattice)
        self.cursor = 0

    def step(self) -> bool:
        """One lowest alive node and its path; False when no node is alive."""
        state = self.state
        self.cursor = next_alive(state.alive, self.order, self.cursor)
        if self.cursor >= self.order.size:
            return False
        start = int(self.order[self.cursor])
        state.run(start)
        path = self.path_up(start)
        top = len(path) - 1
        for k in [top, *(k + 1 for k in binary_order(top - 1))] if top else []:
            if state.alive[path[k]]:
                state.run(path[k])
        return True

    def path_up(self, start: int) -> list[int]:
        """From `start`, each step to the alive successor of least bound (a balanced climb)."""
        lattice, alive, bound = self.state.lattice, self.state.alive, self.state.bounds.flat
        hi, lo = self.climb
        path = [start]
        while True:
            nxt = [j for j in lattice.successors(path[-1]) if alive[j]]
            if not nxt:
                return path
            path.append(min(nxt, key=lambda j: (bound[j], hi[j], lo[j], j)))

    def check_above(self, i: int) -> None:
        """The unknown nodes of a balanced upward path from i, in binary-search order (a fail
        clears the path below it, a pass above)."""
        state = self.state
        hi, lo = self.climb
        path = [i]
        while True:
            nxt = [j for j in state.lattice.successors(path[-1]) if state.unknown(j)]
            if not nxt:
                break
            path.append(min(nxt, key=lambda j: (hi[j], lo[j], j)))
        for k in binary_order(len(path) - 1):
            if state.unknown(path[k + 1]):
                state.run(path[k + 1])


def next_alive(alive: np.ndarray, order: np.ndarray, cursor: int, chunk: int = 4096) -> int:
    """Position in `order` of the first alive node at or after `cursor` (alive never returns)."""
    n = order.size
    while cursor < n:
        hits = np.flatnonzero(alive[order[cursor : cursor + chunk]])
        if hits.size:
            return cursor + int(hits[0])
        cursor += chunk
    return n


def climb_keys(lattice: Lattice) -> tuple[np.ndarray, np.ndarray]:
    """Per node: the largest relative level (level/top) over QIDs, and minus the smallest. An
    upward path climbs to the successor with the least of these (a balanced climb)."""
    rel = [
        a / max(u, 1) if u > lo else np.full(a.shape, -1.0)
        for a, lo, u in zip(lattice.axes(), lattice.lower, lattice.upper, strict=True)
    ]
    hi = np.full(lattice.shape, -1.0, dtype=np.float32)
    lo_ = np.full(lattice.shape, 2.0, dtype=np.float32)
    for r in rel:
        np.maximum(hi, r, out=hi)
        np.minimum(lo_, np.where(r < 0, 2.0, r), out=lo_)
    return hi.reshape(-1), -lo_.reshape(-1)


def binary_order(m: int) -> list[int]:
    """Positions 0..m-1 of a path in binary-search order (middle first, then each half's)."""
    order: list[int] = []
    spans = [(0, m - 1)]
    while spans:
        lo, hi = spans.pop()
        if lo > hi:
            continue
        mid = (lo + hi) // 2
        order.append(mid)
        spans.extend([(mid + 1, hi), (lo, mid - 1)])
    return order

"""Node histograms rolled up from the root histogram (or the nearest cached finer node).

Used by the search (class sizes of each evaluated node) and the per-chunk baseline.

The sources held are sparse (rollup_sparse.py) or dense (rollup_dense.py). This module has
the cache that picks the source to roll up from (`RollUps`) and `roll_up` from the root.
"""

from __future__ import annotations

import math

import numpy as np

from airflow_skald.core.count.histogram import DENSE_LIMIT, Histogram
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.search.rollup_dense import DenseSource, sum_groups
from airflow_skald.core.search.rollup_sparse import SLICE, BlockTables, SparseSource

__all__ = ["RollUps", "roll_up", "sum_groups"]

CACHE_FACTOR = 2  # the roll-up cache holds at most this many times the root's bytes (ADR 0004)
CACHE_FLOOR = 64 << 20  # ... or this many bytes, if more (a small root's cache is not tight)
KEEP_SHRINK = 2  # a small sparse roll-up is cached when it has at most 1/this of its source's
KEEP_SMALL_BINS = 1 << 16  # bins, and at most this many bins
# Above a large sparse root, nodes of few possible bins are rolled up from dense "hubs": nodes
# below them held as every cell (int32), built once from a sparse source and rolled up further
# one QID at a time as a dense root is (`RollUps`).
HUB_MIN_BINS = 1 << 18  # a sparse source of fewer bins is cheap enough to roll up directly
# fewest_classes: a sparse source of fewer bins is rolled up instead (from 2^15 bins a failing
# node's bound, which stops counting early, costs less than its roll-up's sort: CUP-shaped
# data's search at 5 % suppression ~35 % less CPU, issue 23)
BOUND_MIN_BINS = 1 << 15
HUB_SHARE = 32  # a hub takes at most 1/HUB_SHARE of the cache budget (a (class, value) table's
# hub, holding every value of its classes, twice that: `RollUps(values=True)`) ...
HUB_LIMIT = DENSE_LIMIT  # ... and at most this many cells
_SPARSE_COST = 8  # rolling up a sparse bin costs about as much as this many dense cells
_SCORE_LIMIT = 1 << 20  # lattices up to this many nodes: hubs scored by the nodes they newly cover


def roll_up(plan: Plan, hist: Histogram, node: tuple[int, ...]) -> Histogram:
    """The histogram of `node`, merged from the bins of the root histogram `hist`."""
    return SparseSource(plan, plan.root, hist).roll_up(node)


class RollUps:
    """Node histograms rolled up from the cheapest cached node below them, not always the root.

    The root is held dense (int32 cells) when its possible bins are few (<= 2^24), else as sparse
    sorted keys. Dense roll-ups go one QID at a time (largest reduction first) and cache the
    intermediate nodes, which many later nodes share. Sparse roll-ups cache results at least 8x
    smaller than the root. Above a sparse root of many bins (>= HUB_MIN_BINS), a node of few
    possible bins with no dense node cached below it gets a dense hub: the node below it whose
    cells fit (<= 1/HUB_SHARE of the budget) and that lies below the most nodes no dense node
    covers yet, counted from the sparse source in one pass; that node and the later ones above
    the hub are rolled up densely. Hubs and dense steps make room by dropping the least recently
    used cached nodes (steps before hubs). The cache holds at most CACHE_FACTOR times the root's
    bytes (ADR 0004); one more array of the root's bins is the sparse passes' scratch.
    `fewest_classes` bounds a slow node's class count without rolling it up; the class counts
    of the nodes rolled up are remembered (a node above one of few bins is not worth bounding).
    """

    def __init__(self, plan: Plan, root_hist: Histogram, values: bool = False):
        self.plan = plan
        self.dense = root_hist.n_possible <= DENSE_LIMIT
        self._tables = BlockTables()  # the sparse sources' block tables
        root = self._source(plan.root, root_hist)
        self.root_bins = root_hist.n_bins
        self.root_size = root.nbytes
        self.budget = max(CACHE_FACTOR * self.root_size, CACHE_FLOOR)
        self.used = 0
        self.cache: dict[tuple[int, ...], SparseSource | DenseSource] = {}
        self._nodes = np.zeros((0, len(plan.root)), dtype=np.int64)  # cached nodes, as rows
        self._costs = np.zeros(0, dtype=np.int64)  # their roll-up costs (dense cells)
        self._dense_rows = np.zeros(0, dtype=bool)
        self._last: dict[tuple[int, ...], int] = {}  # node -> last use (least recent dropped)
        self._hubs: set[tuple[int, ...]] = set()
        self._tick = 0
        self._shape = tuple(t - r + 1 for r, t in zip(plan.root, plan.tops, strict=True))
        self._uncovered: np.ndarray | None = None  # nodes above no dense cached node
        self._work: np.ndarray | None = None  # see _scratch
        self._seen_nodes = np.zeros((0, len(plan.root)), dtype=np.int64)  # see _known
        self._seen_bins = np.zeros(0, dtype=np.int64)
        self._seen_n = 0
        self._keep(plan.root, root)
        self._dtype = np.int32 if root_hist.n_records < 2**31 else np.int64
        self.hub_cells = 0
        if not self.dense and self.root_bins >= HUB_MIN_BINS:
            share = max(1, HUB_SHARE // 2) if values else HUB_SHARE
            cells = self.budget // (share * np.dtype(self._dtype).itemsize)
            self.hub_cells = int(min(HUB_LIMIT, cells))

    # ------------------------------------------------------------------ the cache
    def _keep(self, node: tuple[int, ...], source: SparseSource | DenseSource) -> None:
        dense = isinstance(source, DenseSource)
        cost = source.size if dense else _SPARSE_COST * source.n_bins
        self.cache[node] = source
        self._nodes = np.vstack([self._nodes, np.asarray(node, dtype=np.int64)[None]])
        self._costs = np.append(self._costs, cost)
        self._dense_rows = np.append(self._dense_rows, dense)
        if len(self.cache) > 1:
            self.used += source.nbytes
        self._touch(node)
        if dense and self._uncovered is not None:
            self._uncovered[self._up(node)] = False

    def _drop(self, node: tuple[int, ...]) -> None:
        source = self.cache.pop(node)
        self._hubs.discard(node)
        self.used -= source.nbytes
        del self._last[node]
        row = np.flatnonzero((self._nodes == np.asarray(node)).all(axis=1))[0]
        self._nodes = np.delete(self._nodes, row, axis=0)
        self._costs = np.delete(self._costs, row)
        self._dense_rows = np.delete(self._dense_rows, row)
        if isinstance(source, DenseSource):
            self._uncovered = None  # recounted when the next hub is chosen

    def _touch(self, node: tuple[int, ...]) -> None:
        self._tick += 1
        self._last.pop(node, None)  # re-inserted: the dict's order is least recent first
        self._last[node] = self._tick

    def _make_room(self, nbytes: int, spare_hubs: bool = False) -> bool:
        """Drop the least recently used cached nodes (never the root; hubs last, or never with
        `spare_hubs`) until `nbytes` fit."""
        if nbytes > self.budget:
            return False
        while self.used + nbytes > self.budget:
            root = self.plan.root
            victim = next((n for n in self._last if n != root and n not in self._hubs), None)
            if victim is None and not spare_hubs:
                victim = next((n for n in self._last if n != root), None)
            if victim is None:
                return False
            self._drop(victim)
        return True

    def _source(self, node: tuple[int, ...], hist: Histogram) -> SparseSource | DenseSource:
        if self.dense:
            return DenseSource(self.plan, node, hist)
        return SparseSource(self.plan, node, hist, self._tables)

    def _closest(self, node: tuple[int, ...], dense_only: bool = False):
        """The cheapest cached node below `node` to roll up from (the root always is one);
        `dense_only`: the cheapest dense one, or None."""
        below = (self._nodes <= np.asarray(node)).all(axis=1)
        if dense_only:
            below &= self._dense_rows
            if not below.any():
                return None
        rows = np.flatnonzero(below)
        best = rows[np.argmin(self._costs[rows])]
        found = tuple(int(x) for x in self._nodes[best])
        self._touch(found)
        return self.cache[found]

    # ------------------------------------------------------------------ roll-ups
    def get(self, node: tuple[int, ...]) -> Histogram:
        """The node's histogram."""
        found = self._find(node)
        hist = found if isinstance(found, Histogram) else found.hist
        self._known(node, hist.n_bins)
        return hist

    def sizes(self, node: tuple[int, ...]) -> np.ndarray:
        """The node's class sizes, in any order (all that evaluating a node needs)."""
        found = self._find(node)
        sizes = found.counts if isinstance(found, Histogram) else found.counts()
        self._known(node, sizes.size)
        return sizes

    def _known(self, node: tuple[int, ...], bins: int) -> None:
        """Remember a node's non-empty bins: every node above has no more (`fewest_classes`)."""
        if self.dense:
            return
        if self._seen_n == len(self._seen_bins):
            grow = max(64, 2 * self._seen_n)
            self._seen_nodes = np.resize(self._seen_nodes, (grow, len(node)))
            self._seen_bins = np.resize(self._seen_bins, grow)
        self._seen_nodes[self._seen_n] = node
        self._seen_bins[self._seen_n] = bins
        self._seen_n += 1

    def _find(self, node: tuple[int, ...]) -> Histogram | DenseSource:
        if node in self.cache:
            self._touch(node)
            found = self.cache[node]
            return found if isinstance(found, DenseSource) else found.hist
        if self.dense:
            return self._dense_from(self._closest(node), node)
        source = self._closest(node)
        if isinstance(source, SparseSource) and self._wants_hub(source, node):
            source = self._closest(node, dense_only=True) or self._hub(node) or source
        if isinstance(source, DenseSource):
            return self._dense_from(source, node)
        out = source.roll_up(node, self._scratch())
        # kept: a result 8x smaller than the root, if it fits; or a small one at most half its
        # source, making room (nodes above it roll up from it: a search climbing paths of
        # small nodes, e.g. (class, value) tables of t-closeness, rolls up from its last steps)
        small = out.n_bins <= KEEP_SMALL_BINS and out.n_bins * KEEP_SHRINK <= source.n_bins
        if out.n_bins * 8 <= self.root_bins or small:
            kept = SparseSource(self.plan, node, out, self._tables)
            fits = self.used + kept.nbytes <= self.budget
            if fits or (small and self._make_room(kept.nbytes, spare_hubs=True)):
                self._keep(node, kept)
        return out

    def fewest_classes(self, node: tuple[int, ...], enough: int, ignore=()) -> int | None:
        """A lower bound of the node's non-empty bins when rolling the node up would be slow (a
        node of many possible bins above a sparse root of at least BOUND_MIN_BINS bins,
        `SparseSource.distinct_at_least`),
        counted until it exceeds `enough`; None when the roll-up is cheap or the count could
        not exceed `enough` (the source's bins, or the node's possible bins, are no more)."""
        if self.dense or self.root_bins < max(BOUND_MIN_BINS, enough + 1) or node in self.cache:
            return None  # no source is large enough to be slow, or to hold more bins
        radices = self.plan.radices(node)
        if math.prod(radices) <= self.hub_cells:  # a hub serves it
            return None
        if math.prod(r for i, r in enumerate(radices) if i not in ignore) <= enough:
            return None
        source = self._closest(node)
        if not isinstance(source, SparseSource) or source.n_bins < max(BOUND_MIN_BINS, enough + 1):
            return None
        n = self._seen_n
        below = (self._seen_nodes[:n] <= np.asarray(node)).all(axis=1)
        if np.any(self._seen_bins[:n][below] <= enough):  # a finer node has no more bins
            return None
        return source.distinct_at_least(node, enough, ignore)

    def _scratch(self) -> np.ndarray | None:
        """One int64 array of the root's bins, reused by every sparse pass for its keys (None:
        a root of one slice, whose passes need none)."""
        if self.root_bins <= SLICE:
            return None
        if self._work is None:
            self._work = np.empty(self.root_bins, dtype=np.int64)
        return self._work

    def _wants_hub(self, source: SparseSource, node: tuple[int, ...]) -> bool:
        return (
            self.hub_cells > 0
            and source.n_bins >= HUB_MIN_BINS
            and math.prod(self.plan.radices(node)) <= self.hub_cells
        )

    def _dense_from(self, source: DenseSource, node: tuple[int, ...]) -> DenseSource:
        """Raise `source` to `node` one QID at a time, caching the steps (when they fit)."""
        for axis in source.steps(node):
            step = list(source.node)
            step[axis] = node[axis]
            step = tuple(step)
            if isinstance(self.cache.get(step), DenseSource):
                self._touch(step)
                source = self.cache[step]
                continue
            source = source.reduce_axis(axis, node[axis])
            keep = step != node and step not in self.cache
            if keep and self._room_for_step(source.nbytes):
                self._keep(step, source)
        return source

    def _room_for_step(self, nbytes: int) -> bool:
        """Whether a dense step fits: above hubs by dropping older steps (never a hub),
        above a dense root only in room left (its steps are not dropped)."""
        if self.hub_cells:
            return self._make_room(nbytes, spare_hubs=True)
        return self.used + nbytes <= self.budget

    # ------------------------------------------------------------------ hubs
    def _up(self, node: tuple[int, ...]) -> tuple[slice, ...]:
        return tuple(slice(int(x) - r, None) for x, r in zip(node, self.plan.root, strict=True))

    def _hub(self, node: tuple[int, ...]) -> DenseSource | None:
        """A dense hub for `node` (see the class), or None if it cannot be cached."""
        hub = self._hub_node(node)
        if hub == self.plan.root:  # the sparse root itself (only when forced: it would be dense)
            return None
        nbytes = math.prod(self.plan.radices(hub)) * np.dtype(self._dtype).itemsize
        if hub in self.cache:  # a small sparse node, held dense from now on
            self._drop(hub)
        if not self._make_room(nbytes):
            return None
        below = (self._nodes <= np.asarray(hub)).all(axis=1) & ~self._dense_rows
        rows = np.flatnonzero(below)
        at = tuple(int(x) for x in self._nodes[rows[np.argmin(self._costs[rows])]])
        array = self.cache[at].dense_at(hub, self._dtype, self._scratch())
        source = DenseSource(self.plan, hub, None, array)
        self._keep(hub, source)
        self._hubs.add(hub)
        return source

    def _hub_node(self, node: tuple[int, ...]) -> tuple[int, ...]:
        """Among the nodes from the root to `node` whose cells fit a hub, the one below the most
        lattice nodes that no dense cached node covers (on lattices of <= _SCORE_LIMIT nodes;
        else below the most lattice nodes); ties: fewer cells, then the first in C order."""
        plan, root = self.plan, self.plan.root
        sub = tuple(n - r + 1 for n, r in zip(node, root, strict=True))
        d = len(sub)
        cells = np.ones(sub, dtype=np.float64)
        volume = np.ones(sub, dtype=np.float64)
        for i, (r, s) in enumerate(zip(root, sub, strict=True)):
            shape = [1] * d
            shape[i] = s
            levels = np.arange(r, r + s)
            cells = cells * np.asarray(plan.dims[i].cards, dtype=np.float64)[levels].reshape(shape)
            volume = volume * (plan.dims[i].top - levels + 1).astype(np.float64).reshape(shape)
        fits = cells <= self.hub_cells  # exact: products beyond 2^53 are far above the limit
        score = volume
        if math.prod(self._shape) <= _SCORE_LIMIT:
            if self._uncovered is None:
                self._uncovered = np.ones(self._shape, dtype=bool)
                for n in np.flatnonzero(self._dense_rows).tolist():
                    self._uncovered[self._up(tuple(self._nodes[n].tolist()))] = False
            # per candidate, the uncovered nodes above it: each axis's levels beyond `node`
            # summed into its last level (the box shrinks to the candidates), then suffix sums
            suffix = self._uncovered
            for axis, s in enumerate(sub):
                head = suffix[(slice(None),) * axis + (slice(0, s - 1),)]
                tail = suffix[(slice(None),) * axis + (slice(s - 1, None),)]
                tail = tail.sum(axis=axis, keepdims=True, dtype=np.int64)
                suffix = np.concatenate([head, tail], axis=axis)
            for axis in range(d):
                suffix = np.flip(np.cumsum(np.flip(suffix, axis), axis=axis), axis)
            score = suffix.astype(np.float64)
        flat = np.flatnonzero(fits.reshape(-1))
        order = np.lexsort((flat, cells.reshape(-1)[flat], -score.reshape(-1)[flat]))
        best = np.unravel_index(int(flat[order[0]]), sub)
        return tuple(int(x) + r for x, r in zip(best, root, strict=True))

"""Node histograms rolled up from the root histogram (or the nearest cached finer node).

Used by the search (class sizes of each evaluated node) and the per-chunk baseline.
"""

from __future__ import annotations

import numpy as np

from airflow_skald.core.histogram import DENSE_LIMIT, Histogram, strides_of
from airflow_skald.core.plan import Plan

_BLOCK_LIMIT = 1 << 16  # QIDs are grouped so one block's codes index a small lookup table
CACHE_FACTOR = 2  # the roll-up cache holds at most this many times the root's cells (ADR 0004)


class _Source:
    """A histogram prepared for fast roll-ups: QIDs grouped into blocks of few codes each, so a
    roll-up is one gather per block from a small (cache-resident) table instead of a gather,
    a multiply and an add per QID."""

    def __init__(self, plan: Plan, node: tuple[int, ...], hist: Histogram):
        self.plan, self.node, self.hist = plan, node, hist
        cards = plan.radices(node)
        self.blocks: list[list[int]] = [[]]
        size = 1
        for i, c in enumerate(cards):
            if self.blocks[-1] and size * c > _BLOCK_LIMIT:
                self.blocks.append([])
                size = 1
            self.blocks[-1].append(i)
            size *= c
        # a block's code is its QIDs' digits of the key: (key // stride of its last QID) modulo
        # the block's size (two array ops per block, not a divmod per QID and a recombination)
        strides = strides_of(cards)
        self.block_codes = []
        for b in self.blocks:
            size = int(np.prod([cards[i] for i in b], dtype=np.int64))
            code = hist.keys // strides[b[-1]] if strides[b[-1]] > 1 else hist.keys
            self.block_codes.append(code % size if b[0] > 0 else code)
        self.counts = hist.counts.astype(np.int64)

    def _keys(self, node: tuple[int, ...]) -> tuple[np.ndarray, tuple[int, ...], int]:
        """Every source bin's key at `node` (mixed radix), the radices and possible bins."""
        plan = self.plan
        radices = plan.radices(node)
        strides = np.cumprod((radices[1:] + (1,))[::-1], dtype=np.int64)[::-1]
        keys = None
        for block, bc in zip(self.blocks, self.block_codes, strict=True):
            lut = np.zeros(1, dtype=np.int64)
            for i in block:
                contrib = plan.dims[i].level_map(self.node[i], node[i]) * strides[i]
                lut = np.add.outer(lut, contrib).ravel()
            if keys is None:
                keys = np.take(lut, bc)
            else:
                keys += np.take(lut, bc)
        n_possible = int(np.prod(np.asarray(radices, dtype=object)))
        return keys, radices, n_possible

    def roll_up(self, node: tuple[int, ...]) -> Histogram:
        keys, radices, n_possible = self._keys(node)
        k, counts = grouped(keys, self.counts, n_possible)
        return Histogram(radices, k, counts)


def grouped(keys: np.ndarray, counts: np.ndarray, n_possible: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct keys (sorted) and the sum of `counts` of each: a count table when the key space
    is small, else one sort of keys packed with their counts (no stable argsort), else an
    argsort."""
    if keys.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if n_possible <= max(1 << 16, 2 * keys.size):
        table = np.bincount(keys, weights=counts, minlength=n_possible)
        nz = np.flatnonzero(table)
        return nz, table[nz].astype(np.int64)
    count_bits = max(1, int(counts.max()).bit_length())
    if (n_possible - 1).bit_length() + count_bits <= 63:
        packed = np.sort((keys << count_bits) | counts)
        k = packed >> count_bits
        starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
        sums = np.add.reduceat(packed & ((1 << count_bits) - 1), starts)
        return k[starts], sums
    order = np.argsort(keys)
    k = keys[order]
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    return k[starts], np.add.reduceat(counts[order], starts)


def roll_up(plan: Plan, hist: Histogram, node: tuple[int, ...]) -> Histogram:
    """The histogram of `node`, merged from the bins of the root histogram `hist`."""
    return _Source(plan, plan.root, hist).roll_up(node)


def sum_groups(array: np.ndarray, targets: np.ndarray, axis: int) -> np.ndarray:
    """Sum the slices of `array` along `axis` that `targets` maps to the same index.

    One pass over the array, kept in its dtype. Along an outer axis each slice is added whole
    into its target (contiguous, vectorised); `np.add.reduceat` there is 5-15x slower (measured
    on a 9.2M-cell root). Along the innermost axis, or a long axis of tiny slices (one Python
    call per slice would dominate), reduceat over runs of equal targets is used; a collapse to
    one value is a plain sum.
    """
    n_targets = int(targets.max()) + 1
    if n_targets == 1:
        return array.sum(axis=axis, keepdims=True, dtype=array.dtype)
    inner = int(np.prod(array.shape[axis + 1 :], dtype=np.int64))
    if axis == array.ndim - 1 or (array.shape[axis] > 4096 and inner < 1024):
        if np.any(targets[1:] < targets[:-1]):  # a categorical map: equal targets together
            perm = np.argsort(targets, kind="stable")
            array, targets = np.take(array, perm, axis=axis), targets[perm]
        starts = np.flatnonzero(np.r_[True, targets[1:] != targets[:-1]])
        return np.add.reduceat(array, starts, axis=axis, dtype=array.dtype)
    shape = list(array.shape)
    shape[axis] = n_targets
    out = np.zeros(shape, dtype=array.dtype)
    src, dst = np.moveaxis(array, axis, 0), np.moveaxis(out, axis, 0)
    for j, t in enumerate(targets.tolist()):
        np.add(dst[t], src[j], out=dst[t])
    return out


class _DenseSource:
    """A histogram as a dense n-d array of counts: a roll-up is one `add.reduceat` per QID that
    changes level (memory-bandwidth bound), used when the node's possible bins are few.
    Counts are int32 when the records fit (half the memory traffic)."""

    def __init__(self, plan: Plan, node: tuple[int, ...], hist: Histogram, array=None):
        self.plan, self.node = plan, node
        self._hist = hist
        if array is None:
            dtype = np.int32 if hist.n_records < 2**31 else np.int64
            array = hist.dense_counts(dtype).reshape(hist.radices)
        self.array = array

    @property
    def size(self) -> int:
        return int(self.array.size)

    @property
    def hist(self) -> Histogram:
        """This node's histogram (dense-held; not kept here, so the cache stays as budgeted)."""
        if self._hist is not None:
            return self._hist
        return Histogram.from_dense(self.plan.radices(self.node), self.array.reshape(-1))

    def counts(self) -> np.ndarray:
        """The class sizes (non-empty cells), without building keys."""
        flat = self.array.reshape(-1)
        return flat[flat != 0]

    def _maps(self, node: tuple[int, ...]) -> list[np.ndarray]:
        return [d.level_map(a, b) for d, a, b in zip(self.plan.dims, self.node, node, strict=True)]

    def reduce_axis(self, axis: int, level: int) -> _DenseSource:
        """The node with one QID raised to `level` (everything else unchanged)."""
        m = self.plan.dims[axis].level_map(self.node[axis], level)
        node = list(self.node)
        node[axis] = level
        return _DenseSource(self.plan, tuple(node), None, sum_groups(self.array, m, axis))

    def steps(self, node: tuple[int, ...]) -> list[int]:
        """QIDs to raise, largest reduction first (the array shrinks fastest). Every QID whose
        level changes is raised, even by a map that only renumbers its codes (a categorical
        level whose every label has its own parent)."""
        maps = self._maps(node)
        factor = [m.size / (int(m.max()) + 1) for m in maps]
        changed = (i for i in range(len(maps)) if self.node[i] != node[i])
        return sorted(changed, key=lambda i: -factor[i])

    def roll_up(self, node: tuple[int, ...]) -> Histogram:
        current = self
        for axis in self.steps(node):
            current = current.reduce_axis(axis, node[axis])
        flat = current.array.reshape(-1)
        keys = np.flatnonzero(flat)
        return Histogram(
            self.plan.radices(node), keys.astype(np.int64), flat[keys].astype(np.int64)
        )


class RollUps:
    """Node histograms rolled up from the smallest cached node below them, not always the root.

    The root is held dense (int32 cells) when its possible bins are few (<= 2^24), else as sparse
    sorted keys. Dense roll-ups go one QID at a time (largest reduction first) and cache the
    intermediate nodes, which many later nodes share. Sparse roll-ups cache results at least 8x
    smaller than the root (keeping every evaluated node up to half the root's size, oldest
    dropped first, halved the bins rolled up on the 8-QID benchmark but not the time: building
    the sources cost as much). The cache holds at most CACHE_FACTOR times the root's size
    (ADR 0004).
    """

    def __init__(self, plan: Plan, root_hist: Histogram):
        self.plan = plan
        n_possible = root_hist.n_possible
        self.dense = n_possible <= DENSE_LIMIT
        root = self._source(plan.root, root_hist)
        self.root_size = self._size(root)
        self.budget = CACHE_FACTOR * self.root_size
        self.used = 0
        self.cache: dict[tuple[int, ...], _Source | _DenseSource] = {}
        self._nodes = np.zeros((0, len(plan.root)), dtype=np.int64)  # cached nodes, as rows
        self._sizes = np.zeros(0, dtype=np.int64)
        self._keep(plan.root, root)

    def _keep(self, node: tuple[int, ...], source: _Source | _DenseSource) -> None:
        self.cache[node] = source
        self._nodes = np.vstack([self._nodes, np.asarray(node, dtype=np.int64)[None]])
        self._sizes = np.append(self._sizes, self._size(source))

    def _source(self, node: tuple[int, ...], hist: Histogram) -> _Source | _DenseSource:
        return _DenseSource(self.plan, node, hist) if self.dense else _Source(self.plan, node, hist)

    @staticmethod
    def _size(source: _Source | _DenseSource) -> int:
        return source.size if isinstance(source, _DenseSource) else source.hist.n_bins

    def _closest(self, node: tuple[int, ...]) -> _Source | _DenseSource:
        """The smallest cached node below `node` (the root always is)."""
        below = np.flatnonzero((self._nodes <= np.asarray(node)).all(axis=1))
        best = below[np.argmin(self._sizes[below])]
        return self.cache[tuple(int(x) for x in self._nodes[best])]

    def get(self, node: tuple[int, ...]) -> Histogram:
        """The node's histogram."""
        if not self.dense:
            return self._sparse(node)
        return self._dense(node).hist

    def sizes(self, node: tuple[int, ...]) -> np.ndarray:
        """The node's class sizes, in any order (all that evaluating a node needs)."""
        if not self.dense:
            return self._sparse(node).counts
        return self._dense(node).counts()

    def _sparse(self, node: tuple[int, ...]) -> Histogram:
        if node in self.cache:
            return self.cache[node].hist
        out = self._closest(node).roll_up(node)
        if out.n_bins * 8 <= self.root_size and self.used + out.n_bins <= self.budget:
            self._keep(node, self._source(node, out))
            self.used += out.n_bins
        return out

    def _dense(self, node: tuple[int, ...]) -> _DenseSource:
        if node in self.cache:
            return self.cache[node]
        source = self._closest(node)
        for axis in source.steps(node):
            step = list(source.node)
            step[axis] = node[axis]
            step = tuple(step)
            if step in self.cache:
                source = self.cache[step]
                continue
            source = source.reduce_axis(axis, node[axis])
            if step != node and self.used + source.size <= self.budget:
                self._keep(step, source)
                self.used += source.size
        return source

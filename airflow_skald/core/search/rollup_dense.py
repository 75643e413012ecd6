"""Dense roll-ups: a histogram held as an n-d array of counts (`DenseSource`).

A roll-up raises one QID at a time, summing the slices its level map sends to the same
parent (`sum_groups`). `rollups.RollUps` holds these sources: a dense root, its steps and
the hubs above a sparse root.
"""

from __future__ import annotations

import numpy as np

from airflow_skald.core.count.histogram import Histogram, run_starts
from airflow_skald.core.encode.plan import Plan


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
        starts = run_starts(targets)
        return np.add.reduceat(array, starts, axis=axis, dtype=array.dtype)
    shape = list(array.shape)
    shape[axis] = n_targets
    out = np.zeros(shape, dtype=array.dtype)
    src, dst = np.moveaxis(array, axis, 0), np.moveaxis(out, axis, 0)
    for j, t in enumerate(targets.tolist()):
        np.add(dst[t], src[j], out=dst[t])
    return out


class DenseSource:
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
    def nbytes(self) -> int:
        return int(self.array.nbytes)

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

    def reduce_axis(self, axis: int, level: int) -> DenseSource:
        """The node with one QID raised to `level` (everything else unchanged)."""
        m = self.plan.dims[axis].level_map(self.node[axis], level)
        node = list(self.node)
        node[axis] = level
        return DenseSource(self.plan, tuple(node), None, sum_groups(self.array, m, axis))

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

"""Every node of a local recoding step's lattice judged at once (docs/design.md §4f, §4d;
docs/adr/0066): the exhaustive search of a step under k-anonymity with ARX's Loss, in arrays.

A step's records are few root bins (ARX's ``optimizeIterative`` on Adult: 7 to 2,146 of
them), and its search evaluates most of the lattice's nodes (up to all 4,320), each on a
handful of classes: node by node that is Python work per node. Here the bins' classes at a
block of nodes are found by one sort per block, and per node the records it suppresses
(classes under k) and, per QID, the Loss share numerators of the suppressed records. Neither
depends on the gs factor, so the adaptive mode's searches over the same records (only the gs
factor raised) share them. A search is then the exhaustive one (docs/design.md §4: the
passing node of least loss, ties by the tie order): every node's loss in integers, the least
found in floats and confirmed exactly among the nodes within rounding of it (the same
`Loss.values_of` and `MultiDimensional.key_of` as the node-by-node search).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from airflow_skald.core.count.histogram import Histogram, strides_of
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.lattice import Lattice, SearchOutcome
from airflow_skald.core.privacy import PrivacyPolicy, max_suppressed
from airflow_skald.core.quality.loss import Loss
from airflow_skald.core.quality.metric import Metric

CELL_LIMIT = 1 << 24  # bins x nodes: above it a step is searched node by node
BLOCK_CELLS = 1 << 19  # bins x nodes sorted at once
SAFE = 1 << 62
TOLERANCE = 1e-9  # floats within this (relative) of the least loss are compared exactly
#: QID i's domain size U and, per level, each label's share numerator (`QualityContext.shares`)
Shares = Callable[[int], tuple[int, list[np.ndarray]]]


def k_only(policy: PrivacyPolicy) -> int | None:
    """The policy's k when every model keeps classes by their size alone (k-anonymity:
    `PrivacyModel.by_size`; None: the table does not apply)."""
    models = policy.models
    if policy.subset is not None or not models:
        return None
    if not all(m.by_size for m in models):
        return None
    return policy.min_class_size


class StepNodes:
    """Per node of `lattice`, over one step's root bins (`classes`) under k-anonymity: the
    records it suppresses (`suppressed`) and per QID the suppressed records' share
    numerators summed (`shares`, nodes x QIDs; Loss's `sup_n`)."""

    def __init__(
        self, plan: Plan, classes: Histogram, lattice: Lattice, k: int, shares: Shares
    ) -> None:
        self.k, self.n = k, classes.n_records
        sizes = classes.counts.astype(np.int64)
        nodes = lattice.nodes
        labels = _labels(plan, classes.keys, lattice)  # per QID: levels x bins
        strides = strides_of(plan.radices(plan.root))
        codes = [c * s for c, s in zip(labels, strides, strict=True)]  # summed: a class's key
        weights = []  # per QID: levels x bins, a bin's records times its label's numerator
        for i, lo in enumerate(lattice.lower):
            nums = shares(i)[1]
            weights.append(np.stack([nums[lo + j][c] for j, c in enumerate(labels[i])]) * sizes)
        self.suppressed = np.zeros(len(lattice), dtype=np.int64)
        self.shares = np.zeros((len(lattice), len(codes)), dtype=np.int64)
        step = max(1, BLOCK_CELLS // max(1, sizes.size))
        for a in range(0, len(lattice), step):
            rows = (nodes[a : a + step] - np.asarray(lattice.lower, dtype=np.int16)).astype(np.intp)
            small = self._small(codes, rows, sizes)
            self.suppressed[a : a + step] = small @ sizes
            for i, w in enumerate(weights):
                self.shares[a : a + step, i] = np.einsum("nb,nb->n", small, w[rows[:, i]])

    @staticmethod
    def fits(classes: Histogram, lattice: Lattice, shares: Shares, d: int) -> bool:
        """Whether the table is cheap (few bins x nodes) and its integers fit int64."""
        if classes.n_bins * len(lattice) > CELL_LIMIT:
            return False
        most = max(int(shares(i)[0]) for i in range(d))
        return classes.n_records * most < SAFE

    def _small(self, codes: list[np.ndarray], rows: np.ndarray, sizes: np.ndarray) -> np.ndarray:
        """Per node of the block (rows: levels above the lattice's lower node) and bin, 1 where
        the bin's class there has fewer than k records (int64, for the sums)."""
        keys = codes[0][rows[:, 0]].copy()
        for i in range(1, len(codes)):
            keys += codes[i][rows[:, i]]
        order = np.argsort(keys, axis=1)
        ordered = np.take_along_axis(keys, order, axis=1)
        starts = np.ones(ordered.shape, dtype=bool)
        starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
        flat = starts.reshape(-1)
        runs = np.add.reduceat(sizes[order].reshape(-1), np.flatnonzero(flat))
        small_sorted = (runs < self.k)[np.cumsum(flat) - 1].reshape(ordered.shape)
        small = np.empty(ordered.shape, dtype=np.int64)
        np.put_along_axis(small, order, small_sorted, axis=1)
        return small

    def search(
        self,
        lattice: Lattice,
        policy: PrivacyPolicy,
        objective: Metric,
        tops: Sequence[int],
        priority: Sequence[int],
    ) -> SearchOutcome | None:
        """The exhaustive search's outcome under `policy` (its suppression limit; k must be
        the table's) and `objective` (Loss); None where the table does not apply."""
        if type(objective) is not Loss or k_only(policy) != self.k:
            return None
        passes = self.suppressed <= max_suppressed(policy.suppression_limit, self.n)
        count = int(passes.sum())
        if not count:
            return SearchOutcome(None, len(lattice), 0)
        index = np.flatnonzero(passes)
        nums, dens = _loss_terms(objective, lattice, self, index)
        best = _least(objective, index, nums, dens, objective.ties.rank(lattice, tops, priority))
        return SearchOutcome(best, len(lattice), count)


def _labels(plan: Plan, keys: np.ndarray, lattice: Lattice) -> list[np.ndarray]:
    """Per QID, per level of the lattice (levels x bins), each root bin's label code."""
    radices = plan.radices(plan.root)
    strides = strides_of(radices)
    out = []
    for i, (lo, up) in enumerate(zip(lattice.lower, lattice.upper, strict=True)):
        code = (keys // strides[i]) % radices[i]
        dim = plan.dims[i]
        out.append(
            np.stack([dim.level_map(lo, lv)[code] if lv > lo else code for lv in range(lo, up + 1)])
        )
    return out


def _loss_terms(
    loss: Loss, lattice: Lattice, table: StepNodes, index: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per node of `index` and QID, Loss's value as numerator and denominator (`Loss.terms`)."""
    nodes = lattice.nodes[index].astype(np.int64)
    s = table.suppressed[index]
    nums = np.empty((index.size, nodes.shape[1]), dtype=object)
    dens = np.empty(nodes.shape[1], dtype=object)
    for i in range(nodes.shape[1]):
        lo = lattice.lower[i]
        totals = [loss._total(i, lv) for lv in range(lo, lattice.upper[i] + 1)]
        total = np.asarray(totals, dtype=object)[nodes[:, i] - lo]
        sup = table.shares[index, i].astype(object)
        nums[:, i], dens[i] = loss.terms(i, total, sup, s.astype(object))
    return nums, dens


def _least(
    loss: Loss, index: np.ndarray, nums: np.ndarray, dens: np.ndarray, rank: np.ndarray
) -> int:
    """The node of `index` of least exact loss, ties by `rank`: floats first, the nodes
    within rounding of the least compared exactly (`MultiDimensional.key_of`)."""
    approx = _approx(loss, nums, dens)
    close = np.flatnonzero(approx <= approx.min() * (1 + TOLERANCE) + 0.0)
    best = None
    for j in close.tolist():
        values = [loss.fraction(a, b) for a, b in zip(nums[j], dens, strict=True)]
        key = (loss.key_of(values), int(rank[index[j]]))
        if best is None or key < best[0]:
            best = (key, int(index[j]))
    assert best is not None
    return best[1]


def _approx(loss: Loss, nums: np.ndarray, dens: np.ndarray) -> np.ndarray:
    """Each node's aggregate key in floats (within ~1e-15 relative of the exact key); the
    rank aggregate, a tuple, ordered by its largest value (every tie compared exactly)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        dens_f = dens.astype(np.float64)
        values = np.where(dens_f > 0, nums.astype(np.float64) / dens_f, 0.0)
    values = np.maximum(values, 0.0) * np.asarray([float(w) for w in loss.ctx.weights])
    if loss.how == "geometric_mean":
        w = np.asarray([float(w) for w in loss.ctx.weights])
        return np.prod(values + w, axis=1)
    if loss.how in ("maximum", "rank"):
        return values.max(axis=1, initial=0.0)
    return values.sum(axis=1)

"""What the quality models read besides a node's classes, computed once per search from the
plan and the root histogram (so exact over chunks: counts are summed exactly before this).

Per QID: the records per label at every level above the root (the root histogram's marginal
rolled up: non-uniform entropy and Loss's lower bound need nothing else), each label's domain
share as an exact fraction (ARX's DomainShare: hierarchy rows under the label over all rows,
values absent from the data included; for a numerical QID without a hierarchy file the bin's
units over the domain's units), and the settings (gs factor, weights divided by the largest).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from airflow_skald.core.count.histogram import Histogram, strides_of
from airflow_skald.core.encode.dimensions import CategoricalDimension, Dimension, NumericalDimension
from airflow_skald.core.quality.exact import Component
from airflow_skald.core.settings.quality import QualitySettings

#: classes (or root bins) a figure's vector steps take at a time: their scratch arrays stay
#: this size whatever the number of classes (a chosen node's classes grow with the input's
#: records, issue 43), the per-class results alone are whole
BLOCK = 1 << 18

#: why a DP release's manifest and report have no Loss for such QIDs (ADR 0027)
LOSS_LEFT_OUT = (
    "Loss is left out for QIDs whose hierarchy a rule built (and so the aggregate Loss): it "
    "weighs each label by the values found in the whole input, records the sample left out "
    "included, which differential privacy does not allow; list a hierarchy in full to have it"
)


class QualityContext:
    """Per-QID counts and domain shares for every level at or above the root."""

    def __init__(
        self,
        dims: Sequence[Dimension],
        root: Sequence[int],
        classes: Histogram,
        settings: QualitySettings | None = None,
        max_suppressed: int | None = None,
        min_class_size: int = 1,
    ):
        self.dims = list(dims)
        self.root = tuple(int(x) for x in root)
        self.tops = [d.top for d in self.dims]
        self.settings = settings or QualitySettings()
        self.n_records = int(classes.counts.sum(dtype=np.int64)) if classes.counts.size else 0
        # the most records a passing node may suppress (bounds of non-monotone models)
        self.max_suppressed = self.n_records if max_suppressed is None else int(max_suppressed)
        # the fewest records of a class a passing node keeps (the monotone models' k; 1: none)
        self.min_class_size = max(1, int(min_class_size))
        self.weights = self.settings.normalised_weights([d.name for d in self.dims])
        self._classes = classes  # the root marginals, counted on first use (`marginal`)
        self._root_marginals: list[np.ndarray] | None = None
        self._marginal: dict[tuple[int, int], np.ndarray] = {}
        self._shares: dict[int, tuple[int, list[np.ndarray], bool]] = {}
        self._entropy: dict[tuple[int, int], Component] = {}

    @property
    def names(self) -> list[str]:
        return [d.name for d in self.dims]

    def marginal(self, i: int, level: int) -> np.ndarray:
        """Records per label of QID i at `level` (>= the root's level), int64."""
        key = (i, level)
        if key not in self._marginal:
            if self._root_marginals is None:
                radices = [d.cards[lv] for d, lv in zip(self.dims, self.root, strict=True)]
                classes = self._classes
                self._root_marginals = _marginals(classes.keys, classes.counts, radices)
            base = self._root_marginals[i]
            lo = self.root[i]
            if level == lo:
                out = base
            else:
                lut = self.dims[i].level_map(lo, level)
                out = np.bincount(lut, weights=base, minlength=self.dims[i].cards[level])
                out = np.rint(out).astype(np.int64)
            self._marginal[key] = out
        return self._marginal[key]

    def shares(self, i: int) -> tuple[int, list[np.ndarray]]:
        """QID i's domain size U and, per level, each label's share numerator (share = n/U)."""
        if i not in self._shares:
            self._shares[i] = _domain_shares(self.dims[i])
        return self._shares[i][:2]

    def shares_from_data(self) -> set[int]:
        """The QIDs whose domain shares count the values found in the input (a rule's
        hierarchy, a numerical domain, or the observed values), not a hierarchy listed in
        full."""
        return {i for i in range(len(self.dims)) if self.shares(i) and self._shares[i][2]}

    def entropy_part(self, i: int, level: int) -> Component:
        """sum_L B_L ln B_L over QID i's labels at `level` (B_L their records)."""
        key = (i, level)
        if key not in self._entropy:
            b = self.marginal(i, level)
            b = b[b > 1]
            vals, mult = np.unique(b, return_counts=True)
            self._entropy[key] = Component(
                [(int(v) * int(m), int(v)) for v, m in zip(vals, mult, strict=True)]
            )
        return self._entropy[key]

    def codes(self, keys: np.ndarray, node: Sequence[int]) -> list[np.ndarray]:
        """Each QID's label code of class keys at `node` (mixed radix, first QID first)."""
        return [self.code(keys, node, i) for i in range(len(self.dims))]

    def code(self, keys: np.ndarray, node: Sequence[int], i: int) -> np.ndarray:
        """QID i's label code of class keys at `node` (one QID's: `codes` holds them all)."""
        radices = [d.cards[lv] for d, lv in zip(self.dims, node, strict=True)]
        return (keys // strides_of(radices)[i]) % radices[i]

    def labels(self, i: int, level: int) -> int:
        """Labels of QID i at `level` that hold records."""
        return int(np.count_nonzero(self.marginal(i, level)))


def _marginals(keys: np.ndarray, counts: np.ndarray, radices: Sequence[int]) -> list[np.ndarray]:
    """Records per root code of each QID, `BLOCK` bins at a time (float sums of integer
    counts: exact, in any grouping, below 2^53 records)."""
    out = [np.zeros(int(r)) for r in radices]
    strides = strides_of(radices)
    for lo in range(0, keys.size, BLOCK):
        part, weights = keys[lo : lo + BLOCK], counts[lo : lo + BLOCK]
        for m, s, r in zip(out, strides, radices, strict=True):
            m += np.bincount((part // s) % r, weights=weights, minlength=int(r))
    return [np.rint(m).astype(np.int64) for m in out]


def _domain_shares(dim: Dimension) -> tuple[int, list[np.ndarray], bool]:
    """(U, per level the share numerators of the level's labels, whether they count the
    values found in the input)."""
    if isinstance(dim, NumericalDimension):
        u = int(dim.n_units)
        out = []
        for level, card in enumerate(dim.cards):
            if level == dim.top:
                out.append(np.full(card, u, dtype=np.int64))
                continue
            lo, hi = dim.bounds(level, np.arange(card, dtype=np.int64))
            out.append((hi - lo).astype(np.int64))
        return u, out, True
    hierarchy = getattr(dim, "hierarchy", None)
    if isinstance(dim, CategoricalDimension) and hierarchy is not None:
        table = hierarchy.table
        u = int(table.shape[0])
        out = []
        for level, card in enumerate(dim.cards):
            if level >= table.shape[1]:  # a '*' level appended above the file's columns
                out.append(np.full(card, u, dtype=np.int64))
                continue
            names, per = np.unique(table[:, level].astype(str), return_counts=True)
            pos = np.searchsorted(names, dim.level_labels[level].astype(str))
            pos = np.minimum(pos, len(names) - 1)
            found = names[pos] == dim.level_labels[level].astype(str)
            if not found.all():
                return _observed_shares(dim)
            out.append(per[pos].astype(np.int64))
        return u, out, hierarchy.built
    return _observed_shares(dim)


def _observed_shares(dim: Dimension) -> tuple[int, list[np.ndarray], bool]:
    """Without a hierarchy table: the observed level-0 values are the domain."""
    u = int(dim.cards[0])
    return (
        u,
        [
            np.bincount(dim.level_map(0, level), minlength=card).astype(np.int64)
            if level
            else np.ones(card, dtype=np.int64)
            for level, card in enumerate(dim.cards)
        ],
        True,
    )

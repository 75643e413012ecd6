"""ARX's average equivalence class size (`MetricSDAECS`; LeFevre, DeWitt and Ramakrishnan 2006): `N
/ (kept classes * s_factor + g_factor if any record is suppressed)` (ARX swaps the factors on
purpose: the suppressed records form one more class); its bound is ARX's `N / (all classes *
s_factor)` made tighter with the fewest records of a kept class (`lower_bound`). Exact fractions; a
zero denominator is infinite."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from airflow_skald.core.lattice import HEIGHT_FIRST, LOWEST_FIRST, Lattice
from airflow_skald.core.privacy.model import ClassTable
from airflow_skald.core.quality.context import QualityContext
from airflow_skald.core.quality.exact import round_down
from airflow_skald.core.quality.metric import Metric, Scored


class AECS(Metric):
    name = "aecs"
    ties = HEIGHT_FIRST

    def __init__(self, ctx: QualityContext, aggregate: str | None = None):
        self.ctx = ctx
        self.n = ctx.n_records
        self.g = ctx.settings.g_factor
        self.s = ctx.settings.s_factor
        # factors over a common denominator: bounds in integer arithmetic
        self._den = math.lcm(self.s.denominator, self.g.denominator)
        self._s_int = int(self.s * self._den)
        self._g_int = int(self.g * self._den)
        # with suppression the optimum keeps many classes: a low node, found early bottom-up
        self.search_order = None if ctx.max_suppressed == 0 else LOWEST_FIRST

    def value(self, scored: Scored) -> Any:
        j = scored.judgement
        kept = int(np.count_nonzero(j.kept))
        den = kept * self.s + (self.g if j.n_suppressed else 0)
        return Fraction(self.n) / den if den else math.inf

    def display(self, value: Any) -> float | None:
        return None if value == math.inf else float(value)  # JSON has no infinity

    def node_bounds(self, lattice: Lattice) -> np.ndarray:
        """From the node alone: a node has at most P = prod_i (labels of QID i holding records
        at its level) classes, and keeps at most N // m of them (m: the fewest records of a
        kept class)."""
        d = len(lattice.shape)
        most = np.ones(lattice.shape, dtype=np.float64)
        for i, (lo, up) in enumerate(zip(lattice.lower, lattice.upper, strict=True)):
            labels = [self.ctx.labels(i, lv) for lv in range(lo, up + 1)]
            shape = [1] * d
            shape[i] = -1
            most = most * np.asarray(labels, dtype=np.float64).reshape(shape)
        most = most.reshape(-1)
        m, n = self.ctx.min_class_size, self.n
        kept = np.minimum(most, float(n // m))
        den = kept * float(self.s)  # the largest denominator of a passing node
        if self.ctx.max_suppressed:  # one that suppresses keeps a class and a record fewer
            kept_s = np.minimum(most - 1, float((n - 1) // m))
            den = np.maximum(den, kept_s * float(self.s) + float(self.g))
        finite = den > 0
        out = np.full(den.shape, np.inf)
        out[finite] = float(n) / den[finite]
        out[finite] -= out[finite] * 1e-9  # floats never above the exact bound
        return out

    def lower_bound(self, table: ClassTable) -> float:
        """N over the largest denominator of this node or any node above it that passes
        (ARX's N / (classes * s_factor), made tighter, never above the value). Classes only
        merge upwards, so a node above keeps at most B = (classes here of at least m records)
        + (records here in smaller classes) // m classes of m or more records: each such class
        either holds one of the large classes here (disjoint) or only small ones. A node that
        suppresses keeps at most (classes here) - 1."""
        m = self.ctx.min_class_size
        sizes = table.sizes
        if m > 1:
            small = sizes < m
            most = int(np.count_nonzero(~small)) + int(sizes[small].sum(dtype=np.int64)) // m
        else:
            most = table.n_classes
        den = most * self._s_int  # times self._den
        if self.ctx.max_suppressed:
            den = max(den, min(most, table.n_classes - 1) * self._s_int + self._g_int)
        return round_down(self.n * self._den / den) if den > 0 else math.inf

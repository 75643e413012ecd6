"""ARX's average equivalence class size (`MetricSDAECS`): `N / (kept classes * s_factor
+ g_factor if any record is suppressed)` (ARX swaps the factors on purpose: the suppressed
records form one more class); bound ARX's `N / (all classes * s_factor)`, which only grows
as classes merge. Exact fractions; a zero denominator is infinite."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from airflow_skald.core.lattice import Lattice
from airflow_skald.core.privacy.model import ClassTable
from airflow_skald.core.quality.context import QualityContext
from airflow_skald.core.quality.exact import round_down
from airflow_skald.core.quality.metric import Metric, Scored


class AECS(Metric):
    name = "aecs"
    by_height = True

    def __init__(self, ctx: QualityContext, aggregate: str | None = None):
        self.ctx = ctx
        self.n = ctx.n_records
        self.g = ctx.settings.g_factor
        self.s = ctx.settings.s_factor

    def value(self, scored: Scored) -> Any:
        j = scored.judgement
        kept = int(np.count_nonzero(j.kept))
        den = kept * self.s + (self.g if j.n_suppressed else 0)
        return Fraction(self.n) / den if den else math.inf

    def display(self, value: Any) -> float | None:
        return None if value == math.inf else float(value)  # JSON has no infinity

    def node_bounds(self, lattice: Lattice) -> np.ndarray:
        """From the node alone: a node has at most prod_i (labels of QID i holding records at
        its level) classes, and at most N."""
        d = len(lattice.shape)
        most = np.ones(lattice.shape, dtype=np.float64)
        for i, (lo, up) in enumerate(zip(lattice.lower, lattice.upper, strict=True)):
            labels = [self.ctx.labels(i, lv) for lv in range(lo, up + 1)]
            shape = [1] * d
            shape[i] = -1
            most = most * np.asarray(labels, dtype=np.float64).reshape(shape)
        most = np.minimum(most.reshape(-1), float(self.n))
        den = most * float(self.s) + float(max(Fraction(0), self.g - self.s))
        with np.errstate(divide="ignore"):
            out = np.where(den > 0, float(self.n) / np.where(den > 0, den, 1.0), np.inf)
        return np.where(np.isinf(out), out, out - np.abs(out) * 1e-9)

    def lower_bound(self, table: ClassTable) -> float:
        # ARX's N / (classes * s_factor), widened when g > s (gs < 0.5: one suppressed class
        # counts more than a kept one), so it never exceeds the value here or above
        den = table.n_classes * self.s + max(Fraction(0), self.g - self.s)
        return round_down(float(Fraction(self.n) / den)) if den else math.inf

"""Precision. Sweeney's (2002) `1 - mean_i(level_i / top_i)` (higher is better), the figure
docs/design.md §5 reports as `precision`; and ARX's non-monotone precision (`MetricMDNMPrecision`),
a loss: per QID `((N - s) * g * level/top + s * s_factor) / N`, the arithmetic mean by default. It
needs the node and the suppressed count only; its bound (`g * level/top`, ARX's, when suppression
costs at least that) the node alone."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

from airflow_skald.core.lattice import HIGHEST_FIRST_CLIMBING
from airflow_skald.core.quality.metric import Metric, Scored
from airflow_skald.core.quality.multidim import MultiDimensional


def precision(levels: Sequence[int], tops: Sequence[int]) -> float:
    """A one-level QID (top 0) contributes 0."""
    terms = [Fraction(lv, t) if t else Fraction(0) for lv, t in zip(levels, tops, strict=True)]
    return float(1 - sum(terms) / len(terms))


class Precision(Metric):
    name = "precision"

    def value(self, scored: Scored) -> float:
        return precision(scored.node, scored.tops)


class NMPrecision(MultiDimensional):
    """ARX's non-monotone precision as a loss (the `precision` objective)."""

    name = "precision"
    default_aggregate = "arithmetic_mean"
    node_only = True
    search_order = HIGHEST_FIRST_CLIMBING  # the lower alive nodes mostly fail: tag from above

    def _share(self, i: int, level: int) -> Fraction:
        top = self.ctx.tops[i]
        return Fraction(level, top) if top else Fraction(0)

    def qid_values(self, scored: Scored) -> list[Fraction]:
        n, s = self.ctx.n_records, scored.judgement.n_suppressed
        return [
            ((n - s) * self._share(i, lv) * self.g + s * self.s) / n if n else Fraction(0)
            for i, lv in enumerate(scored.node)
        ]

    def denominators(self) -> list[int]:
        tops = [t for t in self.ctx.tops if t] or [1]
        return [max(self.ctx.n_records, 1), math.lcm(*tops), self.g.denominator, self.s.denominator]

    def level_bound_exact(self, i: int, level: int) -> Fraction:
        """ARX's `g * level/top` when suppression costs at least that much (gs >= 0.5); else
        the value with the most records the policy may suppress (it falls as s grows)."""
        n, most = self.ctx.n_records, self.ctx.max_suppressed
        kept = self._share(i, level) * self.g
        if not n:
            return Fraction(0)
        return min(kept, ((n - most) * kept + most * self.s) / n)

    def level_bound(self, i: int, level: int) -> float:
        return float(self.level_bound_exact(i, level))

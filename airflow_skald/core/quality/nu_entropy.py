"""ARX's monotone non-uniform entropy (`MetricMDNUEntropyPrecomputed`): per QID
`g * sum_v a_v log2(b_v / a_v)`, a_v the records of level-0 value v and b_v those of its label
at the node; suppression is ignored (monotone), so it is the node's alone. Aggregated by sum
(or the arithmetic mean): a sum of logarithms, ordered exactly (`exact.LogScore`).

`sum_v a_v log2(b_v/a_v) = sum_L B_L log2 B_L - sum_v a_v log2 a_v`: the per-label counts B_L
at the node's level come from the root histogram; the second term, the same at every node,
from the counts at the root's level (exact level-0 counts when the root is at level 0 for the
QID; the figure is then entropy lost above the root, `base_levels`)."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from airflow_skald.core.quality.exact import LogScore
from airflow_skald.core.quality.metric import Scored
from airflow_skald.core.quality.multidim import MultiDimensional

_BITS = 1 / math.log(2)


class NUEntropy(MultiDimensional):
    name = "nu_entropy"
    default_aggregate = "sum"
    node_only = True

    @property
    def base_levels(self) -> tuple[int, ...]:
        return self.ctx.root

    def _scale(self) -> Fraction:
        return self.g / (len(self.ctx.dims) if self.how == "arithmetic_mean" else 1)

    def value(self, scored: Scored) -> Any:
        parts = []
        f = self._scale()
        for i, level in enumerate(scored.node):
            w = self.ctx.weights[i] * f
            parts.append((w, self.ctx.entropy_part(i, level)))
            parts.append((-w, self.ctx.entropy_part(i, self.ctx.root[i])))
        return LogScore(parts, scale=_BITS)

    def display(self, value: Any) -> float:
        return float(value)

    def qid_values(self, scored: Scored) -> list[float]:  # type: ignore[override]
        return [self._qid(i, lv) for i, lv in enumerate(scored.node)]

    def per_qid(self, scored: Scored) -> list[float]:
        return self.qid_values(scored)

    def _qid(self, i: int, level: int) -> float:
        """QID i's entropy lost at `level`, in bits, unweighted (times g)."""
        hi, lo = self.ctx.entropy_part(i, level), self.ctx.entropy_part(i, self.ctx.root[i])
        if level == self.ctx.root[i]:
            return 0.0
        return float(self.g) * (hi.approx - lo.approx) * _BITS

    def level_bound(self, i: int, level: int) -> float:
        hi, lo = self.ctx.entropy_part(i, level), self.ctx.entropy_part(i, self.ctx.root[i])
        if level == self.ctx.root[i]:
            return 0.0
        err = 1e-9 * (abs(hi.approx) + abs(lo.approx)) + hi.err + lo.err
        return float(self.g) * (hi.approx - lo.approx - err) * _BITS

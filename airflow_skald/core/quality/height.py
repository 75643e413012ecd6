"""ARX's height (`MetricMDHeight`): per QID its level, summed (weighted); the node alone."""

from __future__ import annotations

from fractions import Fraction

from airflow_skald.core.lattice import HIGHEST_FIRST_CLIMBING
from airflow_skald.core.quality.metric import Scored
from airflow_skald.core.quality.multidim import MultiDimensional


class Height(MultiDimensional):
    name = "height"
    default_aggregate = "sum"
    node_only = True
    search_order = HIGHEST_FIRST_CLIMBING  # the lower alive nodes mostly fail: tag from above

    def qid_values(self, scored: Scored) -> list[Fraction]:
        return [Fraction(int(lv)) for lv in scored.node]

    def denominators(self) -> list[int]:
        return [1]

    def level_bound_exact(self, i: int, level: int) -> Fraction:
        return Fraction(level)

    def level_bound(self, i: int, level: int) -> float:
        return float(level)

"""ARX's DM*: sum over ALL classes (suppressed ones too) of |E|^2; monotone, its own bound."""

from __future__ import annotations

from airflow_skald.core.privacy.model import ClassTable
from airflow_skald.core.quality.metric import Metric, Scored, sum_squares


class DMStarARX(Metric):
    name = "dm_star_arx"
    suppression_blind = True  # every class counts, suppressed or not

    def value(self, scored: Scored) -> int:
        return sum_squares(scored.table.sizes)

    def lower_bound(self, table: ClassTable) -> int:
        return sum_squares(table.sizes)

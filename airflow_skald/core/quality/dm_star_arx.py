"""ARX's DM* (``MetricSDDiscernability``, the monotone discernibility): sum over ALL classes
(suppressed ones too) of |E|^2; monotone, its own bound."""

from __future__ import annotations

from typing import Any

import numpy as np

from airflow_skald.core.privacy.model import ClassTable
from airflow_skald.core.quality.metric import Metric, Scored, sum_squares


class DMStarARX(Metric):
    name = "dm_star_arx"
    suppression_blind = True  # every class counts, suppressed or not

    def value(self, scored: Scored) -> int:
        return sum_squares(scored.table.sizes)

    def lower_bound(self, table: ClassTable) -> int:
        return sum_squares(table.sizes)

    def longest_prefix(
        self, table: ClassTable, kept: np.ndarray, ordered: np.ndarray, best: Any
    ) -> int | None:
        """The loss is the node's whatever it suppresses: every prefix while it is <= `best`,
        none (-1: the node cannot win) above it."""
        if not isinstance(best, int):
            return None
        return None if sum_squares(table.sizes) <= best else -1

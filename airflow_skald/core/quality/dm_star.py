"""DM* as the paper (El Emam et al.) defines it: sum over kept classes |E|^2 + s^2.

Not monotone when suppression changes; its lower bound over every node above is ARX's DM*
(merging classes never lowers sum |E|^2, and the suppressed |E|^2 sum to at most s^2).
"""

from __future__ import annotations

from airflow_skald.core.privacy.model import ClassTable
from airflow_skald.core.quality.metric import Metric, Scored, sum_squares


class DMStar(Metric):
    name = "dm_star"

    def value(self, scored: Scored) -> int:
        s = scored.judgement.n_suppressed
        return sum_squares(scored.kept_sizes) + s * s

    def lower_bound(self, table: ClassTable) -> int:
        return sum_squares(table.sizes)

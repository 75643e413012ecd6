"""DM, the discernibility metric (Bayardo and Agrawal 2005; ARX's ``MetricSDNMDiscernability``):
kept |E|^2 + N * s (each suppressed record costs the table size)."""

from __future__ import annotations

from airflow_skald.core.privacy.model import ClassTable
from airflow_skald.core.quality.metric import Metric, Scored, sum_squares


class DM(Metric):
    name = "dm"

    def value(self, scored: Scored) -> int:
        j = scored.judgement
        return sum_squares(scored.kept_sizes) + j.n_records * j.n_suppressed

    def lower_bound(self, table: ClassTable) -> int:
        return sum_squares(table.sizes)  # s * N >= sum of the suppressed |E|^2

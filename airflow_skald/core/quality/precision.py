"""Sweeney's precision 1 - mean_i(level_i / top_i) (higher is better; a node-level figure)."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from airflow_skald.core.quality.metric import Metric, Scored


def precision(levels: Sequence[int], tops: Sequence[int]) -> float:
    """A one-level QID (top 0) contributes 0."""
    terms = [Fraction(lv, t) if t else Fraction(0) for lv, t in zip(levels, tops, strict=True)]
    return float(1 - sum(terms) / len(terms))


class Precision(Metric):
    name = "precision"

    def value(self, scored: Scored) -> float:
        return precision(scored.node, scored.tops)

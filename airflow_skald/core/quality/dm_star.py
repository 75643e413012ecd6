"""DM* as the paper (El Emam et al. 2009) defines it: sum over kept classes |E|^2 + s^2.

Not monotone when suppression changes; its lower bound over every node above is ARX's DM*
(merging classes never lowers sum |E|^2, and the suppressed |E|^2 sum to at most s^2).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from airflow_skald.core.privacy.model import ClassTable
from airflow_skald.core.quality.metric import Metric, Scored, sum_squares


class DMStar(Metric):
    name = "dm_star"

    def value(self, scored: Scored) -> int:
        s = scored.judgement.n_suppressed
        return sum_squares(scored.kept_sizes) + s * s

    def longest_prefix(
        self, table: ClassTable, kept: np.ndarray, ordered: np.ndarray, best: Any
    ) -> int | None:
        """Suppressing the prefix of length p turns sum |E|^2 + s^2 into
        K - sum_{i<p} e_i^2 + (s0 + sum_{i<p} e_i)^2, which never falls as p grows (each step
        adds 2 (s0 + sum_{i<p} e_i) e_p >= 0): the longest p with that <= `best`, exactly."""
        if not isinstance(best, int):
            return None
        left = table.sizes[kept]
        s0 = table.n_records - int(left.sum(dtype=np.int64))
        base = sum_squares(left)
        if table.n_records < 3_000_000_000:  # every figure below < 2^63: int64 is exact
            cum = np.cumsum(ordered, dtype=np.int64)
            sq = np.cumsum(ordered * ordered, dtype=np.int64)
            loss = base - np.r_[0, sq] + (s0 + np.r_[0, cum]) ** 2
            return int(np.searchsorted(loss, best, side="right")) - 1
        loss, longest = base + s0 * s0, -1  # beyond int64: the same in Python ints
        for p, e in enumerate([*ordered.tolist(), 0]):
            if loss > best:
                break
            longest = p
            loss += 2 * s0 * e  # - e^2 + (s0 + e)^2 - s0^2
            s0 += e
        return longest

    def lower_bound(self, table: ClassTable) -> int:
        return sum_squares(table.sizes)

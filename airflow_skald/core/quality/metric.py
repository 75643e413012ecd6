"""What a quality metric is (after ARX's ``Metric``): the information loss of a node, and, when
the metric has one, a lower bound of the loss of every generalisation of the node (which lets
the search skip scoring nodes that cannot win). All class-based sums are exact integers.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from airflow_skald.core.privacy.model import ClassTable
from airflow_skald.core.privacy.policy import Judgement


def sum_squares(sizes: np.ndarray) -> int:
    """Exact sum of squares (a 10-billion-row table overflows int64 squares: group then)."""
    if sizes.size == 0:
        return 0
    sizes = sizes.astype(np.int64, copy=False)
    total = int(sizes.sum())
    if total < 3_000_000_000:  # total^2 < 2^63: int64 arithmetic is exact
        return int(np.dot(sizes, sizes))
    values, mult = np.unique(sizes, return_counts=True)
    return sum(int(v) * int(v) * int(m) for v, m in zip(values, mult, strict=True))


@dataclass(frozen=True)
class Scored:
    """A node's classes as judged by the privacy policy (all a metric reads)."""

    table: ClassTable
    judgement: Judgement
    node: Sequence[int]
    tops: Sequence[int]

    @property
    def kept_sizes(self) -> np.ndarray:
        return self.table.sizes[self.judgement.kept]

    @property
    def suppressed_sizes(self) -> np.ndarray:
        return self.table.sizes[~self.judgement.kept]


class Metric(ABC):
    """One information-loss metric (lower is better)."""

    name: str = ""

    @abstractmethod
    def value(self, scored: Scored) -> int | float:
        """The loss of the node."""

    def lower_bound(self, table: ClassTable) -> int | None:
        """A lower bound of `value` at this node and every node above it (None: no bound)."""
        return None

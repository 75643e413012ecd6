"""What a quality metric is (after ARX's ``Metric``): the information loss of a node, and, when
the metric has one, a lower bound of the loss of every generalisation of the node (which lets
the search skip scoring nodes that cannot win). All class-based sums are exact integers.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from airflow_skald.core.lattice import PRECISION_FIRST, Lattice, SearchOrder, TieOrder
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
    keys: np.ndarray | None = None  # class keys at the node (models that read labels)

    @property
    def kept_sizes(self) -> np.ndarray:
        return self.table.sizes[self.judgement.kept]

    @property
    def suppressed_sizes(self) -> np.ndarray:
        return self.table.sizes[~self.judgement.kept]


class Metric(ABC):
    """One information-loss metric (lower is better).

    `value` is exact (an int, a Fraction, or an exactly ordered `LogScore`); `display` turns
    it into the figure ARX reports. Bounds are ints (exact) or floats never above the exact
    bound. `node_only`: the value needs the node and the suppressed count, never the classes;
    `needs_keys`: the value reads the suppressed classes' labels (`Scored.keys`).
    `suppression_blind`: the value never depends on which classes a node suppresses (ARX's
    DM*): the search needs only whether some prefix makes the sample-based models hold."""

    name: str = ""
    node_only: bool = False
    needs_keys: bool = False
    suppression_blind: bool = False
    # the search's tie order (HEIGHT_FIRST: smaller sum of levels first, docs/design.md §4d)
    ties: TieOrder = PRECISION_FIRST
    # the search's order of evaluations (`lattice.orders`; None: `orders.default_order`)
    search_order: SearchOrder | None = None
    orders_classes: bool = False  # `class_order` ranks classes of one size (docs/design.md §4c)

    @abstractmethod
    def value(self, scored: Scored) -> Any:
        """The loss of the node."""

    def lower_bound(self, table: ClassTable) -> int | float | None:
        """A lower bound of `value` at this node and every node above it (None: no bound)."""
        return None

    def longest_prefix(
        self, table: ClassTable, kept: np.ndarray, ordered: np.ndarray, best: Any
    ) -> int | None:
        """The longest prefix of `ordered` (the sizes of the `kept` classes in the order the
        sample-based models suppress them) whose suppression, on top of the classes not kept,
        leaves the loss <= `best`; the loss must never fall as the prefix grows. None: no such
        bound (every prefix is tried)."""
        return None

    def class_order(self, keys: np.ndarray, size: int, node: Sequence[int]) -> np.ndarray | None:
        """Ranks of the loss of classes `keys` of `node`, all of `size` records, where ARX
        orders the classes a sample-based model suppresses by it (docs/design.md §4c); None: ARX does
        not (its `HashGroupifyDistribution` list: height, precision, entropy, AECS, DM, DM*)."""
        return None

    def node_bounds(self, lattice: Lattice) -> np.ndarray | None:
        """Per node of the lattice, a lower bound of its value from the node alone (None)."""
        return None

    def display(self, value: Any) -> int | float:
        """The figure reported for an exact value."""
        return value if isinstance(value, int) else float(value)

    def per_qid(self, scored: Scored) -> list[float] | None:
        """The per-QID figures before aggregation (multi-dimensional models), else None."""
        return None

"""The equivalence classes of any node above the root, for the search, the decision and the
per-chunk baseline: class sizes rolled up from the root histogram (k-only), or, when criteria
name sensitive attributes, the (class, value) tables rolled up too (`ClassTable.values`).

The (class, value) table is rolled up as a histogram with one more axis, the value code, that
never changes level (`ValueAxis`), so the same roll-up machinery (`rollups.RollUps`) serves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from airflow_skald.core.count.histogram import Histogram, changes
from airflow_skald.core.count.root_counts import RootCounts
from airflow_skald.core.encode.dimensions import Dimension
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.privacy import ClassTable
from airflow_skald.core.privacy.distributions import ClassValues
from airflow_skald.core.search.rollups import RollUps, roll_up
from airflow_skald.core.transform.research_subset.classes import (
    SubsetFlags,
    subset_classes,
    subset_view,
)


@dataclass
class ValueAxis(Dimension):
    """A sensitive attribute's value codes as a histogram axis with one level (never merged)."""

    name: str = "value"
    cards: list[int] = field(default_factory=list)

    def _level_map(self, src: int, dst: int) -> np.ndarray:
        return np.arange(self.cards[0], dtype=np.int64)


class ClassSource:
    """A node's classes: `table(node)` for judging, `keyed(node)` also gives each class's key
    at the node (aligned with the table), for the decision's suppressed keys."""

    def __init__(
        self,
        plan: Plan,
        counts: RootCounts,
        attributes: Sequence[str] = (),
        subset: SubsetFlags | None = None,
    ):
        # a research subset: its column's (class, flag) table gives each node's classes as
        # the subset's, with their population counts (`research_subset.subset_view`)
        self.subset = subset
        self.subset_rollups: RollUps | None = None
        if subset is not None and not attributes:
            # the subset's classes and the population's, each rolled up as class sizes (as
            # a k-only run's): a node's subset classes are the population classes holding a
            # subset record, so the two align by key (`_subset_table`)
            subset_hist = subset_classes(counts.values[subset.column], subset.mask)
            self.subset_rollups = RollUps(plan, subset_hist)
        elif subset is not None:  # its column first: every population class (ADR 0045)
            attributes = (subset.column, *attributes)
            self._mask = subset.mask
        self.attributes = tuple(dict.fromkeys(attributes))
        self.sizes_only = not self.attributes
        self.rollups = RollUps(plan, counts.classes) if self.sizes_only else None
        self.values: dict[str, tuple[int, RollUps]] = {}
        for a in self.attributes:
            hist = counts.values[a]
            m = int(hist.radices[-1])
            axis_plan = replace(plan, dims=[*plan.dims, ValueAxis(a, [m])], root=(*plan.root, 0))
            self.values[a] = (m, RollUps(axis_plan, hist, values=True))

    def fewest_classes(self, node: tuple[int, ...], enough: int) -> int | None:
        """A lower bound of the node's class count, counted until it exceeds `enough`, when
        that is much cheaper than the node's classes (`RollUps.fewest_classes`), else None.
        With criteria, from the first (class, value) table with the value merged."""
        if self.subset_rollups is not None:  # the subset's classes are those released
            return self.subset_rollups.fewest_classes(node, enough)
        if self.sizes_only:
            return self.rollups.fewest_classes(node, enough)
        if self.subset is not None:
            return None  # population classes may hold no subset record: no bound
        rollups = self.values[self.attributes[0]][1]
        return rollups.fewest_classes((*node, 0), enough, ignore=(len(node),))

    def table(self, node: tuple[int, ...]) -> ClassTable:
        if self.subset_rollups is not None:
            return self.keyed(node)[1]
        if self.sizes_only:
            return ClassTable(self.rollups.sizes(node))
        return self.keyed(node)[1]

    def keyed(self, node: tuple[int, ...]) -> tuple[np.ndarray, ClassTable]:
        if self.subset_rollups is not None:
            return self._subset_table(node)
        if self.sizes_only:
            hist = self.rollups.get(node)
            return hist.keys, ClassTable(hist.counts)
        keys = None
        values: dict[str, ClassValues] = {}
        for a, (m, rollups) in self.values.items():
            hist = rollups.get((*node, 0))
            class_key, code = np.divmod(hist.keys, m)
            new = changes(class_key)
            starts = np.flatnonzero(new)
            index = np.cumsum(new)
            index -= 1
            if keys is None:
                keys = class_key[starts]
            elif self.subset is not None:  # counted over the subset's records: some classes
                # hold none of them (ADR 0045), so rows are placed by the population's keys
                values[a] = ClassValues(
                    keys.size, np.searchsorted(keys, class_key), code, hist.counts
                )
                continue
            values[a] = ClassValues.of_runs(index, code, hist.counts, starts)
        sizes = values[self.attributes[0]].sizes()
        table = ClassTable(sizes, values)
        if self.subset is None:
            return keys, table
        return subset_view(keys, table, self.subset.column, self._mask)

    def _subset_table(self, node: tuple[int, ...]) -> tuple[np.ndarray, ClassTable]:
        """A node's subset classes (sizes = subset records), each with its population
        records: the population class of the same key (`research_subset.subset_view`'s
        table, from two class-size roll-ups)."""
        sub = self.subset_rollups.get(node)
        pop = self.rollups.get(node)
        population = pop.counts[np.searchsorted(pop.keys, sub.keys)].astype(np.int64)
        unreleased = pop.keys.size - sub.keys.size  # population classes without a subset record
        table = ClassTable(
            sub.counts.astype(np.int64), population=population, unreleased=unreleased
        )
        return sub.keys, table


def chunk_distribution(counts: RootCounts) -> Mapping[str, np.ndarray]:
    """Per attribute, the counts per value over the records counted (one chunk's own)."""
    out = {}
    for a, hist in counts.values.items():
        m = int(hist.radices[-1])
        out[a] = np.bincount(hist.keys % m, weights=hist.counts, minlength=m).astype(np.int64)
    return out


@dataclass(frozen=True)
class ClassesAtNode:
    """Phase 2's classes at one node (the chosen one), from the root counts: what the
    transformations count after the search (`transform.hooks_phases.NodeClasses`). `plan` is
    the counts' plan (`at`: taken to the root the counts are at)."""

    plan: Plan
    counts: RootCounts
    node: tuple[int, ...]

    @classmethod
    def at(cls, plan: Plan, counts: RootCounts, node: Sequence[int]) -> ClassesAtNode:
        if counts.node is not None and tuple(counts.node) != tuple(plan.root):
            plan = plan.with_root(counts.node)
        return cls(plan, counts, tuple(node))

    def keyed(
        self, attributes: Sequence[str] = (), subset: SubsetFlags | None = None
    ) -> tuple[np.ndarray, ClassTable]:
        return ClassSource(self.plan, self.counts, attributes, subset).keyed(self.node)

    def sums(self, attribute: str) -> Histogram:
        """A summed attribute's value offsets summed per class at the node."""
        return roll_up(self.plan, self.counts.sums[attribute], self.node)

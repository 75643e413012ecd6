"""The privacy models of a run together with its suppression limit: which classes of a node
are kept, how many records that suppresses, and whether the node passes (docs/design.md §4, §4b).

A class is suppressed when any class-based model refuses it; then each sample-based model
(docs/design.md §4c: average risk, sample uniqueness, population uniqueness, in that order) suppresses
the shortest prefix of the classes left that makes it hold (`sample_based.enforce`). The node
passes iff the suppressed records fit ``floor(limit * N)``. ``monotone_passes`` is the same
test with the monotone models only (the sample-based ones among them only when every
class-based model is monotone, so that it never suppresses more than the full test):
the search may tag predictively on it (a node failing it fails everywhere below; one passing
it passes everywhere above), while ``passes`` must be learned node by node when a model is not
monotone with suppression.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol

import numpy as np

from airflow_skald.core.privacy.at_risk import AtRiskClass
from airflow_skald.core.privacy.k_anonymity import KAnonymity
from airflow_skald.core.privacy.model import ClassTable, PrivacyModel
from airflow_skald.core.privacy.sample_based import Within, enforce, enforce_within


def max_suppressed(limit: Fraction, n_records: int) -> int:
    """floor(limit * N), exactly."""
    return math.floor(Fraction(limit) * n_records)


class SubsetMask(Protocol):
    """A research subset's flag column and which of its value codes mark a released record
    (`transform.research_subset.classes.SubsetFlags`, which the policy only carries)."""

    @property
    def column(self) -> str: ...

    @property
    def mask(self) -> np.ndarray: ...


@dataclass(frozen=True)
class Judgement:
    """One node's classes judged: which are kept, and whether the node passes."""

    kept: np.ndarray  # bool per class
    n_records: int
    n_suppressed: int
    max_suppressed: int
    passes: bool
    monotone_passes: bool
    # the size of the classes whose run the sample-based models' prefix ends inside (0: none):
    # which of them are suppressed follows `ClassTable.first_rows` (the rest never does)
    tie_size: int = 0


@dataclass(frozen=True)
class PrivacyPolicy:
    """The models (k-anonymity first) and the suppression limit a release is made under."""

    models: tuple[PrivacyModel, ...]
    suppression_limit: Fraction
    # a research subset (docs/design.md §4e): classes are the subset's, with population counts
    subset: SubsetMask | None = None

    @classmethod
    def k_anonymity(cls, k: int, suppression_limit: Fraction | int = 0) -> PrivacyPolicy:
        return cls((KAnonymity(int(k)),), Fraction(suppression_limit))

    @property
    def min_class_size(self) -> int:
        """The smallest class any model lets through (ARX's getMinimalClassSize; 1: none)."""
        return max((m.min_class_size for m in self.models), default=1)

    @property
    def all_monotone(self) -> bool:
        return all(m.monotone for m in self.models)

    @property
    def attributes(self) -> tuple[str, ...]:
        """Sensitive attributes whose per-class distributions the models need."""
        return tuple(dict.fromkeys(m.attribute for m in self.models if m.attribute))

    @property
    def sample_based(self) -> tuple[PrivacyModel, ...]:
        return tuple(m for m in self.models if m.sample_based)

    def judge(
        self,
        table: ClassTable,
        top: bool = False,
        within: Within | None = None,
        verdict_only: bool = False,
        any_prefix: bool = False,
    ) -> Judgement:
        """The node's classes judged; `top`: the node is the top node (its one class is left
        out of what the sample-based models see). `within` (the search, when the node's loss
        could not win beyond some prefix): the sample-based models try no longer prefixes, and
        a node that would need one is judged failing (`passes` False; it could not win).

        Without sample-based models, the monotone test also suppresses the classes below the
        largest `smallest_kept` of the class-based models (none of them keeps such a class, and
        k-anonymity at that size is monotone), and it fails when a model's suppression floor
        (`PrivacyModel.judged`: t-closeness) exceeds the limit. `verdict_only` (the search): a
        node failing the monotone test is not judged further; its `kept` and `n_suppressed`
        are then the monotone test's. `any_prefix` (the search, when the loss does not depend on
        what is suppressed): the last sample-based model suppresses some prefix that makes it
        hold, not necessarily the shortest (`passes` is the same; `kept` may differ)."""
        n = table.n_records
        allowed = max_suppressed(self.suppression_limit, n)
        monotone = np.ones(table.n_classes, dtype=bool)
        class_based = [m for m in self.models if not m.sample_based]
        for m in class_based:
            if m.monotone:
                monotone &= m.keeps(table)
        sampled = self.sample_based
        if not sampled:
            smallest = max((m.smallest_kept for m in class_based if not m.monotone), default=1)
            if smallest > 1:
                monotone &= table.sizes >= smallest
            if verdict_only:
                s_mono = n - int(table.sizes[monotone].sum(dtype=np.int64))
                if s_mono > allowed:
                    return Judgement(monotone, n, s_mono, allowed, False, False)
        kept = monotone.copy()
        floor = 0.0  # the most records a model's monotone part says every finer node suppresses
        for m in class_based:
            if not m.monotone:
                keeps, least = m.judged(table)
                kept &= keeps
                floor = max(floor, least)
        cut, tie_size = False, 0
        if sampled:
            kept, cut, tie_size = enforce_within(
                sampled, table, kept, allowed, top, within, any_prefix
            )
            if all(m.monotone for m in class_based):
                mono = tuple(m for m in sampled if m.monotone)
                if mono == sampled and not cut:  # the same models on the same classes
                    monotone = kept
                else:
                    monotone = enforce(mono, table, monotone, allowed, top)
        s_mono = n - int(table.sizes[monotone].sum(dtype=np.int64))
        s = n - int(table.sizes[kept].sum(dtype=np.int64))
        passes = s <= allowed and not cut and floor <= allowed
        monotone_passes = s_mono <= allowed and floor <= allowed
        return Judgement(kept, n, s, allowed, passes, monotone_passes, tie_size)

    def describe(self) -> list[dict]:
        return [m.describe() for m in self.models]

    def figures(self, kept: ClassTable) -> list[dict]:
        """Each criterion with the figure reached over the kept classes (manifest)."""
        return [{**m.describe(), **m.figure(kept)} for m in self.models]

    def at_risk(self, kept: ClassTable, top: int = 5) -> list[AtRiskClass]:
        """Per criterion on a sensitive attribute, the kept classes closest to breaking it."""
        return [row for m in self.models for row in m.at_risk(kept, top)]

    def check_release(self, kept: ClassTable, where: str, top: bool = False) -> list[str]:
        """Why released (kept) classes break a model: one line per broken model. `top`: the
        classes are the top node's one class, which the sample-based models do not see."""
        models = [m for m in self.models if not (top and m.sample_based)]
        return [v for m in models if (v := m.violation(kept, where)) is not None]

    def with_thresholds(self, **values: int) -> PrivacyPolicy:
        """The same policy with another k (the per-chunk baseline's k sweep)."""
        from dataclasses import replace

        models: Sequence[PrivacyModel] = [
            replace(m, **{m.name: values[m.name]}) if m.name in values else m for m in self.models
        ]
        return PrivacyPolicy(tuple(models), self.suppression_limit, self.subset)

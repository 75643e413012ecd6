"""What `skald verify` hands a transformation of a written release (in ARX, the output's
``DataHandleOutput`` a check reads; here the hooks `counted_columns`, `check_classes`,
`kept_counts`, `judged_policy` and `recheck`), as types a transformation reads without
importing the release layer, which sits above it (ADR 0076).

`CountedClasses` names what the checks read of the release's class table (the release
layer's `ReleaseClasses` satisfies it as it is); `CountedRelease` is the release as counted,
`JudgedRelease` as judged without a run (`skald verify`: the policy and distributions read
from the release itself).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # annotations only: no numpy at import (DAG parsing imports the config)
    import numpy as np

    from airflow_skald.core.privacy import ClassTable, PrivacyPolicy


class CountedClasses(Protocol):
    """The written tuples counted over the QIDs, the criteria's attributes and the
    transformations' columns, in that order (the release layer's `ReleaseClasses`)."""

    labels: list[list[str]]  # per column, its labels (codes index them)
    codes: np.ndarray  # (tuples, columns)
    sizes: np.ndarray  # records per tuple
    n_rows: int

    def tables(
        self, n_qids: int, attributes: Sequence[str], sensitive: Mapping[str, Any]
    ) -> tuple[ClassTable, ClassTable]:
        """The all-'*' class and the kept classes (by QID key) with their distributions."""
        ...

    def in_label_order(self) -> CountedClasses:
        """The same tuples, ordered by their labels."""
        ...


@dataclass(frozen=True)
class CountedRelease:
    """A release as counted: its manifest, its classes over its `n_qids` QIDs first, a
    transformation's counted columns from column `start`, and whether its all-'*' class is
    the released top node's (`top_released`) rather than the suppressed records."""

    manifest: Mapping[str, Any] | None
    classes: CountedClasses
    n_qids: int
    start: int
    top_released: bool


@dataclass(frozen=True)
class JudgedRelease:
    """A release judged without a run (`skald verify`): its folder and manifest, its classes
    over its `n_qids` QIDs, the distributions it is judged with (`sensitive`), the policy its
    manifest describes (`policy`, before a transformation narrows it) and the attributes whose
    distribution over every input record the release keeps (`overall`: dropped records)."""

    path: str
    manifest: Mapping[str, Any] | None
    classes: CountedClasses
    n_qids: int
    sensitive: Mapping[str, Any]
    policy: PrivacyPolicy
    overall: tuple[str, ...]


class KeptCounts(Protocol):
    """Per-class counts a release keeps beside its parts for `skald verify` (a research
    subset's population counts: `transform.research_subset.counts`), read and checked once:
    what the models are rebuilt knowing (`context`: fields of `privacy.model.RebuildContext`)
    and the release's class tables with its counts (`on_tables`: VerificationError, one line,
    when the parts' classes are not those it counts)."""

    @property
    def context(self) -> Mapping[str, Any]: ...

    def on_tables(
        self, classes: CountedClasses, n_qids: int, star: ClassTable, kept: ClassTable, path: str
    ) -> tuple[ClassTable, ClassTable]: ...


class Recheck(Protocol):
    """A transformation's re-check of a judged release, run once the records are known: its
    entries of `skald verify`'s report."""

    def check(self, n_records: int) -> dict[str, Any]: ...

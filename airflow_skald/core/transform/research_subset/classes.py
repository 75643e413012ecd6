"""How the passes see a node's classes as the research subset's (docs/design.md §4e; ARX's
`DataSubset` under `DPresence`; the package's `ResearchSubset` holds the settings).

The flag column is counted as a two-valued attribute of the (class, value) tables phase 2 already
builds (every population record, with its flag), so one pass gives both counts per class and
they merge exactly over chunks. A node's classes as the models, the objective and the
suppression limit see them are the subset's (`subset_view`): sizes are subset records,
`ClassTable.population` the population records of the same class, classes holding no subset
record are not released and left out. Phase 3 writes the subset's records only, without the
column (`subset_rows`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from airflow_skald.core.count.histogram import Histogram
from airflow_skald.core.errors import DataError
from airflow_skald.core.privacy.model import ClassTable
from airflow_skald.core.transform.research_subset import ResearchSubset

TRUE = frozenset({"true", "1", "yes", "t", "y"})
FALSE = frozenset({"false", "0", "no", "f", "n"})


@dataclass(frozen=True)
class SubsetFlags:
    """The subset's column and, per value code phase 1 gave it, whether it marks a released
    record: what the search needs to see a node's classes as the subset's."""

    column: str
    in_subset: tuple[bool, ...]

    @classmethod
    def of(cls, column: str, values: list) -> SubsetFlags:
        return cls(column, tuple(bool(f) for f in in_subset_codes(column, values)))

    @property
    def mask(self) -> np.ndarray:
        return np.asarray(self.in_subset, dtype=bool)


def flags_of(subset: ResearchSubset | None, sensitive: Any) -> SubsetFlags | None:
    """The subset's flags from phase 1's statistics of its column (None: no subset): built
    once where a pass, the policy or the check needs them, never per chunk."""
    if subset is None:
        return None
    if sensitive is None or subset.column not in sensitive:
        raise ValueError("a research subset needs phase 1's statistics of its column")
    return SubsetFlags.of(subset.column, sensitive[subset.column].values)


def released_records(flags: SubsetFlags | None, n_rows: int, sensitive: Any) -> int:
    """The records a release is made of, as phase 1 counted them: every input record, or the
    research subset's (its flagged values' counts)."""
    if flags is None:
        return n_rows
    counts = np.asarray(sensitive[flags.column].counts, dtype=np.int64)
    return int(counts[flags.mask].sum())


def check_not_empty(subset: ResearchSubset | None, n_rows: int, sensitive: Any) -> None:
    """After phase 1: a subset that selects no input record is refused (one line, nothing
    written; ADR 0031): a release of 0 records would pass every check and say nothing."""
    if subset is None or released_records(flags_of(subset, sensitive), n_rows, sensitive):
        return
    what = (
        f"no key of {subset.keyed.location.path} is a record of the input"
        if subset.keyed is not None
        else f"column '{subset.column}' marks no record of the input"
    )
    raise DataError(f"research_subset: {what}: the release would hold no record (refused)")


def flag_first(subset: ResearchSubset | None, attributes: Sequence[str]) -> tuple[str, ...]:
    """The attributes phase 2 counts per class with the subset's flag first: its (class,
    value) table counts every record, so the class table summed from it is the population's
    (the chunk path and the engines alike)."""
    if subset is None:
        return tuple(attributes)
    return tuple(sorted(attributes, key=lambda a: a != subset.column))


def judged_attributes(config: Any) -> tuple[str, ...]:
    """The attributes criteria name other than the flag: with a research subset, counted over
    the subset's records only (ARX adds a record's sensitive values to its class only when it
    is in the subset, ADR 0045)."""
    subset = config.research_subset
    return tuple(a for a in config.criteria_attributes if subset is None or a != subset.column)


def released_values(
    config: Any, stats: Any
) -> Callable[[pa.Table, dict[str, np.ndarray]], dict[str, np.ndarray]]:
    """Phase 2's filter of one chunk's (class, value) rows: with a research subset, the
    attributes criteria name keep the subset's rows only (ARX adds a record's sensitive values
    to its class only when it is in the subset, ADR 0045); the flag's own table keeps every
    record. Without a subset: the rows as they are."""
    subset = config.research_subset
    if subset is None:
        return lambda table, values: values
    flags = flags_of(subset, stats)
    judged = judged_attributes(config)

    def released(table: pa.Table, values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        column = table.column(subset.column)
        rows = flags.mask[stats[subset.column].codes(column)]
        return {a: v[rows] if a in judged else v for a, v in values.items()}

    return released


def flag_of(value: object) -> bool | None:
    """A stored value of the subset column as a flag (None: not a boolean)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in TRUE:
            return True
        if text in FALSE:
            return False
    return None


def in_subset_codes(column: str, values: list) -> np.ndarray:
    """Per value code of the column (phase 1's sorted distinct values), whether it marks a
    subset record; a value that is not a boolean is an error naming it by position only."""
    flags = [flag_of(v) for v in values]
    for i, f in enumerate(flags):
        if f is None:
            shown = "a null" if values[i] is None else "a value that is not true/false/1/0"
            raise DataError(f"research_subset column '{column}' holds {shown}")
    return np.asarray(flags, dtype=bool)


def subset_view(
    keys: np.ndarray | None, table: ClassTable, column: str, in_subset: np.ndarray
) -> tuple[np.ndarray | None, ClassTable]:
    """A node's population classes (`table`, with the column's per-class distribution) as the
    subset's classes: sizes = subset records, `population` = population records; classes
    without a subset record are left out (nothing of them is released) and counted
    (`ClassTable.unreleased`)."""
    dist = table.values[column]
    subset = dist.class_sum(np.where(in_subset[dist.value], dist.count, 0))
    present = subset > 0
    index = np.flatnonzero(present)
    first = None if table.first_rows is None else table.first_rows[index]
    values = {a: v.subset(index) for a, v in table.values.items()}
    unreleased = table.n_classes - index.size
    view = ClassTable(subset[index], values, first, table.sizes[index], unreleased)
    return (None if keys is None else keys[index]), view


def subset_classes(hist: Histogram, in_subset: np.ndarray) -> Histogram:
    """The subset's class histogram from the (class, flag) histogram (key = class * m + code)."""
    m = int(hist.radices[-1])
    keep = in_subset[hist.keys % m]
    keys, counts = hist.keys[keep] // m, hist.counts[keep]
    # several flag codes of one class may be true (e.g. 'true' and '1'): sum them
    if keys.size > 1 and (keys[1:] == keys[:-1]).any():
        uniq, inv = np.unique(keys, return_inverse=True)
        counts = np.bincount(inv, weights=counts).astype(np.int64)
        keys = uniq
    return Histogram(tuple(hist.radices[:-1]), keys.astype(np.int64), counts.astype(np.int64))


def subset_rows(table: pa.Table, column: str, codes: np.ndarray, in_subset: np.ndarray) -> pa.Table:
    """The chunk's subset records (input order), without the column."""
    table = table.filter(pa.array(in_subset[codes]))
    return table.drop_columns([column])

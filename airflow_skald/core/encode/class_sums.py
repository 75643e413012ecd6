"""Microaggregated QIDs counted as an exact sum per class instead of a (class, value) table
(SPEC §4f, ADR 0022's amendment).

An integer QID's mean over a class is fixed by two additive figures: the class's records and
the sum of its values. Phase 2 then counts, beside each class bin's records, the sum of its
values offset by the domain's smallest (a column of the class table, `adaptive_root.
ChainCounts`): every weight is a whole number >= 0, so a bin's sum is exact in int64 and in a
float64 count table (whole numbers are exact there below 2^53). No value axis is counted, so
the root, the search and the node are the k-only run's.

Taken when phase 1 shows it is exact and the class table is what phase 2 counts: the function
is `mean`, no criterion names any attribute (its (class, value) tables are counted instead of
the class table, so the QID is counted as one of them), every value is a whole number, none is
null, and (largest - smallest) * records < 2^53. Otherwise (a decimal QID, nulls, the median,
the mode, the geometric mean, the interval) the (class, value) table is counted as before.
"""

from __future__ import annotations

import numpy as np

from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.encode.domain import DomainStats
from airflow_skald.core.encode.sensitive_domain import SensitiveStats

EXACT_LIMIT = 1 << 53  # a float64 count table holds whole numbers exactly below this


def summed_attributes(config: SkaldConfig, stats: DomainStats) -> tuple[str, ...]:
    """The microaggregated QIDs whose class aggregate phase 2 counts as a sum per bin."""
    out = []
    if config.criteria_attributes:  # (class, value) tables are counted: the class table is not
        return ()
    for name, micro in config.microaggregations.items():
        if micro.function != "mean" or name in config.criteria_attributes:
            continue
        values = stats.sensitive[name].values
        if not values or any(v is None or isinstance(v, str) for v in values):
            continue
        numbers = np.asarray(values, dtype=np.float64)
        if not np.all(numbers == np.floor(numbers)) or not np.all(np.abs(numbers) < EXACT_LIMIT):
            continue
        if (int(numbers.max()) - int(numbers.min())) * stats.n_rows >= EXACT_LIMIT:
            continue
        out.append(name)
    return tuple(out)


def offsets(stats: SensitiveStats) -> np.ndarray:
    """Each value code's weight in the sum table: its value minus the smallest (int64)."""
    numbers = np.asarray(stats.values, dtype=np.float64)
    return (numbers - numbers.min()).astype(np.int64)


def smallest(stats: SensitiveStats) -> int:
    """The value the sums are offset by."""
    return int(min(stats.values))

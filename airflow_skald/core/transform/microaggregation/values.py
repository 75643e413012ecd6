"""The numbers behind a microaggregated QID's value codes (docs/design.md §4f): whether it is an
integer QID (ARX's INTEGER: its aggregates rounded) or a decimal one. Apart from `aggregates`
so the manifest's entry (`Microaggregation.manifest_section_at`) reads it without the
encoding layer."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class ValueDomain:
    """The numbers behind an attribute's value codes (phase 1's sorted distinct values; a
    null code is NaN) and whether the QID is an integer one (ARX's INTEGER)."""

    numbers: np.ndarray
    integer: bool

    @classmethod
    def of_stats(cls, stats: Any) -> ValueDomain:
        """From phase 1's statistics of the attribute (`SensitiveStats`: its sorted values)."""
        values = [math.nan if v is None else v for v in stats.values]
        numbers = np.asarray(values, dtype=np.float64)
        known = numbers[~np.isnan(numbers)]
        integer = bool(np.all(known == np.floor(known))) and bool(np.all(np.abs(known) < 2**53))
        return cls(numbers, integer)

"""The sample of a differentially private run (docs/design.md §4e, ARX's ``EDDifferentialPrivacy``):
every input record is kept with probability β, decided by the keyed stream (`keys`) at the
record's row number in input order, so the sample does not depend on how the input is cut
into chunks nor on the workers, and every pass (counting, generalising) and every retry of the
run sees the same records."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from airflow_skald.core.transform.differential_privacy import keys


def threshold(beta: float) -> int:
    """T with P[top 53 bits < T] = T / 2^53 the least multiple of 2^-53 at or above β."""
    return math.ceil(Fraction(beta) * (1 << 53))


@dataclass(frozen=True)
class Sampler:
    """Which records of a row range the sample keeps."""

    key: int = field(repr=False)
    beta: float

    @classmethod
    def of(cls, secret: bytes, run_id: str, beta: float) -> Sampler:
        return cls(keys.stream_key(secret, run_id, keys.SAMPLE), beta)

    def keeps(self, first_row: int, n_rows: int) -> np.ndarray:
        """Bool per row of rows first_row .. first_row + n_rows - 1 (input order)."""
        bits = keys.raw(self.key, first_row, n_rows) >> np.uint64(11)
        return bits < np.uint64(threshold(self.beta))


def row_offsets(chunks: Sequence[Any]) -> dict[int, int]:
    """Each chunk's first row number in input order (chunks in `chunk_id` order are the
    input's consecutive slices): the sample's positions, whatever the chunk size."""
    out, row = {}, 0
    for chunk in sorted(chunks, key=lambda c: c.chunk_id):
        out[chunk.chunk_id] = row
        row += chunk.n_rows
    return out


@dataclass(frozen=True)
class RowSample:
    """The run's sample over its chunks: which rows of a chunk it keeps."""

    sampler: Sampler
    offsets: Mapping[int, int]

    def keeps(self, chunk: Any, n_rows: int) -> np.ndarray:
        return self.sampler.keeps(self.offsets[chunk.chunk_id], n_rows)

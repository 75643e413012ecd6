"""Each class's first input row (docs/design.md §4c): the order among classes of one size in which the
sample-based models suppress them (ARX's representant).

It decides something only when the models' suppressed prefix ends inside a run of classes of
one size, and then only for the classes of that size at the chosen node. So it is not counted
with the histogram (at 125M near-unique rows that doubled phase 2's time and memory): the
search asks for it once, for those classes, and `FirstRowScan` finds it in an extra pass
over the chunks (`core.passes.pipeline.first_rows`), which stops as soon as every class asked
for has been seen (chunks are read in input order, so a class's first chunk holds its first
row).

A row is coded `chunk_id << 32 | row in chunk`, so codes compare as the rows' global input
order however the input is cut.
"""

from __future__ import annotations

import numpy as np

ROW_BITS = 32
UNSEEN = np.iinfo(np.int64).max


def chunk_first_rows(
    chunk_id: int, keys: np.ndarray, wanted: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """For one chunk's class keys (one per row, in row order): the positions in `wanted`
    (sorted distinct keys) of the classes it holds, and the code of each one's first row."""
    keys = np.asarray(keys, dtype=np.int64)
    if not wanted.size or not keys.size:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    at = np.minimum(np.searchsorted(wanted, keys), wanted.size - 1)
    rows = np.flatnonzero(wanted[at] == keys)  # ascending: the first of each is its first row
    where, first = np.unique(at[rows], return_index=True)
    return where.astype(np.int64), (np.int64(chunk_id) << ROW_BITS) + rows[first]


class FirstRowScan:
    """The first rows of the classes `wanted` (sorted distinct keys of one node), merged from
    chunks by minimum in any order; `done` once each has been seen and the chunks come in
    input order."""

    def __init__(self, wanted: np.ndarray):
        self.wanted = np.asarray(wanted, dtype=np.int64)
        self.codes = np.full(self.wanted.size, UNSEEN, dtype=np.int64)
        self.unseen = int(self.wanted.size)

    def add(self, where: np.ndarray, codes: np.ndarray) -> None:
        held = self.codes[where]
        self.unseen -= int(np.count_nonzero(held == UNSEEN))
        self.codes[where] = np.minimum(held, codes)

    @property
    def done(self) -> bool:
        return self.unseen == 0

    def result(self) -> np.ndarray:
        if not self.done:
            raise ValueError("classes without a first row: the counts and the rows disagree")
        return self.codes

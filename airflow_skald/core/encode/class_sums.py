"""Microaggregated QIDs counted as an exact sum per class instead of a (class, value) table
(docs/design.md §4f, ADR 0022's amendment).

An integer QID's mean over a class is fixed by two additive figures: the class's records and
the sum of its values. Phase 2 then counts, beside each class bin's records, the sum of its
values offset by the domain's smallest (a column of the class table, `adaptive_root.
ChainCounts`): every weight is a whole number >= 0, so a bin's sum is exact in int64 and in a
float64 count table (whole numbers are exact there below 2^53). No value axis is counted, so
the root, the search and the node are the k-only run's.

Taken when phase 1 shows it is exact and the class table is what phase 2 counts: the function
is `mean`, no criterion names any attribute (its (class, value) tables are counted instead of
the class table, so the QID is counted as one of them), every value is a whole number, none is
null, and (largest - smallest) * records < 2^53; and every other counted attribute is summed
too (a (class, value) table of another microaggregated QID is counted instead of the class
table). Otherwise (a decimal QID, nulls, the median,
the mode, the geometric mean, the interval) the (class, value) table is counted as before.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.count.histogram import Histogram, run_starts
from airflow_skald.core.encode.domain import DomainStats
from airflow_skald.core.encode.sensitive_domain import SensitiveStats
from airflow_skald.core.errors import DataError

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
    if set(config.counted_attributes) - set(out):  # another's (class, value) table is counted
        return ()
    return tuple(out)


def offsets(stats: SensitiveStats) -> np.ndarray:
    """Each value code's weight in the sum table: its value minus the smallest (int64)."""
    numbers = np.asarray(stats.values, dtype=np.float64)
    return (numbers - numbers.min()).astype(np.int64)


def smallest(stats: SensitiveStats) -> int:
    """The value the sums are offset by."""
    return int(min(stats.values))


# An integer column's offsets are checked against phase 1's values in a table of this many
# entries at most (one byte each); a wider range is coded through the values instead.
SEEN_LIMIT = 1 << 24


def weights(stats: SensitiveStats, column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Each record's weight in the sum table (its value minus the smallest, int64). An integer
    column without nulls is offset directly, each offset looked up in a table of the offsets
    phase 1 saw (a value it did not see is an error, as `SensitiveStats.codes` makes it);
    otherwise through the value codes."""
    top = int(max(stats.values)) - smallest(stats)
    if not pa.types.is_integer(column.type) or column.null_count or top >= SEEN_LIMIT:
        return offsets(stats)[stats.codes(column)]
    out = np.asarray(column.to_numpy(), dtype=np.int64) - smallest(stats)
    seen = np.zeros(top + 2, dtype=bool)  # the last entry: out of range
    seen[offsets(stats)] = True
    if out.size and not seen[np.clip(out, -1, top + 1)].all():  # -1: the last entry too
        raise DataError(
            f"sensitive attribute '{stats.name}' holds a value phase 1 did not see: "
            "the input changed between passes"
        )
    return out


# ---------------------------------------------------------------- the class table with sums
def packed_bits(stats: DomainStats, summed: Sequence[str]) -> int | None:
    """Bits of a class bin's record count when the records and ONE summed QID's value sum
    share an int64 column, `sum << bits | records` (None: they are two columns). Adding two
    such words adds both figures exactly while no count reaches 2^bits (a bin holds at most
    the N records of phase 1) and no sum reaches 2^(63 - bits) (it is at most (max - min) *
    N), so every sort, merge and roll-up of phase 2 carries one column, as a k-only run's."""
    if len(summed) != 1 or summed[0] not in stats.sensitive:
        return None
    values = stats.sensitive[summed[0]].values
    bits = max(1, int(stats.n_rows).bit_length())
    span = int(max(values)) - int(min(values))
    if (span * int(stats.n_rows)).bit_length() + bits > 63:
        return None
    return bits


def unpacked(column: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """A packed column's (records, sums)."""
    return column & ((1 << bits) - 1), column >> bits


def packed(counts: np.ndarray, sums: np.ndarray, bits: int) -> np.ndarray:
    """(records, sums) as one packed column (see `packed_bits`)."""
    out = np.left_shift(sums, bits, dtype=np.int64)
    out |= counts
    return out


def grouped_columns(keys: np.ndarray, columns: Sequence[np.ndarray]) -> tuple:
    """Distinct keys (sorted) and the sum of each int64 column per key (a class table with
    its sums per bin: one sort shared by every column; bins summing to 0 are kept)."""
    if keys.size == 0:
        return (keys.astype(np.int64), *(np.asarray(c, dtype=np.int64) for c in columns))
    descents = int(np.count_nonzero(keys[1:] < keys[:-1]))
    if descents:
        kind = "stable" if descents * 4 < keys.size else None  # few sorted runs: a merge sort
        bits = int(keys.size - 1).bit_length()
        if int(keys.max()).bit_length() + bits <= 63:  # the order packed below the keys:
            packed_keys = keys << bits  # one in-place sort instead of an argsort and a gather
            packed_keys |= np.arange(keys.size, dtype=np.int64)
            packed_keys.sort(kind=kind)
            order = packed_keys & ((1 << bits) - 1)
            packed_keys >>= bits
            keys = packed_keys
        else:
            order = np.argsort(keys, kind=kind)
            keys = keys[order]
        columns = [c[order] for c in columns]
    starts = run_starts(keys)
    return (keys[starts], *(run_sums(c, starts) for c in columns))


def run_sums(column: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """`np.add.reduceat(column, starts)` from one cumulative sum (int64, exact): several
    times faster over many short runs."""
    total = np.cumsum(column, dtype=np.int64)
    out = total[np.r_[starts[1:], column.size] - 1]
    out[1:] -= out[:-1].copy()
    return out


def grouped_rows(
    keys: np.ndarray, weights: Sequence[np.ndarray], n_possible: int, bits: int | None = None
) -> tuple:
    """A chunk's class keys grouped: (distinct keys, records, sum of each weight), with one
    sort (the weights packed below the keys when one fits) or count tables when few bins.
    `bits` (one weight, `packed_bits`): (distinct keys, the packed column) instead."""
    if n_possible <= max(1 << 10, 2 * keys.size):
        counts = np.bincount(keys, minlength=n_possible)
        nz = np.flatnonzero(counts)
        sums = [np.bincount(keys, w, minlength=n_possible)[nz].astype(np.int64) for w in weights]
        out = (nz.astype(np.int64), counts[nz].astype(np.int64), *sums)  # exact below 2^53
        return out if bits is None else (out[0], packed(out[1], out[2], bits))
    if len(weights) == 1 and keys.size:
        wbits = max(1, int(weights[0].max()).bit_length())
        if (n_possible - 1).bit_length() + wbits <= 63:
            rows = keys << wbits
            rows |= weights[0]
            rows.sort()
            k = rows >> wbits
            starts = run_starts(k)
            rows &= (1 << wbits) - 1  # each row's weight, in key order
            if bits is not None:  # each row's packed word: weight << bits | one record
                rows <<= bits
                rows += 1
                return k[starts], run_sums(rows, starts)
            counts = np.diff(np.r_[starts, k.size])
            return k[starts], counts, run_sums(rows, starts)
    out = grouped_columns(keys, [np.ones(keys.size, dtype=np.int64), *weights])
    return out if bits is None else (out[0], packed(out[1], out[2], bits))


class PackedTop:
    """The class table with one QID's sums (`packed_bits`) at the top of phase 2's chain,
    where a small node is counted densely: one int64 word per possible bin, each chunk's rows
    added at their keys (records and sums at once, exactly)."""

    def __init__(self, radices: Sequence[int], bits: int):
        self.radices, self.bits = tuple(radices), bits
        self.dense = np.zeros(math.prod(self.radices), dtype=np.int64)

    def add_rows(self, keys: np.ndarray, weights: np.ndarray) -> None:
        """Rows given their keys and weights (value offsets)."""
        if self.dense.size <= keys.size:  # a small table: two counts, exact below 2^53
            counts = np.bincount(keys, minlength=self.dense.size)
            sums = np.bincount(keys, weights, minlength=self.dense.size).astype(np.int64)
            self.dense += packed(counts, sums, self.bits)
            return
        words = np.left_shift(weights, self.bits, dtype=np.int64)
        words += 1
        np.add.at(self.dense, keys, words)

    def add(self, keys: np.ndarray, column: np.ndarray) -> None:
        """Bins given their (unique) keys and packed column."""
        self.dense[keys] += column

    def result(self) -> tuple[Histogram, Histogram]:
        """(records, sums) per bin (a bin summing to 0 is absent from the sums)."""
        counts, sums = unpacked(self.dense, self.bits)
        return Histogram.from_dense(self.radices, counts), Histogram.from_dense(self.radices, sums)

"""Sparse histograms of equivalence-class counts, keyed by mixed-radix codes.

Real data fill few of the possible bins (Adult: ~18 thousand of 3.2e8), so a histogram is a
sorted array of non-empty int64 keys plus their counts; memory follows the non-empty bins.
Counts are additive: partial histograms of chunks merge exactly in any order.
This is the one interface the search and the scale-out code use; a sensitive-attribute
dimension (l-diversity, t-closeness) would become one more radix in the key.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np

# Count with a dense array when a node has at most this many possible bins (<= 128 MiB of
# int64), with sorted sparse keys beyond: dense is ~10x faster, sparse follows non-empty bins.
DENSE_LIMIT = 1 << 24


def strides_of(radices: Sequence[int]) -> list[int]:
    """Each QID's multiplier in the mixed-radix key (the last QID's is 1)."""
    out, step = [], 1
    for r in reversed(radices):
        out.append(step)
        step *= int(r)
    return out[::-1]


def keys_of(codes: Sequence[np.ndarray], radices: Sequence[int]) -> np.ndarray:
    """Mixed-radix int64 key of each row; the first QID is the most significant digit."""
    key = np.zeros(len(codes[0]) if codes else 0, dtype=np.int64)
    for c, r in zip(codes, radices, strict=True):
        key *= r
        key += c
    return key


def changes(keys: np.ndarray) -> np.ndarray:
    """Per element of `keys` (sorted or grouped): whether a run of equal values starts there
    (the first always; one True for no keys). As `np.r_[True, k[1:] != k[:-1]]`, without its
    Python overhead (~20-60 us a call, thousands of calls per search)."""
    out = np.empty(max(keys.size, 1), dtype=bool)
    out[0] = True
    np.not_equal(keys[1:], keys[:-1], out=out[1:])
    return out


def run_starts(keys: np.ndarray) -> np.ndarray:
    """Indices where runs of equal values start in `keys` (sorted or grouped)."""
    return np.flatnonzero(changes(keys))


# keys in at most _RUNS sorted runs: a merge sort (it merges the runs); otherwise numpy's
# quicksort, SIMD-sorted where the CPU allows (AVX2/AVX-512: on this project's machine 3-10x a
# merge sort of keys in 8 to n/16 runs, from 2,000 to 8M keys; a merge sort wins at 2-3 runs)
_RUNS = 3


def grouped(
    keys: np.ndarray, counts: np.ndarray | None, n_possible: int, *, owned: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Distinct keys (sorted) and the sum of `counts` of each (int64; `counts` None: each key
    counts once): a count table when the key space is small; else, without counts, one sort
    of the keys; else, if the keys are already sorted (QIDs raised that keep the key order),
    one pass over adjacent keys; else one sort of keys packed with their counts (no stable
    argsort; a merge sort when the keys are at most _RUNS sorted runs, a quicksort otherwise),
    else an argsort. `owned`: `keys` may be overwritten."""
    if keys.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if n_possible <= max(1 << 10, 2 * keys.size):  # beyond, a sort is faster (zeroing and
        # scanning the table dominates: 3,000 keys in 2^16 bins ~4x slower than their sort)
        table = np.bincount(keys, weights=counts, minlength=n_possible)
        nz = np.flatnonzero(table)
        return nz, table[nz].astype(np.int64)
    if counts is None:
        ordered = keys if owned else keys.copy()
        ordered.sort()
        starts = run_starts(ordered)
        return ordered[starts].astype(np.int64), np.diff(np.r_[starts, ordered.size])
    descents = int(np.count_nonzero(keys[1:] < keys[:-1]))
    if descents == 0:
        return _adjacent(keys, counts)
    kind = "stable" if descents < _RUNS else None
    count_bits = max(1, int(counts.max()).bit_length())
    if (n_possible - 1).bit_length() + count_bits <= 63:
        packed = keys if owned else keys.copy()
        packed <<= count_bits
        packed |= counts
        packed.sort(kind=kind)
        k = packed >> count_bits
        starts = run_starts(k)
        packed &= (1 << count_bits) - 1
        return k[starts], np.add.reduceat(packed, starts)
    order = np.argsort(keys, kind=kind)
    return _adjacent(keys[order], counts[order])


def _adjacent(keys: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted keys: each distinct key once, with the sum of its counts."""
    starts = run_starts(keys)
    return keys[starts], np.add.reduceat(counts, starts)


class Histogram:
    """Record counts per non-empty bin of a node whose levels have `radices` bins each.

    Held as sorted non-empty keys plus counts, or as a dense array over every possible bin (what
    phase 2 counts into when the node has at most DENSE_LIMIT bins); each form is derived from
    the other on first use, so a dense root goes to the search without a sparse copy.
    """

    def __init__(
        self,
        radices: Sequence[int],
        keys: np.ndarray | None = None,
        counts: np.ndarray | None = None,
        *,
        dense: np.ndarray | None = None,
    ):
        self.radices = tuple(radices)
        self._keys, self._counts, self._dense = keys, counts, dense
        self._n_bins: int | None = None if keys is None else int(keys.size)

    @classmethod
    def from_dense(cls, radices: Sequence[int], dense: np.ndarray) -> Histogram:
        """A histogram over every possible bin: `dense[key]` is the count of bin `key`."""
        return cls(radices, dense=dense)

    def _sparsify(self) -> None:
        nz = np.flatnonzero(self._dense)
        self._keys = nz.astype(np.int64, copy=False)
        self._counts = self._dense[nz].astype(np.int64, copy=False)

    def compact(self) -> Histogram:
        """The same counts in the smaller form (to send between processes or store): a dense
        root from a few chunks is mostly empty cells."""
        if self._dense is None or self.n_bins * 16 >= self._dense.size * self._dense.itemsize:
            return self
        return Histogram(self.radices, self.keys, self.counts)

    @property
    def keys(self) -> np.ndarray:
        """Non-empty bins' int64 keys, sorted."""
        if self._keys is None:
            self._sparsify()
        return self._keys

    @property
    def counts(self) -> np.ndarray:
        """int64 counts (> 0) of the non-empty bins, in key order."""
        if self._counts is None:
            self._sparsify()
        return self._counts

    def dense_counts(self, dtype: type = np.int64) -> np.ndarray:
        """The counts of every possible bin as one flat array (keys index it)."""
        if self._dense is not None:
            return self._dense.astype(dtype, copy=False)
        out = np.zeros(self.n_possible, dtype=dtype)
        out[self.keys] = self.counts
        return out

    @property
    def n_possible(self) -> int:
        return int(np.prod(np.asarray(self.radices, dtype=object)))

    @property
    def n_records(self) -> int:
        return int((self._dense if self._counts is None else self._counts).sum())

    @property
    def n_bins(self) -> int:
        if self._n_bins is None:
            self._n_bins = int(np.count_nonzero(self._dense))
        return self._n_bins

    @classmethod
    def empty(cls, radices: Sequence[int]) -> Histogram:
        return cls(tuple(radices), np.zeros(0, np.int64), np.zeros(0, np.int64))

    @classmethod
    def from_codes(cls, codes: Sequence[np.ndarray], radices: Sequence[int]) -> Histogram:
        """Count rows given their per-QID codes."""
        keys = keys_of(codes, radices)
        return cls(tuple(radices), *grouped(keys, None, _product(radices), owned=True))

    @staticmethod
    def merge(parts: Sequence[Histogram]) -> Histogram:
        """Exact sum of histograms over the same radices."""
        parts = [p for p in parts if p.n_bins] or list(parts[:1])
        if len(parts) == 1:
            return parts[0]
        radices = parts[0].radices
        if any(p.radices != radices for p in parts):
            raise ValueError("histograms over different nodes cannot be merged")
        n_possible = _product(radices)
        if n_possible <= DENSE_LIMIT:  # add into one dense array: no concatenation, no sort
            acc = HistogramAccumulator(radices)
            for p in parts:
                acc.add(p)
            return acc.result()
        keys = np.concatenate([p.keys for p in parts])
        counts = np.concatenate([p.counts for p in parts])
        return Histogram(radices, *grouped(keys, counts, n_possible, owned=True))

    def sum_last_axis(self) -> Histogram:
        """The counts summed over the innermost axis (a (class, value) table's class counts):
        keys // m is still sorted, so one grouping of adjacent keys."""
        radices, m = self.radices[:-1], self.radices[-1]
        if self._keys is None:
            return Histogram.from_dense(radices, self._dense.reshape(-1, m).sum(axis=1))
        outer = self.keys // m
        starts = run_starts(outer) if outer.size else outer
        return Histogram(radices, outer[starts], np.add.reduceat(self.counts, starts))

    def decompose(self) -> list[np.ndarray]:
        """Per-QID codes of each non-empty bin (inverse of the mixed-radix key)."""
        out, rest = [], self.keys.copy()
        for r in reversed(self.radices):
            out.append(rest % r)
            rest //= r
        return out[::-1]

    def to_bytes(self) -> bytes:
        buf = io.BytesIO()
        np.savez(
            buf, radices=np.asarray(self.radices, np.int64), keys=self.keys, counts=self.counts
        )
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> Histogram:
        z = np.load(io.BytesIO(data))
        return cls(tuple(int(r) for r in z["radices"]), z["keys"], z["counts"])


class HistogramAccumulator:
    """Sums chunk histograms one at a time: dense array when small, sorted merge otherwise."""

    def __init__(self, radices: Sequence[int]):
        self.radices = tuple(radices)
        n = _product(radices)
        self._dense = np.zeros(n, np.int64) if n <= DENSE_LIMIT else None
        self._sparse = Histogram.empty(radices)

    def add_keys(self, keys: np.ndarray) -> None:
        """Count rows given their mixed-radix keys."""
        if self._dense is not None and self._dense.size <= keys.size:
            self._dense += np.bincount(keys, minlength=self._dense.size)  # a small table
        elif self._dense is not None:
            np.add.at(self._dense, keys, 1)  # numpy >= 2 has a fast path: ~20 ns per row
        else:
            self.add(Histogram(self.radices, *grouped(keys, None, _product(self.radices))))

    def add_weighted(self, keys: np.ndarray, weights: np.ndarray) -> None:
        """Add each row's whole-number weight >= 0 to its key's bin (a table of sums)."""
        if self._dense is not None and self._dense.size <= keys.size:
            table = np.bincount(keys, weights=weights, minlength=self._dense.size)
            self._dense += table.astype(np.int64)  # exact: sums below 2^53 (class_sums)
        elif self._dense is not None:
            np.add.at(self._dense, keys, weights)
        else:
            self.add(Histogram(self.radices, *grouped(keys, weights, _product(self.radices))))

    def add(self, hist: Histogram) -> None:
        if self._dense is not None and hist._dense is not None:
            self._dense += hist._dense
        elif self._dense is not None:
            self._dense[hist.keys] += hist.counts  # keys are unique
        else:
            self._sparse = Histogram.merge([self._sparse, hist])

    def result(self) -> Histogram:
        if self._dense is not None:
            return Histogram.from_dense(self.radices, self._dense)
        return self._sparse


def _product(radices: Sequence[int]) -> int:
    out = 1
    for r in radices:
        out *= int(r)
    return out

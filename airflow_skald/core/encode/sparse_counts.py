"""Sparse count tables on sorted int64 keys, as the adaptive root rolls them up (ADR 0012).

A QID raised one level is one key rewrite (`raised_keys`, `raise_one`); two tables over the
same node add by one linear merge (`add_sorted`); a table is held cut by key range into
buckets of about BUCKET_BINS bins (`Buckets`), so merging a chunk touches small arrays.
Every column beside the keys (counts, sums per bin) follows them through each step.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from airflow_skald.core.count.histogram import Histogram, grouped
from airflow_skald.core.encode.class_sums import grouped_columns


def raised_keys(keys: np.ndarray, radices: Sequence[int], axis: int, level_map, card: int):
    """Sorted-or-not keys with QID `axis` mapped by `level_map` to a level of `card` bins: one
    key rewrite (new key = key + (high * (card - old) + map[code] - code) * low_size, so the
    high and low digits are never split out); returns the new keys and radices."""
    radices = list(radices)
    low_size = math.prod(radices[axis + 1 :])
    old = radices[axis]
    radices[axis] = card
    shift = keys // low_size if low_size > 1 else keys.copy()  # high * old + code
    code = shift % old
    shift //= old  # high
    shift *= card - old
    shift += level_map[code]
    shift -= code
    del code
    if low_size > 1:
        shift *= low_size
    shift += keys  # the new keys
    return shift, tuple(radices)


def raise_one(hist: Histogram, axis: int, level_map: np.ndarray, card: int) -> Histogram:
    """`hist` with QID `axis` mapped by `level_map` to a level of `card` bins: one key
    rewrite and one grouping, vectorised. Temporaries: about three arrays of its size."""
    if hist.n_bins == 0:
        radices = list(hist.radices)
        radices[axis] = card
        return Histogram.empty(radices)
    keys, radices = raised_keys(hist.keys, hist.radices, axis, level_map, card)
    return Histogram(radices, *grouped(keys, hist.counts, math.prod(radices), owned=True))


def add_sorted(a: Histogram, b: Histogram) -> Histogram:
    """Exact sum of two sparse histograms over the same node. Both key arrays are sorted and
    unique, so a stable sort of the two together is one linear merge of two runs (timsort);
    a key in both then sits in two adjacent slots, added into the first."""
    if b.n_bins == 0:
        return a
    if a.n_bins == 0:
        return b
    keys, counts = _add_sorted((a.keys, a.counts), (b.keys, b.counts))
    return Histogram(a.radices, keys, counts)


def _add_sorted(a: tuple, b: tuple) -> tuple:
    """`add_sorted` over (keys, column, ...) tuples: every column summed per key."""
    keys = np.concatenate([a[0], b[0]])
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    columns = [np.concatenate([x, y])[order] for x, y in zip(a[1:], b[1:], strict=True)]
    del order
    twice = np.flatnonzero(keys[1:] == keys[:-1])
    keep = np.ones(keys.size, dtype=bool)
    keep[twice + 1] = False
    for c in columns:
        c[twice] += c[twice + 1]
    return (keys[keep], *(c[keep] for c in columns))


# A sparse table is cut by key range into buckets of about this many bins, so that merging a
# chunk touches small arrays (in cache, reused by malloc) instead of one array of N_RAM bins.
BUCKET_BINS = 1 << 18


class Buckets:
    """One table's counts at a sparse chain node, cut by key range into buckets: bucket i
    holds the sorted unique keys in [bounds[i-1], bounds[i]) and their counts (and, for the
    class table of a run with QIDs counted as sums, their sums per bin: more columns that
    follow the keys; or one column of records and sums packed, `plain` False). A chunk's
    sorted keys are cut at the same bounds and each piece merged into its bucket (a linear
    merge of two small runs); together the buckets are the whole table in key order, so the
    non-empty bins are the sum of their sizes, exactly."""

    def __init__(
        self, radices: tuple[int, ...], parts: list[tuple], width: int = 2, plain: bool = True
    ):
        self.radices = radices
        self.width = width  # keys, counts, then one column per sum
        self.plain = plain and width == 2  # one column of counts alone (`grouped` sums it)
        self.parts = [p for p in parts if p[0].size] or [(_EMPTY,) * width]
        self.bounds = np.asarray([p[0][0] for p in self.parts[1:]], dtype=np.int64)
        self.n_bins = sum(int(p[0].size) for p in self.parts)

    @classmethod
    def empty(cls, radices: tuple[int, ...], width: int = 2, plain: bool = True) -> Buckets:
        return cls(radices, [], width, plain)

    def add(self, table: tuple) -> None:
        """Add sorted unique (keys, counts, sums...) at this node."""
        keys = table[0]
        if not keys.size:
            return
        cuts = np.r_[0, np.searchsorted(keys, self.bounds), keys.size]
        for i, (a, b) in enumerate(zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True)):
            if a == b:
                continue
            old = self.parts[i]
            piece = tuple(c[a:b] for c in table)
            if not old[0].size:  # copies: a view would keep the chunk's whole arrays alive
                self.parts[i] = tuple(c.copy() for c in piece)
                self.n_bins += b - a
                continue
            merged = _add_sorted(old, piece)
            self.n_bins += int(merged[0].size) - int(old[0].size)
            self.parts[i] = merged
        if max(p[0].size for p in self.parts) > 4 * BUCKET_BINS:
            self.parts = _cut(self.joined())  # re-cut into even buckets: O(bins), rarely
            self.bounds = np.asarray([p[0][0] for p in self.parts[1:]], dtype=np.int64)

    def joined(self) -> tuple:
        if len(self.parts) == 1:
            return self.parts[0]
        return tuple(np.concatenate([p[j] for p in self.parts]) for j in range(self.width))

    def histogram(self) -> Histogram:
        keys, counts = self.joined()[:2]
        return Histogram(self.radices, keys, counts)

    def raised(self, axis: int, level_map: np.ndarray, card: int) -> Buckets:
        """These counts one level up in QID `axis`, bucket by bucket (the temporaries stay
        small); the buckets' pieces are re-cut by key range and merged where they meet."""
        pieces = []
        radices = list(self.radices)
        radices[axis] = card
        radices = tuple(radices)
        n_possible = math.prod(radices)
        while self.parts:  # each old bucket goes as its raised piece comes
            part = self.parts.pop(0)
            if not part[0].size:
                continue
            keys, _ = raised_keys(part[0], self.radices, axis, level_map, card)
            if self.plain:
                pieces.append(grouped(keys, part[1], n_possible, owned=True))
            else:
                pieces.append(grouped_columns(keys, part[1:]))
        if all(a[0][-1] < b[0][0] for a, b in zip(pieces[:-1], pieces[1:], strict=True)):
            return Buckets(radices, pieces, self.width, self.plain)  # still in order
        sample = np.sort(np.concatenate([p[0][:: max(1, p[0].size // 64)] for p in pieces]))
        n = sum(int(p[0].size) for p in pieces)
        n_buckets = max(1, -(-n // BUCKET_BINS))
        bounds = np.unique(sample[(np.arange(1, n_buckets) * sample.size) // n_buckets])
        split = []
        while pieces:  # copies, so each piece is freed once it is cut: peak ~ one table
            piece = pieces.pop(0)
            cuts = np.r_[0, np.searchsorted(piece[0], bounds), piece[0].size].tolist()
            split.append(
                [
                    tuple(c[a:b].copy() for c in piece)
                    for a, b in zip(cuts[:-1], cuts[1:], strict=True)
                ]
            )
            del piece
        parts = []
        for i in range(bounds.size + 1):
            cols = [np.concatenate([s[i][j] for s in split]) for j in range(self.width)]
            for s in split:
                s[i] = (_EMPTY,) * self.width
            if self.plain:
                parts.append(grouped(cols[0], cols[1], n_possible, owned=True))
            else:
                parts.append(grouped_columns(cols[0], cols[1:]))
        return Buckets(radices, parts, self.width, self.plain)


_EMPTY = np.zeros(0, dtype=np.int64)


def _cut(table: tuple) -> list[tuple]:
    """Sorted unique keys (and their columns) cut into buckets of about BUCKET_BINS (copies)."""
    size = table[0].size
    n_buckets = max(1, -(-size // BUCKET_BINS))
    cuts = [(i * size) // n_buckets for i in range(n_buckets + 1)]
    return [tuple(c[a:b].copy() for c in table) for a, b in zip(cuts[:-1], cuts[1:], strict=True)]

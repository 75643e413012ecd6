"""Sparse roll-ups: a histogram held as its sorted non-empty bins (`SparseSource`).

A roll-up to a node gathers each block of QIDs' part of the key from a small table
(`BlockTables`, shared by the sources of one `RollUps`), then groups the keys.
`SparseSource.distinct_at_least` bounds a node's classes without grouping, and
`SparseSource.dense_at` builds a dense hub's counts. `rollups.RollUps` holds these sources.
"""

from __future__ import annotations

import math

import numpy as np

from airflow_skald.core.count.histogram import Histogram, grouped, strides_of
from airflow_skald.core.encode.plan import Plan

_BLOCK_LIMIT = 1 << 16  # QIDs are grouped so one block's codes index a small lookup table
_BLOCK_MIN = 1 << 8  # ... of at most the source's bins (when more), and at least this
_HASH_BITS = 24  # fewest_classes: a bit table of at most 2^24 entries (16 MiB)
_HASH_CHECKS = 8  # ... its set entries counted this many times over a pass
_HASH_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: the top bits are mixed
SLICE = 1 << 16  # a pass over a source's bins goes this many bins at a time
_LUT_BYTES = 16 << 20  # a source's block tables (`SparseSource._block_lut`) hold at most this


def _code_dtype(size: int) -> type:
    if size <= 1 << 16:
        return np.uint8 if size <= 1 << 8 else np.uint16
    return np.uint32 if size <= 1 << 32 else np.int64


def _take(table: np.ndarray, codes: np.ndarray, out: np.ndarray) -> np.ndarray:
    """table[codes] into `out`. The codes are always within the table, so mode "clip" never
    clips; unlike the default "raise" it neither buffers `out` nor converts small index types
    to intp first (~5x faster on uint8/uint16 codes)."""
    return np.take(table, codes, out=out, mode="clip")


class BlockTables:
    """Block tables (`SparseSource._block_lut`) shared by the sources of one `RollUps`: a block of
    the same QIDs at the same levels maps to the same table from whichever source. At most
    _LUT_BYTES held (all dropped when full: a search revisits few combinations)."""

    def __init__(self) -> None:
        self.tables: dict[tuple, np.ndarray] = {}
        self.nbytes = 0

    def get(self, at: tuple) -> np.ndarray | None:
        return self.tables.get(at)

    def put(self, at: tuple, lut: np.ndarray) -> None:
        if self.nbytes + lut.nbytes > _LUT_BYTES:
            self.tables.clear()
            self.nbytes = 0
        self.tables[at] = lut
        self.nbytes += lut.nbytes


class SparseSource:
    """A histogram prepared for fast roll-ups: QIDs grouped into blocks of few codes each, so a
    roll-up is one gather per block from a small (cache-resident) table instead of a gather,
    a multiply and an add per QID. The blocks' codes are built on the first roll-up, in the
    smallest integer type that holds them."""

    def __init__(
        self,
        plan: Plan,
        node: tuple[int, ...],
        hist: Histogram,
        tables: BlockTables | None = None,
    ):
        self.plan, self.node, self.hist = plan, node, hist
        cards = plan.radices(node)
        # a block's table is built per node rolled up to: on a small source, no larger than
        # the source's bins (a 2^16-entry table per roll-up would outweigh the gathers)
        limit = min(_BLOCK_LIMIT, max(_BLOCK_MIN, hist.n_bins))
        self.blocks: list[list[int]] = [[]]
        size = 1
        for i, c in enumerate(cards):
            if self.blocks[-1] and size * c > limit:
                self.blocks.append([])
                size = 1
            self.blocks[-1].append(i)
            size *= c
        self.block_sizes = [math.prod(cards[i] for i in b) for b in self.blocks]
        self.counts = np.asarray(hist.counts, dtype=np.int64)
        self._codes: list[np.ndarray] | None = None
        self._multi: np.ndarray | None = None  # bins of more than one record (dense_at)
        self._tables = BlockTables() if tables is None else tables  # see _block_lut

    @property
    def n_bins(self) -> int:
        return self.hist.n_bins

    def _dtype(self, size: int) -> type:
        """A block's code type: the smallest that holds `size` codes; intp on a small source
        (a gather converts smaller index types first, and the memory is negligible)."""
        return np.intp if self.n_bins <= SLICE else _code_dtype(size)

    @property
    def nbytes(self) -> int:
        """Bytes held: keys, counts and the blocks' codes (counted before they are built)."""
        per_bin = 16 + sum(np.dtype(self._dtype(s)).itemsize for s in self.block_sizes)
        return self.n_bins * per_bin

    @property
    def block_codes(self) -> list[np.ndarray]:
        """Per block, its QIDs' digits of each key: (key // stride of its last QID) modulo the
        block's size (two array ops per block, not a divmod per QID and a recombination)."""
        if self._codes is None:
            keys = self.hist.keys
            strides = strides_of(self.plan.radices(self.node))
            self._codes = []
            for b, size in zip(self.blocks, self.block_sizes, strict=True):
                code = keys // strides[b[-1]] if strides[b[-1]] > 1 else keys
                code = code % size if b[0] > 0 else code
                self._codes.append(code.astype(self._dtype(size)))
        return self._codes

    def _luts(self, node: tuple[int, ...], ignore: tuple[int, ...] = ()) -> list[np.ndarray | None]:
        """Per block, each block code's contribution to the key at `node` (None: nothing, the
        block's QIDs all at their top or in `ignore`)."""
        radices = self.plan.radices(node)
        strides = np.cumprod((radices[1:] + (1,))[::-1], dtype=np.int64)[::-1]
        luts: list[np.ndarray | None] = []
        for b, block in enumerate(self.blocks):
            if all(radices[i] == 1 or i in ignore for i in block):  # every code maps to 0
                luts.append(None)
                continue
            luts.append(self._block_lut(b, node, ignore) * strides[block[-1]])
        return luts

    def _block_lut(self, b: int, node: tuple[int, ...], ignore: tuple[int, ...]) -> np.ndarray:
        """Block b's codes mapped to the block's own mixed-radix key at `node` (its QIDs' codes
        there, the first most significant); the key's part is this times the stride of the
        block's last QID. Cached per QIDs and levels, for every source (`BlockTables`)."""
        block = self.blocks[b]
        at = (
            *block,
            *(self.node[i] for i in block),
            *(-1 if i in ignore else node[i] for i in block),
        )
        lut = self._tables.get(at)
        if lut is None:
            lut = np.zeros(1, dtype=np.int64)
            for i in block:
                card = self.plan.dims[i].cards[node[i]]
                contrib = self.plan.dims[i].level_map(self.node[i], node[i])
                lut = np.add.outer(lut * card, 0 * contrib if i in ignore else contrib).ravel()
            self._tables.put(at, lut)
        return lut

    def _gather(
        self,
        luts: list[np.ndarray | None],
        lo: int = 0,
        hi: int | None = None,
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        """The keys of the source bins lo..hi from the blocks' tables (`_luts`), into `out` if
        given (a reused array: no fresh pages to fault in). Slice by slice, so the temporaries
        stay small and cache-resident."""
        hi = self.n_bins if hi is None else min(hi, self.n_bins)
        active = [(t, c) for t, c in zip(luts, self.block_codes, strict=True) if t is not None]
        out = np.empty(hi - lo, dtype=np.int64) if out is None else out[: hi - lo]
        if not active:
            out[:] = 0
            return out
        (first, first_codes), rest = active[0], active[1:]
        tmp = np.empty(min(SLICE, hi - lo), dtype=np.int64) if rest else out
        for a in range(lo, hi, SLICE):
            b = min(hi, a + SLICE)
            part = out[a - lo : b - lo]
            _take(first, first_codes[a:b], part)
            for lut, codes in rest:
                part += _take(lut, codes[a:b], tmp[: b - a])
        return out

    def _keys(
        self, node: tuple[int, ...], out: np.ndarray | None = None
    ) -> tuple[np.ndarray, tuple[int, ...], int]:
        """Every source bin's key at `node` (mixed radix), the radices and possible bins."""
        radices = self.plan.radices(node)
        n_possible = int(np.prod(np.asarray(radices, dtype=object)))
        return self._gather(self._luts(node), out=out), radices, n_possible

    def distinct_at_least(self, node: tuple[int, ...], enough: int, ignore=()) -> int:
        """A lower bound of the node's non-empty bins (with the QIDs in `ignore` merged), found
        without grouping: the keys hashed into a bit table, slice by slice, until more than
        `enough` table entries are set (distinct entries never outnumber distinct keys). The
        set entries are counted at _HASH_CHECKS points; from a quarter of the bins on, the count
        stops early when, extrapolated to all bins, it would not exceed `enough` (the bound it
        returns is then just weaker)."""
        luts = self._luts(node, ignore)
        bits = min(_HASH_BITS, max(16, (4 * enough).bit_length()))
        seen = np.zeros(1 << bits, dtype=bool)
        shift = np.uint64(64 - bits)
        buf = np.empty(SLICE, dtype=np.int64)
        n = self.n_bins
        every = max(1, -(-n // (SLICE * _HASH_CHECKS)))  # slices between counts
        found = 0
        for i, lo in enumerate(range(0, n, SLICE)):
            keys = self._gather(luts, lo, lo + SLICE, out=buf).view(np.uint64)
            keys *= _HASH_MULTIPLIER
            keys >>= shift
            seen[keys] = True
            done = min(n, lo + SLICE)
            if (i + 1) % every == 0 or done == n:
                found = int(np.count_nonzero(seen))
                if found > enough or (4 * done >= n and found * n <= enough * done):
                    break
        return found

    def roll_up(self, node: tuple[int, ...], out: np.ndarray | None = None) -> Histogram:
        """The node's histogram; `out`: an int64 array of at least n_bins to work in."""
        keys, radices, n_possible = self._keys(node, out)
        k, counts = grouped(keys, self.counts, n_possible, owned=True)
        return Histogram(radices, k, counts)

    def dense_at(self, node: tuple[int, ...], dtype: type, out: np.ndarray | None = None):
        """The node's counts as an n-d array over every possible bin (a count table): one count
        per bin (no float weights), then the bins of more than one record added."""
        keys, radices, n_possible = self._keys(node, out)
        if self._multi is None:
            self._multi = np.flatnonzero(self.counts > 1)
        if self._multi.size * 4 > self.n_bins:
            table = np.bincount(keys, weights=self.counts, minlength=n_possible)
        else:
            table = np.bincount(keys, minlength=n_possible)
            np.add.at(table, keys[self._multi], self.counts[self._multi] - 1)
        return table.astype(dtype).reshape(radices)

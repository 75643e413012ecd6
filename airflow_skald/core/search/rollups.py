"""Node histograms rolled up from the root histogram (or the nearest cached finer node).

Used by the search (class sizes of each evaluated node) and the per-chunk baseline.
"""

from __future__ import annotations

import math

import numpy as np

from airflow_skald.core.count.histogram import (
    DENSE_LIMIT,
    Histogram,
    grouped,
    run_starts,
    strides_of,
)
from airflow_skald.core.encode.plan import Plan

_BLOCK_LIMIT = 1 << 16  # QIDs are grouped so one block's codes index a small lookup table
_BLOCK_MIN = 1 << 8  # ... of at most the source's bins (when more), and at least this
CACHE_FACTOR = 2  # the roll-up cache holds at most this many times the root's bytes (ADR 0004)
CACHE_FLOOR = 64 << 20  # ... or this many bytes, if more (a small root's cache is not tight)
KEEP_SHRINK = 2  # a small sparse roll-up is cached when it has at most 1/this of its source's
KEEP_SMALL_BINS = 1 << 16  # bins, and at most this many bins
# Above a large sparse root, nodes of few possible bins are rolled up from dense "hubs": nodes
# below them held as every cell (int32), built once from a sparse source and rolled up further
# one QID at a time as a dense root is (`RollUps`).
HUB_MIN_BINS = 1 << 18  # a sparse source of fewer bins is cheap enough to roll up directly
# fewest_classes: a sparse source of fewer bins is rolled up instead (from 2^15 bins a failing
# node's bound, which stops counting early, costs less than its roll-up's sort: CUP-shaped
# data's search at 5 % suppression ~35 % less CPU, issue 23)
BOUND_MIN_BINS = 1 << 15
HUB_SHARE = 32  # a hub takes at most 1/HUB_SHARE of the cache budget (a (class, value) table's
# hub, holding every value of its classes, twice that: `RollUps(values=True)`) ...
HUB_LIMIT = DENSE_LIMIT  # ... and at most this many cells
_SPARSE_COST = 8  # rolling up a sparse bin costs about as much as this many dense cells
_SCORE_LIMIT = 1 << 20  # lattices up to this many nodes: hubs scored by the nodes they newly cover
_HASH_BITS = 24  # fewest_classes: a bit table of at most 2^24 entries (16 MiB)
_HASH_CHECKS = 8  # ... its set entries counted this many times over a pass
_HASH_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: the top bits are mixed
_SLICE = 1 << 16  # a pass over a source's bins goes this many bins at a time
_LUT_BYTES = 16 << 20  # a source's cached block tables (`_Source._block_lut`) hold at most this


def _code_dtype(size: int) -> type:
    if size <= 1 << 16:
        return np.uint8 if size <= 1 << 8 else np.uint16
    return np.uint32 if size <= 1 << 32 else np.int64


def _take(table: np.ndarray, codes: np.ndarray, out: np.ndarray) -> np.ndarray:
    """table[codes] into `out`. The codes are always within the table, so mode "clip" never
    clips; unlike the default "raise" it neither buffers `out` nor converts small index types
    to intp first (~5x faster on uint8/uint16 codes)."""
    return np.take(table, codes, out=out, mode="clip")


class _BlockTables:
    """Block tables (`_Source._block_lut`) shared by the sources of one `RollUps`: a block of
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


class _Source:
    """A histogram prepared for fast roll-ups: QIDs grouped into blocks of few codes each, so a
    roll-up is one gather per block from a small (cache-resident) table instead of a gather,
    a multiply and an add per QID. The blocks' codes are built on the first roll-up, in the
    smallest integer type that holds them."""

    def __init__(
        self,
        plan: Plan,
        node: tuple[int, ...],
        hist: Histogram,
        tables: _BlockTables | None = None,
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
        self._tables = _BlockTables() if tables is None else tables  # see _block_lut

    @property
    def n_bins(self) -> int:
        return self.hist.n_bins

    def _dtype(self, size: int) -> type:
        """A block's code type: the smallest that holds `size` codes; intp on a small source
        (a gather converts smaller index types first, and the memory is negligible)."""
        return np.intp if self.n_bins <= _SLICE else _code_dtype(size)

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
        block's last QID. Cached per QIDs and levels, for every source (`_BlockTables`)."""
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
        tmp = np.empty(min(_SLICE, hi - lo), dtype=np.int64) if rest else out
        for a in range(lo, hi, _SLICE):
            b = min(hi, a + _SLICE)
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
        buf = np.empty(_SLICE, dtype=np.int64)
        n = self.n_bins
        every = max(1, -(-n // (_SLICE * _HASH_CHECKS)))  # slices between counts
        found = 0
        for i, lo in enumerate(range(0, n, _SLICE)):
            keys = self._gather(luts, lo, lo + _SLICE, out=buf).view(np.uint64)
            keys *= _HASH_MULTIPLIER
            keys >>= shift
            seen[keys] = True
            done = min(n, lo + _SLICE)
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


def roll_up(plan: Plan, hist: Histogram, node: tuple[int, ...]) -> Histogram:
    """The histogram of `node`, merged from the bins of the root histogram `hist`."""
    return _Source(plan, plan.root, hist).roll_up(node)


def sum_groups(array: np.ndarray, targets: np.ndarray, axis: int) -> np.ndarray:
    """Sum the slices of `array` along `axis` that `targets` maps to the same index.

    One pass over the array, kept in its dtype. Along an outer axis each slice is added whole
    into its target (contiguous, vectorised); `np.add.reduceat` there is 5-15x slower (measured
    on a 9.2M-cell root). Along the innermost axis, or a long axis of tiny slices (one Python
    call per slice would dominate), reduceat over runs of equal targets is used; a collapse to
    one value is a plain sum.
    """
    n_targets = int(targets.max()) + 1
    if n_targets == 1:
        return array.sum(axis=axis, keepdims=True, dtype=array.dtype)
    inner = int(np.prod(array.shape[axis + 1 :], dtype=np.int64))
    if axis == array.ndim - 1 or (array.shape[axis] > 4096 and inner < 1024):
        if np.any(targets[1:] < targets[:-1]):  # a categorical map: equal targets together
            perm = np.argsort(targets, kind="stable")
            array, targets = np.take(array, perm, axis=axis), targets[perm]
        starts = run_starts(targets)
        return np.add.reduceat(array, starts, axis=axis, dtype=array.dtype)
    shape = list(array.shape)
    shape[axis] = n_targets
    out = np.zeros(shape, dtype=array.dtype)
    src, dst = np.moveaxis(array, axis, 0), np.moveaxis(out, axis, 0)
    for j, t in enumerate(targets.tolist()):
        np.add(dst[t], src[j], out=dst[t])
    return out


class _DenseSource:
    """A histogram as a dense n-d array of counts: a roll-up is one `add.reduceat` per QID that
    changes level (memory-bandwidth bound), used when the node's possible bins are few.
    Counts are int32 when the records fit (half the memory traffic)."""

    def __init__(self, plan: Plan, node: tuple[int, ...], hist: Histogram, array=None):
        self.plan, self.node = plan, node
        self._hist = hist
        if array is None:
            dtype = np.int32 if hist.n_records < 2**31 else np.int64
            array = hist.dense_counts(dtype).reshape(hist.radices)
        self.array = array

    @property
    def size(self) -> int:
        return int(self.array.size)

    @property
    def nbytes(self) -> int:
        return int(self.array.nbytes)

    @property
    def hist(self) -> Histogram:
        """This node's histogram (dense-held; not kept here, so the cache stays as budgeted)."""
        if self._hist is not None:
            return self._hist
        return Histogram.from_dense(self.plan.radices(self.node), self.array.reshape(-1))

    def counts(self) -> np.ndarray:
        """The class sizes (non-empty cells), without building keys."""
        flat = self.array.reshape(-1)
        return flat[flat != 0]

    def _maps(self, node: tuple[int, ...]) -> list[np.ndarray]:
        return [d.level_map(a, b) for d, a, b in zip(self.plan.dims, self.node, node, strict=True)]

    def reduce_axis(self, axis: int, level: int) -> _DenseSource:
        """The node with one QID raised to `level` (everything else unchanged)."""
        m = self.plan.dims[axis].level_map(self.node[axis], level)
        node = list(self.node)
        node[axis] = level
        return _DenseSource(self.plan, tuple(node), None, sum_groups(self.array, m, axis))

    def steps(self, node: tuple[int, ...]) -> list[int]:
        """QIDs to raise, largest reduction first (the array shrinks fastest). Every QID whose
        level changes is raised, even by a map that only renumbers its codes (a categorical
        level whose every label has its own parent)."""
        maps = self._maps(node)
        factor = [m.size / (int(m.max()) + 1) for m in maps]
        changed = (i for i in range(len(maps)) if self.node[i] != node[i])
        return sorted(changed, key=lambda i: -factor[i])

    def roll_up(self, node: tuple[int, ...]) -> Histogram:
        current = self
        for axis in self.steps(node):
            current = current.reduce_axis(axis, node[axis])
        flat = current.array.reshape(-1)
        keys = np.flatnonzero(flat)
        return Histogram(
            self.plan.radices(node), keys.astype(np.int64), flat[keys].astype(np.int64)
        )


class RollUps:
    """Node histograms rolled up from the cheapest cached node below them, not always the root.

    The root is held dense (int32 cells) when its possible bins are few (<= 2^24), else as sparse
    sorted keys. Dense roll-ups go one QID at a time (largest reduction first) and cache the
    intermediate nodes, which many later nodes share. Sparse roll-ups cache results at least 8x
    smaller than the root. Above a sparse root of many bins (>= HUB_MIN_BINS), a node of few
    possible bins with no dense node cached below it gets a dense hub: the node below it whose
    cells fit (<= 1/HUB_SHARE of the budget) and that lies below the most nodes no dense node
    covers yet, counted from the sparse source in one pass; that node and the later ones above
    the hub are rolled up densely. Hubs and dense steps make room by dropping the least recently
    used cached nodes (steps before hubs). The cache holds at most CACHE_FACTOR times the root's
    bytes (ADR 0004); one more array of the root's bins is the sparse passes' scratch.
    `fewest_classes` bounds a slow node's class count without rolling it up; the class counts
    of the nodes rolled up are remembered (a node above one of few bins is not worth bounding).
    """

    def __init__(self, plan: Plan, root_hist: Histogram, values: bool = False):
        self.plan = plan
        self.dense = root_hist.n_possible <= DENSE_LIMIT
        self._tables = _BlockTables()  # the sparse sources' block tables
        root = self._source(plan.root, root_hist)
        self.root_bins = root_hist.n_bins
        self.root_size = root.nbytes
        self.budget = max(CACHE_FACTOR * self.root_size, CACHE_FLOOR)
        self.used = 0
        self.cache: dict[tuple[int, ...], _Source | _DenseSource] = {}
        self._nodes = np.zeros((0, len(plan.root)), dtype=np.int64)  # cached nodes, as rows
        self._costs = np.zeros(0, dtype=np.int64)  # their roll-up costs (dense cells)
        self._dense_rows = np.zeros(0, dtype=bool)
        self._last: dict[tuple[int, ...], int] = {}  # node -> last use (least recent dropped)
        self._hubs: set[tuple[int, ...]] = set()
        self._tick = 0
        self._shape = tuple(t - r + 1 for r, t in zip(plan.root, plan.tops, strict=True))
        self._uncovered: np.ndarray | None = None  # nodes above no dense cached node
        self._work: np.ndarray | None = None  # see _scratch
        self._seen_nodes = np.zeros((0, len(plan.root)), dtype=np.int64)  # see _known
        self._seen_bins = np.zeros(0, dtype=np.int64)
        self._seen_n = 0
        self._keep(plan.root, root)
        self._dtype = np.int32 if root_hist.n_records < 2**31 else np.int64
        self.hub_cells = 0
        if not self.dense and self.root_bins >= HUB_MIN_BINS:
            share = max(1, HUB_SHARE // 2) if values else HUB_SHARE
            cells = self.budget // (share * np.dtype(self._dtype).itemsize)
            self.hub_cells = int(min(HUB_LIMIT, cells))

    # ------------------------------------------------------------------ the cache
    def _keep(self, node: tuple[int, ...], source: _Source | _DenseSource) -> None:
        dense = isinstance(source, _DenseSource)
        cost = source.size if dense else _SPARSE_COST * source.n_bins
        self.cache[node] = source
        self._nodes = np.vstack([self._nodes, np.asarray(node, dtype=np.int64)[None]])
        self._costs = np.append(self._costs, cost)
        self._dense_rows = np.append(self._dense_rows, dense)
        if len(self.cache) > 1:
            self.used += source.nbytes
        self._touch(node)
        if dense and self._uncovered is not None:
            self._uncovered[self._up(node)] = False

    def _drop(self, node: tuple[int, ...]) -> None:
        source = self.cache.pop(node)
        self._hubs.discard(node)
        self.used -= source.nbytes
        del self._last[node]
        row = np.flatnonzero((self._nodes == np.asarray(node)).all(axis=1))[0]
        self._nodes = np.delete(self._nodes, row, axis=0)
        self._costs = np.delete(self._costs, row)
        self._dense_rows = np.delete(self._dense_rows, row)
        if isinstance(source, _DenseSource):
            self._uncovered = None  # recounted when the next hub is chosen

    def _touch(self, node: tuple[int, ...]) -> None:
        self._tick += 1
        self._last.pop(node, None)  # re-inserted: the dict's order is least recent first
        self._last[node] = self._tick

    def _make_room(self, nbytes: int, spare_hubs: bool = False) -> bool:
        """Drop the least recently used cached nodes (never the root; hubs last, or never with
        `spare_hubs`) until `nbytes` fit."""
        if nbytes > self.budget:
            return False
        while self.used + nbytes > self.budget:
            root = self.plan.root
            victim = next((n for n in self._last if n != root and n not in self._hubs), None)
            if victim is None and not spare_hubs:
                victim = next((n for n in self._last if n != root), None)
            if victim is None:
                return False
            self._drop(victim)
        return True

    def _source(self, node: tuple[int, ...], hist: Histogram) -> _Source | _DenseSource:
        if self.dense:
            return _DenseSource(self.plan, node, hist)
        return _Source(self.plan, node, hist, self._tables)

    def _closest(self, node: tuple[int, ...], dense_only: bool = False):
        """The cheapest cached node below `node` to roll up from (the root always is one);
        `dense_only`: the cheapest dense one, or None."""
        below = (self._nodes <= np.asarray(node)).all(axis=1)
        if dense_only:
            below &= self._dense_rows
            if not below.any():
                return None
        rows = np.flatnonzero(below)
        best = rows[np.argmin(self._costs[rows])]
        found = tuple(int(x) for x in self._nodes[best])
        self._touch(found)
        return self.cache[found]

    # ------------------------------------------------------------------ roll-ups
    def get(self, node: tuple[int, ...]) -> Histogram:
        """The node's histogram."""
        found = self._find(node)
        hist = found if isinstance(found, Histogram) else found.hist
        self._known(node, hist.n_bins)
        return hist

    def sizes(self, node: tuple[int, ...]) -> np.ndarray:
        """The node's class sizes, in any order (all that evaluating a node needs)."""
        found = self._find(node)
        sizes = found.counts if isinstance(found, Histogram) else found.counts()
        self._known(node, sizes.size)
        return sizes

    def _known(self, node: tuple[int, ...], bins: int) -> None:
        """Remember a node's non-empty bins: every node above has no more (`fewest_classes`)."""
        if self.dense:
            return
        if self._seen_n == len(self._seen_bins):
            grow = max(64, 2 * self._seen_n)
            self._seen_nodes = np.resize(self._seen_nodes, (grow, len(node)))
            self._seen_bins = np.resize(self._seen_bins, grow)
        self._seen_nodes[self._seen_n] = node
        self._seen_bins[self._seen_n] = bins
        self._seen_n += 1

    def _find(self, node: tuple[int, ...]) -> Histogram | _DenseSource:
        if node in self.cache:
            self._touch(node)
            found = self.cache[node]
            return found if isinstance(found, _DenseSource) else found.hist
        if self.dense:
            return self._dense_from(self._closest(node), node)
        source = self._closest(node)
        if isinstance(source, _Source) and self._wants_hub(source, node):
            source = self._closest(node, dense_only=True) or self._hub(node) or source
        if isinstance(source, _DenseSource):
            return self._dense_from(source, node)
        out = source.roll_up(node, self._scratch())
        # kept: a result 8x smaller than the root, if it fits; or a small one at most half its
        # source, making room (nodes above it roll up from it: a search climbing paths of
        # small nodes, e.g. (class, value) tables of t-closeness, rolls up from its last steps)
        small = out.n_bins <= KEEP_SMALL_BINS and out.n_bins * KEEP_SHRINK <= source.n_bins
        if out.n_bins * 8 <= self.root_bins or small:
            kept = _Source(self.plan, node, out, self._tables)
            fits = self.used + kept.nbytes <= self.budget
            if fits or (small and self._make_room(kept.nbytes, spare_hubs=True)):
                self._keep(node, kept)
        return out

    def fewest_classes(self, node: tuple[int, ...], enough: int, ignore=()) -> int | None:
        """A lower bound of the node's non-empty bins when rolling the node up would be slow (a
        node of many possible bins above a sparse root of at least BOUND_MIN_BINS bins,
        `_Source.distinct_at_least`),
        counted until it exceeds `enough`; None when the roll-up is cheap or the count could
        not exceed `enough` (the source's bins, or the node's possible bins, are no more)."""
        if self.dense or self.root_bins < max(BOUND_MIN_BINS, enough + 1) or node in self.cache:
            return None  # no source is large enough to be slow, or to hold more bins
        radices = self.plan.radices(node)
        if math.prod(radices) <= self.hub_cells:  # a hub serves it
            return None
        if math.prod(r for i, r in enumerate(radices) if i not in ignore) <= enough:
            return None
        source = self._closest(node)
        if not isinstance(source, _Source) or source.n_bins < max(BOUND_MIN_BINS, enough + 1):
            return None
        n = self._seen_n
        below = (self._seen_nodes[:n] <= np.asarray(node)).all(axis=1)
        if np.any(self._seen_bins[:n][below] <= enough):  # a finer node has no more bins
            return None
        return source.distinct_at_least(node, enough, ignore)

    def _scratch(self) -> np.ndarray | None:
        """One int64 array of the root's bins, reused by every sparse pass for its keys (None:
        a root of one slice, whose passes need none)."""
        if self.root_bins <= _SLICE:
            return None
        if self._work is None:
            self._work = np.empty(self.root_bins, dtype=np.int64)
        return self._work

    def _wants_hub(self, source: _Source, node: tuple[int, ...]) -> bool:
        return (
            self.hub_cells > 0
            and source.n_bins >= HUB_MIN_BINS
            and math.prod(self.plan.radices(node)) <= self.hub_cells
        )

    def _dense_from(self, source: _DenseSource, node: tuple[int, ...]) -> _DenseSource:
        """Raise `source` to `node` one QID at a time, caching the steps (when they fit)."""
        for axis in source.steps(node):
            step = list(source.node)
            step[axis] = node[axis]
            step = tuple(step)
            if isinstance(self.cache.get(step), _DenseSource):
                self._touch(step)
                source = self.cache[step]
                continue
            source = source.reduce_axis(axis, node[axis])
            keep = step != node and step not in self.cache
            if keep and self._room_for_step(source.nbytes):
                self._keep(step, source)
        return source

    def _room_for_step(self, nbytes: int) -> bool:
        """Whether a dense step fits: above hubs by dropping older steps (never a hub),
        above a dense root only in room left (its steps are not dropped)."""
        if self.hub_cells:
            return self._make_room(nbytes, spare_hubs=True)
        return self.used + nbytes <= self.budget

    # ------------------------------------------------------------------ hubs
    def _up(self, node: tuple[int, ...]) -> tuple[slice, ...]:
        return tuple(slice(int(x) - r, None) for x, r in zip(node, self.plan.root, strict=True))

    def _hub(self, node: tuple[int, ...]) -> _DenseSource | None:
        """A dense hub for `node` (see the class), or None if it cannot be cached."""
        hub = self._hub_node(node)
        if hub == self.plan.root:  # the sparse root itself (only when forced: it would be dense)
            return None
        nbytes = math.prod(self.plan.radices(hub)) * np.dtype(self._dtype).itemsize
        if hub in self.cache:  # a small sparse node, held dense from now on
            self._drop(hub)
        if not self._make_room(nbytes):
            return None
        below = (self._nodes <= np.asarray(hub)).all(axis=1) & ~self._dense_rows
        rows = np.flatnonzero(below)
        at = tuple(int(x) for x in self._nodes[rows[np.argmin(self._costs[rows])]])
        array = self.cache[at].dense_at(hub, self._dtype, self._scratch())
        source = _DenseSource(self.plan, hub, None, array)
        self._keep(hub, source)
        self._hubs.add(hub)
        return source

    def _hub_node(self, node: tuple[int, ...]) -> tuple[int, ...]:
        """Among the nodes from the root to `node` whose cells fit a hub, the one below the most
        lattice nodes that no dense cached node covers (on lattices of <= _SCORE_LIMIT nodes;
        else below the most lattice nodes); ties: fewer cells, then the first in C order."""
        plan, root = self.plan, self.plan.root
        sub = tuple(n - r + 1 for n, r in zip(node, root, strict=True))
        d = len(sub)
        cells = np.ones(sub, dtype=np.float64)
        volume = np.ones(sub, dtype=np.float64)
        for i, (r, s) in enumerate(zip(root, sub, strict=True)):
            shape = [1] * d
            shape[i] = s
            levels = np.arange(r, r + s)
            cells = cells * np.asarray(plan.dims[i].cards, dtype=np.float64)[levels].reshape(shape)
            volume = volume * (plan.dims[i].top - levels + 1).astype(np.float64).reshape(shape)
        fits = cells <= self.hub_cells  # exact: products beyond 2^53 are far above the limit
        score = volume
        if math.prod(self._shape) <= _SCORE_LIMIT:
            if self._uncovered is None:
                self._uncovered = np.ones(self._shape, dtype=bool)
                for n in np.flatnonzero(self._dense_rows).tolist():
                    self._uncovered[self._up(tuple(self._nodes[n].tolist()))] = False
            # per candidate, the uncovered nodes above it: each axis's levels beyond `node`
            # summed into its last level (the box shrinks to the candidates), then suffix sums
            suffix = self._uncovered
            for axis, s in enumerate(sub):
                head = suffix[(slice(None),) * axis + (slice(0, s - 1),)]
                tail = suffix[(slice(None),) * axis + (slice(s - 1, None),)]
                tail = tail.sum(axis=axis, keepdims=True, dtype=np.int64)
                suffix = np.concatenate([head, tail], axis=axis)
            for axis in range(d):
                suffix = np.flip(np.cumsum(np.flip(suffix, axis), axis=axis), axis)
            score = suffix.astype(np.float64)
        flat = np.flatnonzero(fits.reshape(-1))
        order = np.lexsort((flat, cells.reshape(-1)[flat], -score.reshape(-1)[flat]))
        best = np.unravel_index(int(flat[order[0]]), sub)
        return tuple(int(x) + r for x, r in zip(best, root, strict=True))

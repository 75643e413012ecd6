"""The adaptive root (SPEC §4a, ADR 0012): N_RAM bounds the root's NON-EMPTY bins, measured.

Phase 1 fixes, from the dimensions alone, a chain of nodes from the all-zeros node up to paper
mode's root P (`root_chain`): each step raises one QID by one level, the one losing the least
precision (1/top_i), ties: the larger reduction of possible bins (card[l]/card[l+1]), then the
later QID in `qid_priority` order. Phase 2 counts at the current chain node and, whenever the
accumulated non-empty bins exceed N_RAM - 1, rolls the accumulated counts one chain step up
(`ChainCounts`). A subset of the data never has more non-empty bins at a node than all of it,
so the counts never pass the FIRST chain node whose bins over all data fit, and end there:
the root is the same however the chunks are grouped, ordered or merged (partials counted at
different chain positions are rolled to the highest of them, then up while they overflow).

Bins are (class, value) pairs, summed over the attributes, when criteria name sensitive
attributes (SPEC §4b); otherwise classes. P always fits (its possible bins do), so the root is
at or below P. Roll-ups are key arithmetic on sorted int64 keys, one QID per step.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from airflow_skald.core.count.histogram import (
    DENSE_LIMIT,
    Histogram,
    HistogramAccumulator,
    grouped,
)
from airflow_skald.core.count.root_counts import RootCounts
from airflow_skald.core.encode.class_sums import (
    PackedTop,
    grouped_columns,
    grouped_rows,
    packed_bits,
    unpacked,
)
from airflow_skald.core.encode.class_sums import packed as packed_column
from airflow_skald.core.encode.dimensions import Dimension

if TYPE_CHECKING:
    from airflow_skald.core.encode.plan import Plan

# Keys (class key * m + value code) are int64: chain nodes with more possible bins than this
# are left out of the chain's start (the search cannot hold such a root either).
KEY_LIMIT = 1 << 62

Node = tuple[int, ...]


def root_chain(
    dims: Sequence[Dimension], upper: Node, priority: Sequence[int], factor: int = 1
) -> tuple[Node, ...]:
    """The chain from the all-zeros node up to `upper` (paper mode's root), one level of one
    QID per step; nodes whose keys would not fit int64 are dropped from its start."""
    later = {q: r for r, q in enumerate(priority)}  # a larger rank is raised first on ties
    node = [0] * len(dims)
    chain = [tuple(node)]

    def better(i: int, j: int) -> bool:
        """Raising QID i loses less than raising QID j (or ties and i goes first)."""
        ti, tj = dims[i].top, dims[j].top
        if ti != tj:  # precision lost: 1/top, smaller first
            return ti > tj
        ci, cj = dims[i].cards, dims[j].cards
        li, lj = node[i], node[j]
        ri, rj = ci[li] * cj[lj + 1], cj[lj] * ci[li + 1]  # card[l]/card[l+1], exactly
        if ri != rj:
            return ri > rj
        return later[i] > later[j]

    while tuple(node) != tuple(upper):
        best = None
        for i in range(len(dims)):
            if node[i] < upper[i] and (best is None or better(i, best)):
                best = i
        node[best] += 1
        chain.append(tuple(node))
    start = 0
    while start < len(chain) - 1 and possible_bins(dims, chain[start]) * factor > KEY_LIMIT:
        start += 1
    return tuple(chain[start:])


def possible_bins(dims: Sequence[Dimension], node: Node) -> int:
    return math.prod(d.cards[level] for d, level in zip(dims, node, strict=True))


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


class _Buckets:
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
    def empty(cls, radices: tuple[int, ...], width: int = 2, plain: bool = True) -> _Buckets:
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

    def raised(self, axis: int, level_map: np.ndarray, card: int) -> _Buckets:
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
            return _Buckets(radices, pieces, self.width, self.plain)  # still in order
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
        return _Buckets(radices, parts, self.width, self.plain)


_EMPTY = np.zeros(0, dtype=np.int64)


def _cut(table: tuple) -> list[tuple]:
    """Sorted unique keys (and their columns) cut into buckets of about BUCKET_BINS (copies)."""
    size = table[0].size
    n_buckets = max(1, -(-size // BUCKET_BINS))
    cuts = [(i * size) // n_buckets for i in range(n_buckets + 1)]
    return [tuple(c[a:b].copy() for c in table) for a, b in zip(cuts[:-1], cuts[1:], strict=True)]


class ChainCounts:
    """Phase 2's adaptive accumulator: counts at the current chain node, rolled one chain step
    up whenever the non-empty bins exceed N_RAM - 1 (peak: these bins plus one chunk's).

    It holds the tables N_RAM bounds: one (class, value) table per attribute that criteria
    name, or the class table in a k-only run. With criteria the class counts are not counted
    separately: they are the (class, value) counts summed over the values (`result`). QIDs in
    `sums` (`encode.class_sums`, runs without criteria) add a column of value sums per class
    bin to the class table: it follows the keys through every merge and roll-up (one sort for
    both) and is not what N_RAM bounds. One such QID whose sums fit (`class_sums.packed_bits`)
    shares the counts' column, `sum << bits | records`: the table is then as wide as a k-only
    run's and every merge and roll-up adds both figures at once.

    `add` takes counts made at any chain node: counts below the current node are rolled up
    before they are added; counts above it roll the accumulator up to them first (a merge).
    A chunk's records come in two steps: `chunk_tables` (its counts, in a reading thread) and
    `add_chunk` (into the accumulator). A class table with sums goes between them as
    (class histogram, sums aligned with its keys) or (histogram of the packed column, ()), or
    at the top as (keys, weights).

    At the chain's top (paper mode's root P, whose possible bins fit N_RAM, so no count can
    roll further) chunks are counted as paper mode counts its root: into a dense array when P
    has at most DENSE_LIMIT possible bins, with no sort per chunk.
    """

    def __init__(
        self,
        plan: Plan,
        chain: Sequence[Node],
        values: Mapping[str, int],
        sums: Sequence[str] = (),
    ):
        self.dims = plan.dims
        self.chain = [tuple(n) for n in chain]
        self.where = {n: i for i, n in enumerate(self.chain)}
        self.limit = plan.n_ram - 1
        self.m = dict(values)  # attribute -> number of value codes ({}: the class table)
        self.sums = tuple(sums)  # columns of the class table (dense at the top: ("sum", a))
        if self.sums and self.m:
            raise ValueError("sums per class are counted only beside the class table")
        self.bits = packed_bits(plan.stats, self.sums) if self.sums else None
        self.position = 0
        self.tables = {
            t: _Buckets.empty(self._radices(t, self.node), self._width(t), not self.sums)
            for t in self._names()
        }
        self.top: dict | None = None
        if len(self.chain) == 1:
            self._open_top()

    def _names(self) -> list[str | None]:
        return list(self.m) or [None]  # None: the class table

    def _width(self, table: str | None) -> int:
        return 2 + (len(self.sums) if table is None and self.bits is None else 0)

    def _split(self, item) -> tuple[Histogram, tuple]:
        """A chunk table as (class counts, sums aligned with their keys), a packed column
        unpacked."""
        if isinstance(item, Histogram):
            return item, ()
        hist, sums = item
        if self.bits is None:
            return hist, sums
        counts, total = unpacked(hist.counts, self.bits)
        return Histogram(hist.radices, hist.keys, counts), (total,)

    def _radices(self, table: str | None, node: Node) -> tuple[int, ...]:
        radices = self.radices(node)
        return radices if table is None else (*radices, self.m[table])

    @property
    def node(self) -> Node:
        return self.chain[self.position]

    def radices(self, node: Node) -> tuple[int, ...]:
        return tuple(d.cards[level] for d, level in zip(self.dims, node, strict=True))

    def _open_top(self) -> None:
        """From here on, count as paper mode counts at its root (the chain's last node)."""
        self.top = {}
        for t, table in self.tables.items():
            if t is None and self.bits is not None and math.prod(table.radices) <= DENSE_LIMIT:
                self.top[t] = PackedTop(table.radices, self.bits)  # one word per bin
                for part in table.parts:
                    self.top[t].add(part[0], part[1])
                continue
            names = [t, *(("sum", a) for a in self.sums)] if t is None else [t]
            for name in names:
                self.top[name] = HistogramAccumulator(table.radices)
            for part in table.parts:
                columns = part[1:] if table.plain or self.bits is None else None
                if columns is None:
                    columns = unpacked(part[1], self.bits)
                for name, column in zip(names, columns, strict=True):
                    self.top[name].add(Histogram(table.radices, part[0], column))
        self.tables = {}

    def _tables_of(self, counts: RootCounts) -> dict:
        if self.m:
            return dict(counts.values)
        if not self.sums:
            return {None: counts.classes}
        keys = counts.classes.keys
        aligned = []
        for a in self.sums:
            column = np.zeros(keys.size, dtype=np.int64)
            column[np.searchsorted(keys, counts.sums[a].keys)] = counts.sums[a].counts
            aligned.append(column)
        if self.bits is not None:
            both = packed_column(counts.classes.counts.astype(np.int64), aligned[0], self.bits)
            return {None: (Histogram(counts.classes.radices, keys, both), ())}
        return {None: (counts.classes, tuple(aligned))}

    def _next(self, node: Node) -> tuple[Node, int, np.ndarray, int]:
        """The chain node after `node`, the QID that rises, its level map and new card."""
        dst = self.chain[self.where[node] + 1]
        axis = next(i for i, (a, b) in enumerate(zip(node, dst, strict=True)) if a != b)
        dim = self.dims[axis]
        return dst, axis, dim.level_map(node[axis], dst[axis]), dim.cards[dst[axis]]

    def step(self, tables: dict, node: Node) -> tuple[dict, Node]:
        """`tables` (at chain node `node`) rolled to the next chain node (one QID, one level)."""
        dst, axis, level_map, card = self._next(node)
        out = {}
        for t, item in tables.items():
            if isinstance(item, Histogram):
                out[t] = raise_one(item, axis, level_map, card)
                continue
            hist, sums = item
            keys, radices = raised_keys(hist.keys, hist.radices, axis, level_map, card)
            keys, counts, *sums = grouped_columns(keys, [hist.counts, *sums])
            out[t] = (Histogram(radices, keys, counts), tuple(sums))
        return out, dst

    def _rise(self) -> None:
        _, axis, level_map, card = self._next(self.node)
        self.tables = {t: table.raised(axis, level_map, card) for t, table in self.tables.items()}
        self.position += 1
        if self.position == len(self.chain) - 1:
            self._open_top()

    def add(self, counts: RootCounts) -> None:
        at = self.where.get(counts.node)
        if at is None:
            raise ValueError(f"counts at node {counts.node} are not on the root chain")
        while self.position < at:  # a partial further up: everything joins it there
            self._rise()
        self.add_chunk(counts.node, self._tables_of(counts))

    def chunk_tables(
        self,
        node: Node,
        keys: np.ndarray,
        values: Mapping[str, np.ndarray],
        weights: Mapping[str, np.ndarray] | None = None,
    ) -> dict:
        """One chunk's records, given their keys at `node` (class keys; key * m + code; the
        `sums` QIDs' weights per record), as what `add_chunk` takes: the keys themselves at
        the chain's top (counted densely there), else their sorted counts (and sums). Safe
        to call from reading threads."""
        chunk = {t: keys if t is None else values[t] for t in self._names()}
        w = tuple(weights[a] for a in self.sums) if self.sums else ()
        if node == self.chain[-1]:
            return {**chunk, None: (keys, w)} if w else chunk
        out = {}
        for t, rows in chunk.items():
            radices = self._radices(t, node)
            if t is None and w and self.bits is not None:
                k, both = grouped_rows(rows, w, math.prod(radices), self.bits)
                out[t] = (Histogram(radices, k, both), ())
            elif t is None and w:
                k, counts, *sums = grouped_rows(rows, w, math.prod(radices))
                out[t] = (Histogram(radices, k, counts), tuple(sums))
            else:
                out[t] = Histogram(radices, *grouped(rows, None, math.prod(radices)))
        return out

    def add_chunk(self, node: Node, tables: dict) -> None:
        """Add what `chunk_tables` made at `node` (at or below the current node)."""
        if node == self.chain[-1] and any(_is_rows(k) for k in tables.values()):
            for t, rows in tables.items():
                if isinstance(rows, tuple):
                    rows, w = rows
                    if isinstance(self.top[t], PackedTop):
                        self.top[t].add_rows(rows, w[0])
                        continue
                    for a, weights in zip(self.sums, w, strict=True):
                        self.top[("sum", a)].add_weighted(rows, weights)
                self.top[t].add_keys(rows)
            return
        while self.where[node] < self.position:
            tables, node = self.step(tables, node)
        for t, item in tables.items():
            if self.top is not None and isinstance(self.top[t], PackedTop):
                self.top[t].add(item[0].keys, item[0].counts)
            elif self.top is not None:
                hist, sums = self._split(item)
                self.top[t].add(hist)
                for a, column in zip(self.sums if sums else (), sums, strict=True):
                    self.top[("sum", a)].add(Histogram(hist.radices, hist.keys, column))
            else:
                hist, sums = (item, ()) if isinstance(item, Histogram) else item
                self.tables[t].add((hist.keys, hist.counts, *sums))
        while self.position < len(self.chain) - 1 and self._fill() > self.limit:
            self._rise()

    def _fill(self) -> int:
        return sum(t.n_bins for t in self.tables.values())

    def result(self) -> RootCounts:
        if self.top is not None and isinstance(self.top.get(None), PackedTop):
            classes, total = self.top[None].result()
            tables, sums = {None: classes}, {self.sums[0]: total}
        elif self.top is not None:
            tables = {t: acc.result() for t, acc in self.top.items()}
            sums = {a: tables.pop(("sum", a)) for a in self.sums}
        else:
            sums = {}
            if self.sums:  # the class table with its sums: joined once, then split
                radices = self.tables[None].radices
                keys, counts, *columns = self.tables[None].joined()
                if self.bits is not None:
                    counts, total = unpacked(counts, self.bits)
                    columns = [total]
                tables = {None: Histogram(radices, keys, counts)}
                for a, column in zip(self.sums, columns, strict=True):
                    sums[a] = Histogram(radices, keys, column)
            else:
                tables = {t: table.histogram() for t, table in self.tables.items()}
        if not self.m:
            return RootCounts(tables[None], {}, node=self.node, sums=sums)
        classes = tables[next(iter(self.m))].sum_last_axis()
        return RootCounts(classes, tables, node=self.node)


def _is_rows(item) -> bool:
    """What `chunk_tables` gives at the chain's top: record keys (and weights), not counts."""
    return isinstance(item, np.ndarray) or (
        isinstance(item, tuple) and isinstance(item[0], np.ndarray)
    )


def merge_on_chain(plan: Plan, parts: Sequence[RootCounts]) -> RootCounts:
    """Partials counted at (possibly) different chain nodes, merged exactly: each rolled up to
    the highest of them, then up the chain while the sum overflows N_RAM."""
    if not plan.chain or any(p.node not in plan.chain for p in parts):
        return RootCounts.merge(parts)  # a fixed root (paper mode): all counted there
    values = {a: int(h.radices[-1]) for a, h in parts[0].values.items()}
    acc = ChainCounts(plan, plan.chain, values, list(parts[0].sums))
    for part in sorted(parts, key=lambda p: -acc.where[p.node]):  # the highest first
        acc.add(part)
    return acc.result()

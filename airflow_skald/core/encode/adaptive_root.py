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

from airflow_skald.core.count.histogram import Histogram, HistogramAccumulator, grouped
from airflow_skald.core.count.root_counts import RootCounts
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


def raise_one(hist: Histogram, axis: int, level_map: np.ndarray, card: int) -> Histogram:
    """`hist` with QID `axis` mapped by `level_map` to a level of `card` bins: one key
    rewrite in place (new key = key + (high * (card - old) + map[code] - code) * low_size, so
    the high and low digits are never split out) and one grouping, vectorised. Temporaries:
    about three arrays of the histogram's size."""
    radices = list(hist.radices)
    low_size = math.prod(radices[axis + 1 :])
    old = radices[axis]
    radices[axis] = card
    if hist.n_bins == 0:
        return Histogram.empty(radices)
    keys = hist.keys
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
    return Histogram(radices, *grouped(shift, hist.counts, math.prod(radices), owned=True))


def add_sorted(a: Histogram, b: Histogram) -> Histogram:
    """Exact sum of two sparse histograms over the same node. Both key arrays are sorted and
    unique, so a stable sort of the two together is one linear merge of two runs (timsort);
    a key in both then sits in two adjacent slots, added into the first."""
    if b.n_bins == 0:
        return a
    if a.n_bins == 0:
        return b
    keys = np.concatenate([a.keys, b.keys])
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    counts = np.concatenate([a.counts, b.counts])[order]
    del order
    twice = np.flatnonzero(keys[1:] == keys[:-1])
    counts[twice] += counts[twice + 1]
    keep = np.ones(keys.size, dtype=bool)
    keep[twice + 1] = False
    return Histogram(a.radices, keys[keep], counts[keep])


# A sparse table is cut by key range into buckets of about this many bins, so that merging a
# chunk touches small arrays (in cache, reused by malloc) instead of one array of N_RAM bins.
BUCKET_BINS = 1 << 18


class _Buckets:
    """One table's counts at a sparse chain node, cut by key range into buckets: bucket i
    holds the sorted unique keys in [bounds[i-1], bounds[i]) and their counts. A chunk's
    sorted keys are cut at the same bounds and each piece merged into its bucket (a linear
    merge of two small runs); together the buckets are the whole table in key order, so the
    non-empty bins are the sum of their sizes, exactly."""

    def __init__(self, radices: tuple[int, ...], parts: list[tuple[np.ndarray, np.ndarray]]):
        self.radices = radices
        self.parts = [p for p in parts if p[0].size] or [(_EMPTY, _EMPTY)]
        self.bounds = np.asarray([k[0] for k, _ in self.parts[1:]], dtype=np.int64)
        self.n_bins = sum(int(k.size) for k, _ in self.parts)

    @classmethod
    def of(cls, hist: Histogram) -> _Buckets:
        return cls(hist.radices, _cut(hist.keys, hist.counts))

    def add(self, hist: Histogram) -> None:
        if not hist.n_bins:
            return
        cuts = np.r_[0, np.searchsorted(hist.keys, self.bounds), hist.n_bins]
        for i, (a, b) in enumerate(zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True)):
            if a == b:
                continue
            keys, counts = self.parts[i]
            if not keys.size:  # copies: a view would keep the chunk's whole arrays alive
                self.parts[i] = (hist.keys[a:b].copy(), hist.counts[a:b].copy())
                self.n_bins += b - a
                continue
            merged = add_sorted(
                Histogram(self.radices, keys, counts),
                Histogram(self.radices, hist.keys[a:b], hist.counts[a:b]),
            )
            self.n_bins += merged.n_bins - int(keys.size)
            self.parts[i] = (merged.keys, merged.counts)
        if max(k.size for k, _ in self.parts) > 4 * BUCKET_BINS:
            self.parts = _cut(*self._joined())  # re-cut into even buckets: O(bins), rarely
            self.bounds = np.asarray([k[0] for k, _ in self.parts[1:]], dtype=np.int64)

    def _joined(self) -> tuple[np.ndarray, np.ndarray]:
        if len(self.parts) == 1:
            return self.parts[0]
        keys = np.concatenate([k for k, _ in self.parts])
        counts = np.concatenate([c for _, c in self.parts])
        return keys, counts

    def histogram(self) -> Histogram:
        return Histogram(self.radices, *self._joined())

    def raised(self, axis: int, level_map: np.ndarray, card: int) -> _Buckets:
        """These counts one level up in QID `axis`, bucket by bucket (the temporaries stay
        small); the buckets' pieces are re-cut by key range and merged where they meet."""
        pieces = []
        while self.parts:  # each old bucket goes as its raised piece comes
            keys, counts = self.parts.pop(0)
            up = raise_one(Histogram(self.radices, keys, counts), axis, level_map, card)
            pieces.append((up.keys, up.counts))
        radices = up.radices
        pieces = [p for p in pieces if p[0].size]
        if all(a[0][-1] < b[0][0] for a, b in zip(pieces[:-1], pieces[1:], strict=True)):
            return _Buckets(radices, pieces)  # still in order (e.g. the last QID rose)
        n_possible = math.prod(radices)
        sample = np.sort(np.concatenate([k[:: max(1, k.size // 64)] for k, _ in pieces]))
        n = sum(int(k.size) for k, _ in pieces)
        n_buckets = max(1, -(-n // BUCKET_BINS))
        bounds = np.unique(sample[(np.arange(1, n_buckets) * sample.size) // n_buckets])
        split = []
        while pieces:  # copies, so each piece is freed once it is cut: peak ~ one table
            keys, counts = pieces.pop(0)
            cuts = np.r_[0, np.searchsorted(keys, bounds), keys.size].tolist()
            split.append(
                [
                    (keys[a:b].copy(), counts[a:b].copy())
                    for a, b in zip(cuts[:-1], cuts[1:], strict=True)
                ]
            )
            del keys, counts
        parts = []
        for i in range(bounds.size + 1):
            keys = np.concatenate([s[i][0] for s in split])
            counts = np.concatenate([s[i][1] for s in split])
            for s in split:
                s[i] = (_EMPTY, _EMPTY)
            parts.append(grouped(keys, counts, n_possible, owned=True))
        return _Buckets(radices, parts)


_EMPTY = np.zeros(0, dtype=np.int64)


def _cut(keys: np.ndarray, counts: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Sorted unique keys (and counts) cut into buckets of about BUCKET_BINS (copies)."""
    n_buckets = max(1, -(-keys.size // BUCKET_BINS))
    cuts = [(i * keys.size) // n_buckets for i in range(n_buckets + 1)]
    return [
        (keys[a:b].copy(), counts[a:b].copy()) for a, b in zip(cuts[:-1], cuts[1:], strict=True)
    ]


class ChainCounts:
    """Phase 2's adaptive accumulator: counts at the current chain node, rolled one chain step
    up whenever the non-empty bins exceed N_RAM - 1 (peak: these bins plus one chunk's).

    It holds the tables N_RAM bounds: one (class, value) table per attribute that criteria
    name, or the class table in a k-only run. With criteria the class counts are not counted
    separately: they are the (class, value) counts summed over the values (`result`). Beside
    them, per QID in `sums` (`encode.class_sums`), a table of value sums over the class bins:
    it follows every roll-up but is not what N_RAM bounds (its keys are the classes').

    `add` takes counts made at any chain node: counts below the current node are rolled up
    before they are added; counts above it roll the accumulator up to them first (a merge).
    A chunk's records come in two steps: `chunk_tables` (its counts, in a reading thread) and
    `add_chunk` (into the accumulator).

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
        self.sums = tuple(sums)  # their tables are named ("sum", attribute)
        self.position = 0
        self.tables = {
            t: _Buckets.of(Histogram.empty(self._radices(t, self.node))) for t in self._names()
        }
        self.top: dict[str | None, HistogramAccumulator] | None = None
        if len(self.chain) == 1:
            self._open_top()

    def _names(self) -> list:
        return [*(list(self.m) or [None]), *(("sum", a) for a in self.sums)]  # None: classes

    def _radices(self, table: str | tuple | None, node: Node) -> tuple[int, ...]:
        radices = self.radices(node)
        return (*radices, self.m[table]) if isinstance(table, str) else radices

    @property
    def node(self) -> Node:
        return self.chain[self.position]

    def radices(self, node: Node) -> tuple[int, ...]:
        return tuple(d.cards[level] for d, level in zip(self.dims, node, strict=True))

    def _open_top(self) -> None:
        """From here on, count as paper mode counts at its root (the chain's last node)."""
        self.top = {}
        for t, table in self.tables.items():
            self.top[t] = HistogramAccumulator(table.radices)
            for keys, counts in table.parts:
                self.top[t].add(Histogram(table.radices, keys, counts))
        self.tables = {}

    def _tables_of(self, counts: RootCounts) -> dict:
        tables = dict(counts.values) if self.m else {None: counts.classes}
        return {**tables, **{("sum", a): counts.sums[a] for a in self.sums}}

    def _next(self, node: Node) -> tuple[Node, int, np.ndarray, int]:
        """The chain node after `node`, the QID that rises, its level map and new card."""
        dst = self.chain[self.where[node] + 1]
        axis = next(i for i, (a, b) in enumerate(zip(node, dst, strict=True)) if a != b)
        dim = self.dims[axis]
        return dst, axis, dim.level_map(node[axis], dst[axis]), dim.cards[dst[axis]]

    def step(self, tables: dict, node: Node) -> tuple[dict, Node]:
        """`tables` (at chain node `node`) rolled to the next chain node (one QID, one level)."""
        dst, axis, level_map, card = self._next(node)
        return {t: raise_one(h, axis, level_map, card) for t, h in tables.items()}, dst

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
        the chain's top (counted densely there; (keys, weights) for a sum table), else their
        sorted counts. Safe to call from reading threads."""
        chunk = {}
        for t in self._names():
            if isinstance(t, tuple):
                chunk[t] = (keys, weights[t[1]])
            else:
                chunk[t] = keys if t is None else values[t]
        if node == self.chain[-1]:
            return chunk
        out = {}
        for t, rows in chunk.items():
            radices = self._radices(t, node)
            rows, w = rows if isinstance(rows, tuple) else (rows, None)
            out[t] = Histogram(radices, *grouped(rows, w, math.prod(radices)))
        return out

    def add_chunk(self, node: Node, tables: dict) -> None:
        """Add what `chunk_tables` made at `node` (at or below the current node)."""
        if node == self.chain[-1] and any(
            isinstance(k, np.ndarray | tuple) for k in tables.values()
        ):
            for t, keys in tables.items():
                if isinstance(keys, tuple):
                    self.top[t].add_weighted(*keys)
                else:
                    self.top[t].add_keys(keys)
            return
        while self.where[node] < self.position:
            tables, node = self.step(tables, node)
        if self.top is not None:
            for t, hist in tables.items():
                self.top[t].add(hist)
            return
        for t, hist in tables.items():
            self.tables[t].add(hist)
        while self.position < len(self.chain) - 1 and self._fill() > self.limit:
            self._rise()

    def _fill(self) -> int:
        return sum(t.n_bins for name, t in self.tables.items() if not isinstance(name, tuple))

    def result(self) -> RootCounts:
        if self.top is not None:
            tables = {t: acc.result() for t, acc in self.top.items()}
        else:
            tables = {t: table.histogram() for t, table in self.tables.items()}
        sums = {a: tables.pop(("sum", a)) for a in self.sums}
        if not self.m:
            return RootCounts(tables[None], {}, node=self.node, sums=sums)
        classes = tables[next(iter(self.m))].sum_last_axis()
        return RootCounts(classes, tables, node=self.node, sums=sums)


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

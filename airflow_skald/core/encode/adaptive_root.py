"""The adaptive root (docs/design.md §4a, ADR 0012): N_RAM bounds the root's NON-EMPTY bins, measured.

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
attributes (docs/design.md §4b); otherwise classes. P always fits (its possible bins do), so the root is
at or below P. Roll-ups are key arithmetic on sorted int64 keys, one QID per step
(`sparse_counts`); the chain itself is `root_chain`'s.
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
from airflow_skald.core.encode.root_chain import Node, root_chain
from airflow_skald.core.encode.sparse_counts import Buckets, raise_one, raised_keys

if TYPE_CHECKING:
    from airflow_skald.core.encode.plan import Plan

__all__ = ["ChainCounts", "merge_on_chain", "root_chain"]


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
            t: Buckets.empty(self._radices(t, self.node), self._width(t), not self.sums)
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

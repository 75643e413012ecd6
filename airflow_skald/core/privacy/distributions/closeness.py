"""t-closeness over per-class distributions (docs/design.md §4b): equal, ordered and hierarchical ground
distance (ARX's EMD), screened in float64 and decided exactly near the threshold."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

import numpy as np

from airflow_skald.core.count.histogram import run_starts
from airflow_skald.core.privacy.distributions.class_values import (
    EPS,
    INT64_SAFE,
    ClassValues,
    Verdict,
    as_fraction,
)

_DENSE_GROUPS = 4  # hierarchical EMD: a dense (class, node) table up to this many cells per row
_DENSE_MIN = 1 << 20  # ... or up to this many cells


def _global_counts(cv: ClassValues, global_counts: np.ndarray) -> np.ndarray:
    g = np.asarray(global_counts, dtype=np.int64)
    if g.ndim != 1 or (g.size and int(g.min()) < 0):
        raise ValueError("global counts must be a 1-d array of counts >= 0")
    if cv.value.size:
        if int(cv.value.max()) >= g.size:
            raise ValueError("a class holds a value code beyond the global counts")
        if np.any(g[cv.value] < cv.count):
            raise ValueError("a class holds more records of a value than the whole input")
    return g


def _decide(
    cv: ClassValues, t: Fraction | str | int | float, width: np.ndarray, distance_of
) -> Verdict:
    """Screen `distance_of(cv, exact=False)` in float64 against t; decide again exactly (Python
    ints, `distance_of(sub, exact=True)` -> (num, den) object arrays) every class whose float
    distance lies within its error bound `width` (a distance, per class) of t."""
    t = as_fraction(t)
    if not 0 < t <= 1:
        raise ValueError(f"t must be in (0, 1], got {t}")
    num, den = distance_of(cv, exact=False)
    n = cv.sizes()
    with np.errstate(divide="ignore", invalid="ignore"):
        dist = num / den
    dist[n == 0] = np.nan
    tf = float(t)
    ok = dist <= tf
    near = np.flatnonzero((n > 0) & (np.abs(dist - tf) <= width + 2 * EPS))
    if near.size:
        enum, eden = distance_of(cv.subset(near), exact=True)
        ok[near] = [a * t.denominator <= t.numerator * b for a, b in zip(enum, eden, strict=True)]
    return Verdict(ok, dist)


def _as(x: np.ndarray, exact: bool) -> np.ndarray:
    return x.astype(object) if exact else x.astype(np.float64)


def t_equal(cv: ClassValues, global_counts: np.ndarray, t: Fraction | str | int) -> Verdict:
    """t-closeness with equal ground distance: sum_v |c_v N - g_v n| / (2 N n) <= t.

    `global_counts[v]` = g_v, the records of value v over all N input records (N = their sum);
    values absent from a class count too. Figure: the distance (nan for an empty class).
    """
    g = _global_counts(cv, global_counts)
    width = 16 * EPS * (cv.distinct() + 8)
    return _decide(cv, t, width, lambda sub, exact: _equal_num_den(sub, g, exact))


def _equal_num_den(cv: ClassValues, g: np.ndarray, exact: bool):
    big_n = int(g.sum())
    n = _as(cv.sizes(), exact)
    gn = _as(g[cv.value], exact) * n[cv.cls]
    terms = np.abs(_as(cv.count, exact) * big_n - gn) - gn
    # the values absent from the class add sum g_v n over them = N n - sum over present g_v n
    num = n * big_n + cv.class_sum(terms)
    return num, n * (2 * big_n)


def t_ordered(
    cv: ClassValues,
    global_counts: np.ndarray,
    t: Fraction | str | int,
    rank: np.ndarray | None = None,
    every_value: bool = False,
) -> Verdict:
    """t-closeness with ordered distance: sum_i |sum_{j<=i} (c_j N - g_j n)| / (N n (m_all-1)).

    Values are ordered by `rank` (value code -> place, a permutation; None: the codes' own
    order, numeric with a null last); codes with g_v == 0 are skipped, so m_all = the number
    of values present in the input. 0 when m_all == 1. Figure: the distance (nan for an empty
    class).
    `every_value`: codes of count 0 are walked too (a research subset: ARX's order covers the
    population's values, ADR 0045).
    """
    g = _global_counts(cv, global_counts)
    if rank is not None:
        cv, g = _in_rank_order(cv, g, rank)
    present = np.ones(g.size, dtype=bool) if every_value else g > 0
    m_all = int(np.count_nonzero(present))
    width = 64 * EPS * (cv.distinct() + 8)
    return _decide(cv, t, width, lambda sub, exact: _ordered_num_den(sub, g, m_all, exact, present))


def _ordered_num_den(cv: ClassValues, g: np.ndarray, m_all: int, exact: bool, present):
    big_n = int(g.sum())
    n_int = cv.sizes()
    n = _as(n_int, exact)
    if m_all <= 1:
        return n * 0, n * 0 + 1
    rank = np.cumsum(present) - 1  # code -> position among the values present in the input
    cum_g = np.cumsum(g[present])  # G_i, increasing
    prefix = list(itertools.accumulate(cum_g.tolist(), initial=0))  # P[i] = G_0 + .. + G_(i-1)
    prefix = np.array(prefix, dtype=object if exact else np.float64)
    # row e (value at position r_e, cumulative class count K_e) opens the segment [r_e, b_e)
    # up to the class's next value, where sum_{j<=i} (c_j N - g_j n) = N K_e - n G_i
    ne, starts = cv._nonempty, cv._starts
    cum = np.cumsum(cv.count)
    before = np.zeros(cv.n_classes, dtype=np.int64)
    before[ne] = cum[starts[ne]] - cv.count[starts[ne]]
    k_cum = cum - before[cv.cls]
    a = rank[cv.value]
    b = np.empty_like(a)  # the next value's position in the class, m_all after its last
    b[:-1] = a[1:]
    b[cv._starts[ne] + cv._n_values[ne] - 1] = m_all
    # |N K - n G_i| changes sign once in the segment, at s = #{i: G_i <= N K / n}; then the
    # segment adds (s-a) N K - n (P[s]-P[a]) + n (P[b]-P[s]) - (b-s) N K
    if exact:
        q = (k_cum.astype(object) * big_n) // n_int[cv.cls].astype(object)
        s = np.searchsorted(cum_g, q.astype(np.int64), side="right")
    else:  # a split off by one moves a term |N K - n G_s| within rounding of 0
        ratio = np.zeros(cv.n_classes)
        ratio[ne] = big_n / n_int[ne]
        s = np.searchsorted(cum_g.astype(np.float64), k_cum * ratio[cv.cls], side="right")
    s = np.clip(s, a, b)
    terms = _as(k_cum, exact) * big_n * (2 * s - a - b) + n[cv.cls] * (
        prefix[a] + prefix[b] - 2 * prefix[s]
    )
    head = n * 0  # positions below the class's first value: sum of n G_i
    head[ne] = n[ne] * prefix[a[starts[ne]]]
    return head + cv.class_sum(terms), n * (big_n * (m_all - 1))


@dataclass(frozen=True)
class EmdHierarchy:
    """A sensitive attribute's hierarchy as integers, for the hierarchical EMD.

    `levels[v, L]` is the id of value v's ancestor at level L (ids numbered per level; column 0,
    the value itself, is ignored), for every value code v; H = levels.shape[1] - 1 is the top
    level. It must be functional (a level-L node has one parent at level L+1), as docs/design.md §3 asks.
    """

    levels: np.ndarray

    def __post_init__(self) -> None:
        lv = np.asarray(self.levels, dtype=np.int64)
        object.__setattr__(self, "levels", lv)
        if lv.ndim != 2 or lv.shape[1] < 2:
            raise ValueError("a hierarchy needs a value column and at least one level above it")
        if lv.size and int(lv.min()) < 0:
            raise ValueError("hierarchy node ids must be >= 0")
        for level in range(1, lv.shape[1] - 1):
            pairs = np.unique(lv[:, level : level + 2], axis=0)
            if np.unique(pairs[:, 0]).size != pairs.shape[0]:
                raise ValueError(f"hierarchy is not functional at level {level}")

    @classmethod
    def from_labels(cls, paths: Sequence[Sequence[object]]) -> EmdHierarchy:
        """From each value code's labels at levels 1..H (`paths[v]`, the top last), e.g. a
        normalised hierarchy's rows without their first column; ids numbered per level."""
        height = len(paths[0]) if len(paths) else 0
        table = np.zeros((len(paths), height + 1), dtype=np.int64)
        table[:, 0] = np.arange(len(paths))
        for level in range(1, height + 1):
            ids: dict[object, int] = {}
            for v, path in enumerate(paths):
                if len(path) != height:
                    raise ValueError("every value needs a label at every level")
                table[v, level] = ids.setdefault(path[level - 1], len(ids))
        return cls(table)

    @property
    def height(self) -> int:
        return self.levels.shape[1] - 1

    @cached_property
    def rank(self) -> np.ndarray:
        """Value code -> position in an order where every node's values are contiguous."""
        lv = self.levels
        keys = [np.arange(lv.shape[0])] + [lv[:, level] for level in range(1, lv.shape[1])]
        order = np.lexsort(keys)
        rank = np.empty(lv.shape[0], dtype=np.int64)
        rank[order] = np.arange(lv.shape[0])
        return rank

    @cached_property
    def widest(self) -> int:
        """The most nodes on any level above the values."""
        return int(self.levels[:, 1:].max(initial=0)) + 1

    @cached_property
    def codes_in_tree_order(self) -> bool:
        """Whether every node's values already have adjacent codes (no sort needed)."""
        return bool(np.all(np.diff(self.rank) > 0))

    @cached_property
    def parents(self) -> list[np.ndarray]:
        """parents[L - 1][id of a node at level L - 1] = id of its parent at level L (at
        level 0 the ids are the value codes)."""
        lv = self.levels
        out = [lv[:, 1]]
        for level in range(2, lv.shape[1]):
            p = np.zeros(int(lv[:, level - 1].max()) + 1, dtype=np.int64)
            p[lv[:, level - 1]] = lv[:, level]
            out.append(p)
        return out

    def subtree_counts(self, g: np.ndarray, level: int) -> np.ndarray:
        """Global records under each node of `level` (int64, indexed by node id)."""
        ids = self.levels[: g.size, level]
        out = np.zeros(int(self.levels[:, level].max()) + 1, dtype=np.int64)
        np.add.at(out, ids, g)
        return out


def t_hierarchical(
    cv: ClassValues, global_counts: np.ndarray, t: Fraction | str | int, hierarchy: EmdHierarchy
) -> Verdict:
    """t-closeness with hierarchical ground distance, as ARX's HierarchicalDistanceTCloseness.

    Leaf extras are e_v = g_v n - c_v N. Each node u at level L >= 1 adds L * min(pos, neg),
    pos / neg the summed positive / negated negative net extras of its children (a child's net
    extra: the sum of the leaf extras below it); the distance is the sum over H N n.

    Only ancestors of the class's values can add anything (elsewhere every extra is >= 0), and
    with net(u) = pos - neg, min(pos, neg) = neg + min(net(u), 0), where neg sums over the
    children that hold class records: each class costs O(m * H). Figure: the distance.
    """
    g = _global_counts(cv, global_counts)
    if hierarchy.levels.shape[0] < g.size:
        raise ValueError("the hierarchy misses value codes of the global counts")
    width = 16 * EPS * (cv.distinct() + 8) * (hierarchy.height + 1)
    return _decide(cv, t, width, lambda sub, exact: _hier_num_den(sub, g, hierarchy, exact))


def _hier_num_den(cv: ClassValues, g: np.ndarray, hier: EmdHierarchy, exact: bool):
    big_n = int(g.sum())
    n = _as(cv.sizes(), exact)
    cls, node, count = cv.cls, cv.value, cv.count
    # groups: one per (class, node at the current level) holding class records, in (class,
    # node) order; at level 0 one per row. They are merged level by level, in floats through a
    # dense (class, node) table when that is small, else as runs (each node's values adjacent
    # within a class: codes in tree order, or rows sorted so)
    in_order = hier.codes_in_tree_order
    limit = max(_DENSE_GROUPS * cls.size, _DENSE_MIN)
    dense = not exact and cv.n_classes * hier.widest <= limit
    if not (dense or in_order):
        order = _order_within_classes(cv, hier.rank[node])
        cls, node, count = cls[order], node[order], count[order]
    csub = _as(count, exact)
    net = n[cls] * _as(g[node], exact) - csub * big_n  # a group's n * G_sub - N * C_sub
    cost = n * 0
    for level in range(1, hier.height + 1):
        parent = hier.parents[level - 1][node]
        child_neg = np.maximum(-net, 0)
        if dense:
            width = int(hier.levels[:, level].max()) + 1
            key = cls * width + parent
            total = np.bincount(key, weights=csub, minlength=cv.n_classes * width)
            slots = np.flatnonzero(total)
            neg = np.bincount(key, weights=child_neg, minlength=total.size)[slots]
            cls, node, csub = slots // width, slots % width, total[slots]
        else:
            starts = np.flatnonzero(
                np.r_[True, (cls[1:] != cls[:-1]) | (parent[1:] != parent[:-1])]
            )
            neg = np.add.reduceat(child_neg, starts) if starts.size else child_neg
            cls, node = cls[starts], parent[starts]
            csub = np.add.reduceat(csub, starts) if starts.size else csub
        net = n[cls] * _as(hier.subtree_counts(g, level)[node], exact) - csub * big_n
        cost = cost + _sorted_sum(cls, level * (neg + np.minimum(net, 0)), cv.n_classes)
    return cost, n * (big_n * hier.height)


def _in_rank_order(
    cv: ClassValues, g: np.ndarray, rank: np.ndarray
) -> tuple[ClassValues, np.ndarray]:
    """The class values and global counts with each value code replaced by its place."""
    placed = np.zeros(rank.size, dtype=np.int64)
    placed[rank[: g.size]] = g
    order = _order_within_classes(cv, rank[cv.value])
    value = rank[cv.value][order]
    return ClassValues(cv.n_classes, cv.cls[order], value, cv.count[order]), placed


def _order_within_classes(cv: ClassValues, rank: np.ndarray) -> np.ndarray:
    """Row order sorting each class's rows by `rank` (classes stay in order)."""
    width = int(rank.max(initial=0)) + 1
    slots = int(cv._n_values.max(initial=0))
    if cv.n_classes * width * max(slots, 1) < INT64_SAFE:
        j = np.arange(cv.cls.size, dtype=np.int64) - cv._starts[cv.cls]
        packed = np.sort((cv.cls * width + rank) * slots + j)
        return cv._starts[packed // (width * slots)] + packed % slots
    return np.lexsort((rank, cv.cls))


def _sorted_sum(keys: np.ndarray, x: np.ndarray, size: int) -> np.ndarray:
    """Sum x per key into an array of `size`, keys sorted ascending (exact in x's dtype)."""
    out = np.zeros(size, dtype=x.dtype)
    if keys.size:
        starts = run_starts(keys)
        out[keys[starts]] = np.add.reduceat(x, starts)
    return out

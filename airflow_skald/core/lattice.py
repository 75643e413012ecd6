"""The generalisation lattice: nodes, predictive tagging, and the optimal-node search.

Nodes are the cells of an n-d grid (one axis per QID, `lattice.shape`), numbered in C order
(lexicographic levels). "Every generalisation of node i" is then the n-d slice `up(i)` of any
per-node array viewed with that shape, and "every specialisation" the slice `down(i)`: tagging
and bound propagation are slice assignments costing the size of the region, with no per-node
Python work and no comparison of whole node tables (ADR 0004).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

MAX_NODES = 20_000_000
_INT_LIMIT = 1 << 62  # bounds and losses below this are held exactly in int64


@dataclass
class Lattice:
    """All nodes with lower[i] <= level_i <= upper[i], in lexicographic (C) order."""

    lower: tuple[int, ...]
    upper: tuple[int, ...]
    shape: tuple[int, ...] = field(init=False)

    def __post_init__(self) -> None:
        self.lower = tuple(int(x) for x in self.lower)
        self.upper = tuple(int(x) for x in self.upper)
        self.shape = tuple(u - lo + 1 for lo, u in zip(self.lower, self.upper, strict=True))
        if math.prod(self.shape) > MAX_NODES:
            raise ValueError(f"lattice of {math.prod(self.shape)} nodes is too large to search")

    def __len__(self) -> int:
        return math.prod(self.shape)

    @cached_property
    def nodes(self) -> np.ndarray:
        """(n, d) int16 table of the nodes' levels (built on first use)."""
        grids = np.indices(self.shape, dtype=np.int16).reshape(len(self.shape), -1).T
        return grids + np.asarray(self.lower, dtype=np.int16)

    def axes(self) -> list[np.ndarray]:
        """Per QID, its levels as an array broadcastable over the n-d grid."""
        d = len(self.shape)
        return [
            np.arange(lo, u + 1, dtype=np.int64).reshape([-1 if j == i else 1 for j in range(d)])
            for i, (lo, u) in enumerate(zip(self.lower, self.upper, strict=True))
        ]

    def grid_sum(self, terms: Sequence[np.ndarray], dtype: type = np.int64) -> np.ndarray:
        """Flat array over all nodes of sum_i terms[i][level_i - lower_i] (one broadcast)."""
        out = np.zeros(self.shape, dtype=dtype)
        for i, t in enumerate(terms):
            shape = [1] * len(self.shape)
            shape[i] = -1
            out += np.asarray(t, dtype=dtype).reshape(shape)
        return out.reshape(-1)

    @cached_property
    def heights(self) -> np.ndarray:
        return self.grid_sum(
            [np.arange(lo, u + 1) for lo, u in zip(self.lower, self.upper, strict=True)]
        )

    def node(self, i: int) -> tuple[int, ...]:
        idx = np.unravel_index(int(i), self.shape)
        return tuple(int(x) + lo for x, lo in zip(idx, self.lower, strict=True))

    def index(self, node: Sequence[int]) -> int:
        return int(
            np.ravel_multi_index(
                tuple(int(v) - lo for v, lo in zip(node, self.lower, strict=True)), self.shape
            )
        )

    def up(self, i: int) -> tuple[slice, ...]:
        """Slices of an n-d view selecting node i and every node above it."""
        return tuple(slice(int(x), None) for x in np.unravel_index(int(i), self.shape))

    def down(self, i: int) -> tuple[slice, ...]:
        """Slices of an n-d view selecting node i and every node below it."""
        return tuple(slice(0, int(x) + 1) for x in np.unravel_index(int(i), self.shape))

    def above(self, i: int) -> np.ndarray:
        """Mask of the nodes that generalise node i (including itself)."""
        mask = np.zeros(self.shape, dtype=bool)
        mask[self.up(i)] = True
        return mask.reshape(-1)

    def below(self, i: int) -> np.ndarray:
        mask = np.zeros(self.shape, dtype=bool)
        mask[self.down(i)] = True
        return mask.reshape(-1)

    @cached_property
    def strides(self) -> tuple[int, ...]:
        """Index step of raising each QID by one level (C order)."""
        return tuple(_strides(self.shape))

    def successors(self, i: int) -> list[int]:
        """Nodes one level above i (one QID raised by one)."""
        out, rest = [], int(i)
        for n, s in zip(self.shape, self.strides, strict=True):
            x, rest = divmod(rest, s)
            if x + 1 < n:
                out.append(int(i) + s)
        return out


def _strides(shape: Sequence[int]) -> list[int]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return out[::-1]


def fitting_nodes(lattice: Lattice, cards: Sequence[Sequence[int]], limit: int) -> np.ndarray:
    """Mask of the nodes with prod_i cards[i][level_i] <= limit, exactly, for the whole lattice.

    One broadcast product in float64; the rare products within rounding of `limit` are redone
    in exact integers.
    """
    d = len(lattice.shape)
    prod = np.ones(lattice.shape, dtype=np.float64)
    per_dim = []
    for i, (lo, u) in enumerate(zip(lattice.lower, lattice.upper, strict=True)):
        c = [int(x) for x in cards[i][lo : u + 1]]
        per_dim.append(c)
        shape = [1] * d
        shape[i] = -1
        prod = prod * np.asarray(c, dtype=np.float64).reshape(shape)
    flat = prod.reshape(-1)
    tol = (d + 1) * 2.0**-52
    lim = float(limit)
    fits = flat <= lim * (1 - tol)
    close = np.flatnonzero((flat > lim * (1 - tol)) & (flat <= lim * (1 + tol)))
    for j in close.tolist():
        idx = np.unravel_index(j, lattice.shape)
        fits[j] = math.prod(per_dim[i][x] for i, x in enumerate(idx)) <= limit
    return fits


def _cost_terms(lattice: Lattice, tops: Sequence[int]) -> tuple[list[list[int]], int]:
    positive = [t for t in tops if t > 0]
    lcm = math.lcm(*positive) if positive else 1
    terms = [
        [lv * (lcm // t) if t > 0 else 0 for lv in range(lo, u + 1)]
        for lo, u, t in zip(lattice.lower, lattice.upper, tops, strict=True)
    ]
    return terms, lcm


def generalisation_cost(nodes: np.ndarray, tops: Sequence[int]) -> np.ndarray:
    """Integer proportional to sum_i level_i/top_i (so lower = higher precision), exactly."""
    positive = [t for t in tops if t > 0]
    lcm = math.lcm(*positive) if positive else 1
    weights = [lcm // t if t > 0 else 0 for t in tops]
    if lcm * max(1, sum(tops)) < _INT_LIMIT:
        return nodes.astype(np.int64) @ np.asarray(weights, dtype=np.int64)
    return (nodes.astype(object) * np.asarray(weights, dtype=object)).sum(axis=1)


def _lattice_cost(lattice: Lattice, tops: Sequence[int]) -> np.ndarray:
    """generalisation_cost of every node (int64 when exact, else dense int ranks of it)."""
    terms, lcm = _cost_terms(lattice, tops)
    if lcm * max(1, sum(tops)) < _INT_LIMIT:
        return lattice.grid_sum(terms)
    exact = generalisation_cost(lattice.nodes, tops)
    return np.unique(exact, return_inverse=True)[1].reshape(-1).astype(np.int64)


def static_rank(
    lattice: Lattice, tops: Sequence[int], priority: Sequence[int], by_height: bool = False
) -> np.ndarray:
    """Every node's position in the tie order: higher precision first, then levels in priority
    order, lexicographic, finer first (docs/design.md §4); `by_height`: smaller sum of levels before
    precision (docs/design.md §4d). A permutation of 0..n-1 (int64)."""
    n = len(lattice)
    cost = _lattice_cost(lattice, tops)
    if by_height:  # sum of levels, then the precision cost, as one dense rank
        height = lattice.heights.astype(np.int64)
        span = int(cost.max(initial=0)) + 1
        if int(height.max(initial=0)) < _INT_LIMIT // span:
            cost = height * span + cost
        else:
            cost = np.unique(np.stack([height, cost]), axis=1, return_inverse=True)[1]
            cost = cost.reshape(-1).astype(np.int64)
    # the priority levels as one mixed-radix number (priority[0] most significant) ...
    terms = [np.zeros(s, dtype=np.int64) for s in lattice.shape]
    weight = 1
    for p in reversed(priority):
        terms[p] = np.arange(lattice.shape[p], dtype=np.int64) * weight
        weight *= lattice.shape[p]
    levels = lattice.grid_sum(terms)
    if int(cost.max(initial=0)) < _INT_LIMIT // max(n, 1):  # ... and cost before it: one key
        order = np.argsort(cost * n + levels, kind="stable")
    else:
        order = np.lexsort([levels, cost])
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n, dtype=np.int64)
    return rank


def best_by_precision(
    lattice: Lattice, candidates: np.ndarray, tops: Sequence[int], priority: Sequence[int]
) -> int | None:
    """The candidate with the highest precision; ties by levels in priority order, finer first."""
    candidates = np.asarray(candidates, dtype=np.int64)
    if candidates.size == 0:
        return None
    cost = _lattice_cost(lattice, tops)[candidates]  # one int per candidate, no level table
    tied = candidates[cost == cost.min()]
    idx = np.unravel_index(tied, lattice.shape)
    keys = [idx[p] for p in reversed(priority)]
    return int(tied[np.lexsort(keys)[0]]) if keys else int(tied[0])


@dataclass
class SearchOutcome:
    """What the optimal-node search found, with the counters an auditor wants."""

    best: int | None
    evaluated: int
    passing: int  # nodes known to pass (evaluated or tagged)
    pruned: int = 0  # nodes never classified: their loss lower bound rules them out
    scores: dict[int, tuple] = field(default_factory=dict)


class _Bounds:
    """Per-node lower bounds of the loss: exact int64 while every value fits, else float64
    (bounds given as floats are never above the exact bound) compared with a margin that
    never prunes a node that could tie (ties are then evaluated). `initial`: per-node bounds
    known before any evaluation (node-only quality models, docs/design.md §4d)."""

    def __init__(self, n: int, initial: np.ndarray | None = None):
        self.exact = True
        self.flat = np.full(n, -_INT_LIMIT, dtype=np.int64)
        if initial is not None:
            self.exact = initial.dtype.kind in "iu"
            self.flat = np.maximum(initial, self.flat) if self.exact else initial.astype(np.float64)

    def raise_to(
        self, view_slices: tuple[slice, ...], shape: tuple[int, ...], value: int | float
    ) -> None:
        if self.exact and (isinstance(value, float) or not -_INT_LIMIT < value < _INT_LIMIT):
            self.exact = False
            self.flat = self.flat.astype(np.float64)
        region = self.flat.reshape(shape)[view_slices]
        np.maximum(region, value if self.exact else float(value), out=region)

    def can_win(
        self, bound: np.ndarray, rank: np.ndarray, best_loss: int | None, best_rank: int
    ) -> np.ndarray | bool:
        """Whether a node of this bound and static rank might still beat the best so far."""
        if best_loss is None:
            return np.ones(np.shape(bound), dtype=bool) if np.ndim(bound) else True
        exact_loss = isinstance(best_loss, int | np.integer)
        if self.exact and exact_loss and -_INT_LIMIT < best_loss < _INT_LIMIT:
            return (bound < best_loss) | ((bound == best_loss) & (rank < best_rank))
        b = float(best_loss)
        return bound <= b + abs(b) * 1e-9


def search_optimal(
    lattice: Lattice,
    evaluate: Callable[[int], tuple[bool, bool, int, int | None]],
    tops: Sequence[int],
    priority: Sequence[int],
    *,
    all_monotone: bool = True,
    by_height: bool = False,
    node_bounds: np.ndarray | None = None,
    top_down: bool | None = None,
    climb_fails: bool = False,
    beat: bool = False,
) -> SearchOutcome:
    """Minimise the loss over passing nodes; ties by precision, then priority (docs/design.md §4).

    `evaluate(i)` returns `(monotone_pass, passes, loss, bound)`. `monotone_pass` is the part of
    the privacy predicate that is monotone upwards (k, distinct l): a pass tags every node above,
    a fail every node below. `passes` is the full predicate; with `all_monotone` it equals
    `monotone_pass` (so tagged nodes are known to pass), otherwise every node that
    monotone-passes is evaluated unless its bound rules it out. `bound` is a lower bound of the
    loss of node i and of every node above it (ARX's DM* for the paper's DM*: merging classes
    never lowers sum |E|^2); None if the metric has none. `node_bounds`: per node, a lower
    bound of its own loss known in advance (ints, or floats never above the exact bound).
    `by_height`: ties by the smaller sum of levels before precision (docs/design.md §4d). `top_down`
    (default: when `node_bounds` are given): once a passing node is known, evaluate the
    highest alive node next instead of the lowest. `climb_fails` (top-down only): before that
    node, the unknown nodes of a balanced upward path from it are checked in binary-search order,
    since a fail high up tags more of the alive nodes than the node's own fail (height and
    precision: once a best is known the alive nodes are the lower ones, and most fail). They
    may be nodes that cannot win: evaluating them tags, never changes the best. `beat`:
    `evaluate(i, best_loss)` is given the best loss so far (None before any passing node); it
    may report a node failing that would pass only with a loss above it (such a node cannot
    win).

    A node is "alive" until it is evaluated, known to fail, or its bound (the largest bound of
    the evaluated nodes below it) shows it cannot beat the best node so far: bound > best loss,
    or bound == best loss with a worse static rank. Only alive nodes can become the best, so
    the answer is exactly an exhaustive search's.

    Order (Flash-like): the lowest alive node (ties: the static tie order) is evaluated, as a
    large bound there clears everything above it; then an upward path of alive nodes from it,
    each step to the successor of least bound (ties: the QID relatively least generalised), is
    checked top first (a fail there clears the whole path and more below it), then in
    binary-search order (a fail clears the path below, a large bound the path above).
    Bookkeeping is n-d slices of per-node arrays: no per-node Python work beyond the path.
    """
    n = len(lattice)
    shape = lattice.shape
    mono = np.zeros(n, dtype=np.int8)  # monotone part: 0 unknown, 1 pass, -1 fail
    mono_view = mono.reshape(shape)
    done = np.zeros(n, dtype=bool)
    alive = np.ones(n, dtype=bool)
    alive_view = alive.reshape(shape)
    bounds = _Bounds(n, node_bounds)
    top_down = node_bounds is not None if top_down is None else top_down
    bound_view = bounds.flat.reshape(shape)
    rank = static_rank(lattice, tops, priority, by_height).astype(np.int32)  # n <= MAX_NODES < 2^31
    rank_view = rank.reshape(shape)
    order = np.lexsort((rank, lattice.heights)).astype(np.int32)  # lowest, then tie order
    climb = _climb_keys(lattice)
    scores: dict[int, tuple] = {}
    best: list = [None, None, -1]  # index, loss, static rank

    def run(i: int) -> None:
        nonlocal bound_view
        mono_pass, passes, loss, bound = evaluate(i, best[1]) if beat else evaluate(i)
        mono_pass, passes = bool(mono_pass), bool(passes)
        scores[i] = (mono_pass, passes, loss, bound)
        done[i] = True
        alive[i] = False
        if mono_pass:
            mono_view[lattice.up(i)] = 1
        else:
            down = lattice.down(i)
            mono_view[down] = -1
            alive_view[down] = False
        improved = passes and (best[0] is None or (loss, rank[i]) < (best[1], best[2]))
        if improved:
            best[:] = [i, loss, int(rank[i])]
        if bound is not None and bound > bounds.flat[i].item():  # monotone bounds: else a no-op
            up = lattice.up(i)
            was_exact = bounds.exact
            bounds.raise_to(up, shape, bound)
            if bounds.exact != was_exact:
                bound_view = bounds.flat.reshape(shape)
            if not improved and best[0] is not None:
                # only this bound can newly rule nodes of the region out (the others did)
                if not bounds.can_win(bound, best[2] - 1, best[1], best[2]):
                    alive_view[up] = False  # bound > best loss (or ties it, beyond a margin)
                elif bounds.exact and bound == best[1]:
                    alive_view[up] &= rank_view[up] < best[2]
        if improved:
            alive[:] &= bounds.can_win(bounds.flat, rank, best[1], best[2])

    def check_above(i: int) -> None:
        path = [i]
        while True:
            nxt = [j for j in lattice.successors(path[-1]) if mono[j] == 0 and not done[j]]
            if not nxt:
                break
            path.append(min(nxt, key=lambda j: (climb[0][j], climb[1][j], j)))
        for k in _binary_order(len(path) - 1):  # a fail clears the path below it, a pass above
            if mono[path[k + 1]] == 0 and not done[path[k + 1]]:
                run(path[k + 1])

    cursor = 0
    # with bounds known for every node (node-only models), once a best is found the alive nodes
    # are those whose bound can still win: the highest of them is evaluated first, as its fail
    # clears every node below it (a lowest-first order tags little there)
    descending = np.lexsort((rank, -lattice.heights)).astype(np.int32) if top_down else None
    high = 0
    while True:
        if descending is not None and best[0] is not None:
            high = _next_alive(alive, descending, high)
            if high >= n:
                break
            if climb_fails:
                check_above(int(descending[high]))
            if alive[descending[high]]:
                run(int(descending[high]))
            continue
        cursor = _next_alive(alive, order, cursor)
        if cursor >= n:
            break
        start = int(order[cursor])
        run(start)
        path = [start]
        while True:
            nxt = [j for j in lattice.successors(path[-1]) if alive[j]]
            if not nxt:
                break
            path.append(min(nxt, key=lambda j: (bounds.flat[j], climb[0][j], climb[1][j], j)))
        top = len(path) - 1
        for k in [top, *(k + 1 for k in _binary_order(top - 1))] if top else []:
            if alive[path[k]]:
                run(path[k])
    if all_monotone:
        passing = int((mono == 1).sum())
        pruned = int(((mono == 0) & ~done).sum())
    else:
        passing = sum(1 for s in scores.values() if s[1])
        pruned = int(((mono >= 0) & ~done).sum())
    return SearchOutcome(best[0], len(scores), passing, pruned, scores)


def _next_alive(alive: np.ndarray, order: np.ndarray, cursor: int, chunk: int = 4096) -> int:
    """Position in `order` of the first alive node at or after `cursor` (alive never returns)."""
    n = order.size
    while cursor < n:
        hits = np.flatnonzero(alive[order[cursor : cursor + chunk]])
        if hits.size:
            return cursor + int(hits[0])
        cursor += chunk
    return n


def _climb_keys(lattice: Lattice) -> tuple[np.ndarray, np.ndarray]:
    """Per node: the largest relative level (level/top) over QIDs, and minus the smallest. An
    upward path climbs to the successor with the least of these (a balanced climb)."""
    rel = [
        a / max(u, 1) if u > lo else np.full(a.shape, -1.0)
        for a, lo, u in zip(lattice.axes(), lattice.lower, lattice.upper, strict=True)
    ]
    hi = np.full(lattice.shape, -1.0, dtype=np.float32)
    lo_ = np.full(lattice.shape, 2.0, dtype=np.float32)
    for r in rel:
        np.maximum(hi, r, out=hi)
        np.minimum(lo_, np.where(r < 0, 2.0, r), out=lo_)
    return hi.reshape(-1), -lo_.reshape(-1)


def _binary_order(m: int) -> list[int]:
    """Positions 0..m-1 of a path in binary-search order (middle first, then each half's)."""
    order: list[int] = []
    spans = [(0, m - 1)]
    while spans:
        lo, hi = spans.pop()
        if lo > hi:
            continue
        mid = (lo + hi) // 2
        order.append(mid)
        spans.extend([(mid + 1, hi), (lo, mid - 1)])
    return order

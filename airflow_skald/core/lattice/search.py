"""The optimal-node search: the passing node of least loss, ties by the static tie order,
exactly as an exhaustive search's (docs/design.md §4; ADR 0013, ADR 0057).

A node is "alive" until it is evaluated, known to fail, or its bound (the largest bound of the
evaluated nodes below it) shows it cannot beat the best node so far: bound > best loss, or
bound == best loss with a worse static rank. Only alive nodes can become the best, so the
answer is exactly an exhaustive search's. Three strategy objects set the modes: the tie order
(`ties.TieOrder`), the order nodes are evaluated in (`orders.SearchOrder`) and what a monotone
pass says of the full predicate (`Predicate`: the outcome's counters). Bookkeeping is n-d
slices of per-node arrays (`SearchState`): no per-node Python work beyond a path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from airflow_skald.core.lattice.bounds import LossBounds
from airflow_skald.core.lattice.grid import Lattice
from airflow_skald.core.lattice.orders import SearchOrder, default_order
from airflow_skald.core.lattice.ties import PRECISION_FIRST, TieOrder

#: `evaluate(i, best_loss)` -> (monotone_pass, passes, loss, bound); `best_loss` is the best
#: loss so far (None before a passing node): a node that would pass only with a loss above it
#: may be reported failing (it cannot win)
Evaluate = Callable[[int, object], tuple[bool, bool, object, int | float | None]]


@dataclass
class SearchOutcome:
    """What the optimal-node search found, with the counters an auditor wants."""

    best: int | None
    evaluated: int
    passing: int  # nodes known to pass (evaluated or tagged)
    pruned: int = 0  # nodes never classified: their loss lower bound rules them out
    scores: dict[int, tuple] = field(default_factory=dict)


@dataclass(frozen=True)
class Best:
    """The best node so far: its index, loss and static rank."""

    index: int | None = None
    loss: object = None
    rank: int = -1


class SearchState:
    """Per node: the monotone part's tag (0 unknown, 1 pass, -1 fail), evaluated, alive, its
    loss bound and static rank; the evaluations and the best node so far."""

    def __init__(
        self,
        lattice: Lattice,
        evaluate: Evaluate,
        rank: np.ndarray,
        node_bounds: np.ndarray | None,
    ):
        n = len(lattice)
        self.lattice, self.evaluate, self.shape = lattice, evaluate, lattice.shape
        self.mono = np.zeros(n, dtype=np.int8)
        self.mono_view = self.mono.reshape(self.shape)
        self.done = np.zeros(n, dtype=bool)
        self.alive = np.ones(n, dtype=bool)
        self.alive_view = self.alive.reshape(self.shape)
        self.bounds = LossBounds(n, node_bounds)
        self.rank = rank.astype(np.int32)  # n <= MAX_NODES < 2^31
        self.rank_view = self.rank.reshape(self.shape)
        self.scores: dict[int, tuple] = {}
        self.best = Best()

    def unknown(self, i: int) -> bool:
        """Not evaluated, and the monotone part neither passes nor fails by a tag."""
        return self.mono[i] == 0 and not self.done[i]

    def run(self, i: int) -> None:
        """Evaluate node i: tag above (a monotone pass) or below (a fail), raise the bounds
        above it, and rule out what can no longer beat the best."""
        mono_pass, passes, loss, bound = self.evaluate(i, self.best.loss)
        mono_pass, passes = bool(mono_pass), bool(passes)
        self.scores[i] = (mono_pass, passes, loss, bound)
        self.done[i] = True
        self.alive[i] = False
        self._tag(i, mono_pass)
        best = self.best
        improved = passes and (best.index is None or (loss, self.rank[i]) < (best.loss, best.rank))
        if improved:
            self.best = Best(i, loss, int(self.rank[i]))
        if bound is not None and bound > self.bounds.flat[i].item():  # monotone: else a no-op
            self._raise_bound(i, bound, improved)
        if improved:
            best = self.best
            self.alive[:] &= self.bounds.can_win(self.bounds.flat, self.rank, best.loss, best.rank)

    def _tag(self, i: int, mono_pass: bool) -> None:
        if mono_pass:
            self.mono_view[self.lattice.up(i)] = 1
        else:
            down = self.lattice.down(i)
            self.mono_view[down] = -1
            self.alive_view[down] = False

    def _raise_bound(self, i: int, bound: int | float, improved: bool) -> None:
        up = self.lattice.up(i)
        self.bounds.raise_to(up, self.shape, bound)
        best = self.best
        if improved or best.index is None:
            return
        # only this bound can newly rule nodes of the region out (the others did)
        if not self.bounds.can_win(bound, best.rank - 1, best.loss, best.rank):
            self.alive_view[up] = False  # bound > best loss (or ties it, beyond a margin)
        elif self.bounds.exact and bound == best.loss:
            self.alive_view[up] &= self.rank_view[up] < best.rank


class Predicate:
    """Every model monotone: the full predicate is the monotone part, so a tagged pass is
    known to pass; the nodes neither tagged nor evaluated were pruned by their bound."""

    def counters(self, state: SearchState) -> tuple[int, int]:
        """(nodes known to pass, nodes pruned)."""
        unknown = (state.mono == 0) & ~state.done
        return int((state.mono == 1).sum()), int(unknown.sum())


class PartlyMonotone(Predicate):
    """A non-monotone part (entropy-l, t-closeness...): a monotone pass still has to be
    evaluated unless its bound rules it out; only evaluated nodes are known to pass."""

    def counters(self, state: SearchState) -> tuple[int, int]:
        passing = sum(1 for s in state.scores.values() if s[1])
        return passing, int(((state.mono >= 0) & ~state.done).sum())


MONOTONE = Predicate()
PARTLY_MONOTONE = PartlyMonotone()


def search_optimal(
    lattice: Lattice,
    evaluate: Evaluate,
    tops: Sequence[int],
    priority: Sequence[int],
    *,
    predicate: Predicate = MONOTONE,
    ties: TieOrder = PRECISION_FIRST,
    order: SearchOrder | None = None,
    node_bounds: np.ndarray | None = None,
) -> SearchOutcome:
    """Minimise the loss over passing nodes; ties by `ties`, then priority (docs/design.md §4).

    `evaluate(i, best_loss)` returns `(monotone_pass, passes, loss, bound)` (`Evaluate`).
    `monotone_pass` is the part of the privacy predicate that is monotone upwards (k, distinct
    l): a pass tags every node above, a fail every node below. `passes` is the full predicate
    (`predicate` says whether it is the monotone part). `bound` is a lower bound of the loss of
    node i and of every node above it (ARX's DM* for the paper's DM*: merging classes never
    lowers sum |E|^2); None if the metric has none. `node_bounds`: per node, a lower bound of
    its own loss known in advance (ints, or floats never above the exact bound). `order`: the
    order of evaluations (default: `orders.default_order`).
    """
    rank = ties.rank(lattice, tops, priority)
    state = SearchState(lattice, evaluate, rank, node_bounds)
    (order or default_order(node_bounds)).walk(state)
    passing, pruned = predicate.counters(state)
    return SearchOutcome(state.best.index, len(state.scores), passing, pruned, state.scores)

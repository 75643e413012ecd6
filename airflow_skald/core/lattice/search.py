"""The optimal-node search: the passing node of least loss, ties by the static tie order,
exactly as an exhaustive search's (docs/design.md §4; ADR 0013, ADR 0057).

A node is "alive" until it is evaluated, known to fail, or its bound (the largest bound of the
evaluated nodes below it) shows it cannot beat the best node so far: bound > best loss, or
bound == best loss with a worse static rank. Only alive nodes can become the best, so the
answer is exactly an exhaustive search's. Three strategy objects set the modes: the tie order
(`ties.TieOrder`), the order nodes are evaluated in (`orders.SearchOrder`) and what a monotone
pass says of the full predicate (`Predicate`: the outcome's counters). Bookkeeping is n-d
slices of per-node arrays (`state.SearchState`): no per-node Python work beyond a path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from airflow_skald.core.lattice.grid import Lattice
from airflow_skald.core.lattice.orders import SearchOrder, default_order
from airflow_skald.core.lattice.state import Evaluate, SearchState
from airflow_skald.core.lattice.ties import PRECISION_FIRST, TieOrder


@dataclass
class SearchOutcome:
    """What the optimal-node search found, with the counters an auditor wants."""

    best: int | None
    evaluated: int
    passing: int  # nodes known to pass (evaluated or tagged)
    pruned: int = 0  # nodes never classified: their loss lower bound rules them out
    scores: dict[int, tuple] = field(default_factory=dict)


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

"""One optimal-node search's bookkeeping (`SearchState`): per node its tag, evaluated, alive,
loss bound and static rank, and the best node so far. The evaluation orders (`orders`) walk it,
the search (`search.search_optimal`) makes it and reads its outcome.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from airflow_skald.core.lattice.bounds import LossBounds
from airflow_skald.core.lattice.grid import Lattice

#: `evaluate(i, best_loss)` -> (monotone_pass, passes, loss, bound); `best_loss` is the best
#: loss so far (None before a passing node): a node that would pass only with a loss above it
#: may be reported failing (it cannot win)
Evaluate = Callable[[int, object], tuple[bool, bool, object, int | float | None]]


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

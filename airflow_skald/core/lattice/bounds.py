"""Per-node lower bounds of the loss, raised over the region above each evaluated node, and
the test whether a node of a bound and a static rank can still beat the best node so far."""

from __future__ import annotations

import numpy as np

from airflow_skald.core.lattice.grid import INT_LIMIT


class LossBounds:
    """Per-node lower bounds of the loss: exact int64 while every value fits, else float64
    (bounds given as floats are never above the exact bound) compared with a margin that
    never prunes a node that could tie (ties are then evaluated). `initial`: per-node bounds
    known before any evaluation (node-only quality models, docs/design.md §4d)."""

    def __init__(self, n: int, initial: np.ndarray | None = None):
        self.exact = True
        self.flat = np.full(n, -INT_LIMIT, dtype=np.int64)
        if initial is not None:
            self.exact = initial.dtype.kind in "iu"
            self.flat = np.maximum(initial, self.flat) if self.exact else initial.astype(np.float64)

    def raise_to(
        self, view_slices: tuple[slice, ...], shape: tuple[int, ...], value: int | float
    ) -> None:
        if self.exact and (isinstance(value, float) or not -INT_LIMIT < value < INT_LIMIT):
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
        if self.exact and exact_loss and -INT_LIMIT < best_loss < INT_LIMIT:
            return (bound < best_loss) | ((bound == best_loss) & (rank < best_rank))
        b = float(best_loss)
        return bound <= b + abs(b) * 1e-9

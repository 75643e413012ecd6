"""The generalisation lattice's structure: nodes, their n-d grid and its slices.

Nodes are the cells of an n-d grid (one axis per QID, `lattice.shape`), numbered in C order
(lexicographic levels). "Every generalisation of node i" is then the n-d slice `up(i)` of any
per-node array viewed with that shape, and "every specialisation" the slice `down(i)`: tagging
and bound propagation are slice assignments costing the size of the region, with no per-node
Python work and no comparison of whole node tables (ADR 0004).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

MAX_NODES = 20_000_000
INT_LIMIT = 1 << 62  # bounds, costs and losses below this are held exactly in int64


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

"""The root bins of local recoding at a node (ARX's ``ARXResult.optimizeIterativeFast`` and
``optimizeIterative``; docs/design.md §4f; ADR 0049, 0066): each bin's key there, which bins a
step left suppressed, and the classes a step kept, for `transform.local_recoding.steps` and the
release's figures (`search.recoded`)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from airflow_skald.core.count.histogram import grouped, strides_of
from airflow_skald.core.count.root_counts import RootCounts
from airflow_skald.core.transform.encoded import EncodedPlan


def keys_at(plan: EncodedPlan, root_keys: np.ndarray, node: Sequence[int]) -> np.ndarray:
    """Each root bin's key at `node` (a node at or above the root), digit by digit from the
    last QID, in place (a few arrays of the bins' size at a time, not one per QID)."""
    radices = plan.radices(plan.root)
    strides = strides_of(plan.radices(tuple(node)))
    rest = root_keys.astype(np.int64, copy=True)
    out = np.zeros_like(rest)
    code = np.empty_like(rest)
    for i in reversed(range(len(radices))):
        np.remainder(rest, radices[i], out=code)
        if i:
            np.floor_divide(rest, radices[i], out=rest)
        lo, hi = int(plan.root[i]), int(node[i])
        if hi != lo:
            np.take(plan.dims[i].level_map(lo, hi).astype(np.int64, copy=False), code, out=code)
        if strides[i] != 1:
            code *= strides[i]
        out += code
    return out


def still_suppressed(
    plan: EncodedPlan,
    root_keys: np.ndarray,
    left: np.ndarray,
    node: Sequence[int],
    keys: np.ndarray,
) -> np.ndarray:
    """Which of the root bins `left` (a mask) a step at `node` left suppressed (`keys`: its
    suppressed classes' keys, sorted): their keys at the node, the other bins' never computed."""
    rows = np.flatnonzero(left)
    out = np.zeros_like(left)
    out[rows[in_sorted(keys_at(plan, root_keys[rows], node), keys)]] = True
    return out


class KeysAt:
    """The root bins' keys at the nodes local recoding reads them at (the global node and each
    step's, read by the steps, the release's classes and its Loss), each node computed once."""

    def __init__(self, plan: EncodedPlan, root_keys: np.ndarray) -> None:
        self.plan, self.root_keys = plan, root_keys
        self._at: dict[tuple[int, ...], np.ndarray] = {}

        self._kept: dict[tuple[int, ...], tuple] = {}

    def __call__(self, node: Sequence[int]) -> np.ndarray:
        node = tuple(int(x) for x in node)
        if node not in self._at:
            self._at[node] = keys_at(self.plan, self.root_keys, node)
        return self._at[node]

    def kept(
        self, counts: RootCounts, node: Sequence[int], suppressed: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Which root bins `suppressed` (keys at `node`) suppresses, and the keys and sizes of
        the classes kept there (`kept_classes`), once per node and suppressed keys."""
        node = tuple(int(x) for x in node)
        hit = self._kept.get(node)
        if hit is None or hit[0] is not suppressed:
            left = in_sorted(self(node), suppressed)
            keys, sizes = kept_classes(self.plan, counts, node, suppressed, self(node), ~left)
            hit = self._kept[node] = (suppressed, left, keys, sizes)
        return hit[1], hit[2], hit[3]


def in_sorted(keys: np.ndarray, sorted_keys: np.ndarray) -> np.ndarray:
    """Whether each of `keys` (non-negative) is among `sorted_keys`: a table over the keys' range
    when it is small beside `keys` (the global node's bins: one lookup each), else a binary
    search."""
    if sorted_keys.size == 0:
        return np.zeros(keys.size, dtype=bool)
    last = int(sorted_keys[-1])
    if last < max(1 << 16, 2 * keys.size):
        table = np.zeros(last + 2, dtype=bool)
        table[sorted_keys] = True
        return table[np.minimum(keys, last + 1)]
    pos = np.minimum(np.searchsorted(sorted_keys, keys), sorted_keys.size - 1)
    return sorted_keys[pos] == keys


def kept_classes(
    plan: EncodedPlan,
    sub: RootCounts,
    node: tuple[int, ...],
    suppressed: np.ndarray,
    at: np.ndarray | None = None,
    keep: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The keys (at `node`, sorted) and sizes of the classes a step kept, from its root bins
    (`at`: their keys at `node`, `keep`: the bins not suppressed, when known), grouped as a
    roll-up groups them (a count table when the node's bins are few, else a sort)."""
    at = keys_at(plan, sub.classes.keys, node) if at is None else at
    keep = ~in_sorted(at, suppressed) if keep is None else keep
    possible = math.prod(plan.radices(node))
    return grouped(at[keep], sub.classes.counts[keep], possible, owned=True)

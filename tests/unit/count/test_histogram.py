"""Class sizes of a sparse roll-up (`histogram.grouped`) in each of its three regimes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_skald.core.count.histogram import grouped


def _sums(keys: np.ndarray, counts: np.ndarray) -> dict[int, int]:
    sums: dict[int, int] = {}
    for k, c in zip(keys.tolist(), counts.tolist(), strict=True):
        sums[k] = sums.get(k, 0) + c
    return sums


@pytest.mark.parametrize(
    "n_possible, max_count",
    [
        (50, 9),  # a count table
        (10**12, 9),  # keys packed with their counts, one sort
        (2**62, 2**20),  # too wide to pack: argsort
    ],
)
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(0, 300))
def test_grouped_sums_counts_per_key(n_possible, max_count, seed, m):
    rng = np.random.default_rng(seed)
    pool = rng.integers(0, n_possible, size=max(1, m // 3 + 1), dtype=np.int64)
    keys = rng.choice(pool, size=m)
    counts = rng.integers(1, max_count + 1, size=m).astype(np.int64)
    distinct, sums = grouped(keys, counts, n_possible)
    assert sums.dtype.kind == "i" and distinct.dtype.kind == "i"
    assert distinct.tolist() == sorted(set(keys.tolist()))  # sorted, one per key
    assert dict(zip(distinct.tolist(), sums.tolist(), strict=True)) == _sums(keys, counts)


@pytest.mark.parametrize("order", ["sorted", "runs"])
@pytest.mark.parametrize("n_possible, max_count", [(10**12, 9), (2**62, 2**20)])
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(1, 400), runs=st.integers(2, 5))
def test_grouped_keys_in_order_or_in_few_runs(n_possible, max_count, order, seed, m, runs):
    """Keys already sorted (QIDs raised that keep the key order) are grouped in one pass; keys
    in a few sorted runs by a merge sort: the same sums either way."""
    rng = np.random.default_rng(seed)
    pool = rng.integers(0, n_possible, size=max(1, m // 3 + 1), dtype=np.int64)
    keys = rng.choice(pool, size=m)
    parts = np.array_split(keys, runs if order == "runs" else 1)
    keys = np.concatenate([np.sort(p) for p in parts])
    counts = rng.integers(1, max_count + 1, size=m).astype(np.int64)
    original = keys.copy()
    distinct, sums = grouped(keys, counts, n_possible)
    assert np.array_equal(keys, original)  # not owned: left as it was
    assert distinct.tolist() == sorted(set(keys.tolist()))
    assert dict(zip(distinct.tolist(), sums.tolist(), strict=True)) == _sums(keys, counts)
    again = grouped(keys.copy(), counts, n_possible, owned=True)
    assert np.array_equal(again[0], distinct) and np.array_equal(again[1], sums)

"""Phase 2's partial and merged counts (core/count/root_counts.py): partials over any chunks
sum exactly to the counts of all rows, with (class, value) tables, and survive their byte
form."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from airflow_skald.core.count.histogram import Histogram
from airflow_skald.core.count.root_counts import RootCounts

RADICES = (4, 3)  # two QIDs at the root: class key = a * 3 + b
M = 5  # the sensitive attribute's value codes


def _hist(radices, keys) -> Histogram:
    distinct, counts = np.unique(keys, return_counts=True)
    return Histogram(radices, distinct.astype(np.int64), counts.astype(np.int64))


def _partial(keys: np.ndarray, values: np.ndarray, node=None) -> RootCounts:
    return RootCounts(
        _hist(RADICES, keys), {"sens": _hist((*RADICES, M), keys * M + values)}, node=node
    )


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("node", [None, (0, 0)])
def test_partials_merge_to_the_counts_of_all_rows(seed, node):
    rng = np.random.default_rng(seed)
    keys, values = rng.integers(0, 12, 300), rng.integers(0, M, 300)
    cuts = np.sort(rng.choice(np.arange(1, 300), size=4, replace=False))
    parts = [
        _partial(k, v, node)
        for k, v in zip(np.split(keys, cuts), np.split(values, cuts), strict=True)
    ]
    merged = RootCounts.merge([RootCounts.from_bytes(p.compact().to_bytes()) for p in parts])
    assert merged.n_records == 300 and merged.node == node
    assert dict(zip(merged.classes.keys.tolist(), merged.classes.counts.tolist(), strict=True)) == (
        Counter(keys.tolist())
    )
    pairs = merged.values["sens"]
    assert Counter(dict(zip(pairs.keys.tolist(), pairs.counts.tolist(), strict=True))) == Counter(
        (keys * M + values).tolist()
    )
    assert merged.n_bins == len(set(keys.tolist())) + len(set((keys * M + values).tolist()))
    assert merged.bounded_bins == pairs.n_bins  # with criteria, N_RAM bounds the pairs


def test_k_only_counts_keep_the_histograms_own_bytes():
    counts = RootCounts(_hist(RADICES, np.array([1, 1, 5])))
    assert counts.to_bytes() == counts.classes.to_bytes()
    assert counts.bounded_bins == 2


def test_counts_at_different_nodes_are_not_summed():
    a = RootCounts(_hist(RADICES, np.array([1])), node=(0, 0))
    b = RootCounts(_hist(RADICES, np.array([1])), node=(1, 0))
    with pytest.raises(ValueError, match="different nodes"):
        RootCounts.merge([a, b])


@pytest.mark.parametrize("with_values", [False, True])
def test_sums_per_class_merge_and_survive_bytes(with_values):
    # a microaggregated integer mean's sums per class bin (encode/class_sums): additive, carried
    # beside the class counts (and any (class, value) tables), not what N_RAM bounds
    rng = np.random.default_rng(4)
    keys, weights = rng.integers(0, 12, 200), rng.integers(0, 40, 200)
    parts = []
    for k, w in zip(np.split(keys, [50, 120]), np.split(weights, [50, 120]), strict=True):
        distinct = np.unique(k)
        sums = Histogram(RADICES, distinct, np.bincount(k, w, minlength=12)[distinct].astype(int))
        part = _partial(k, k % M, node=(0, 0)) if with_values else RootCounts(_hist(RADICES, k))
        part.sums = {"age": sums}
        parts.append(RootCounts.from_bytes(part.compact().to_bytes()))
    merged = RootCounts.merge(parts)
    want = np.bincount(keys, weights, minlength=12)
    got = merged.sums["age"]
    assert dict(zip(got.keys.tolist(), got.counts.tolist(), strict=True)) == {
        k: int(want[k]) for k in np.unique(keys).tolist()
    }
    classes = len(set(keys.tolist()))
    assert merged.bounded_bins == (merged.values["sens"].n_bins if with_values else classes)
    assert list(merged.values) == (["sens"] if with_values else [])

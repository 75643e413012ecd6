"""`class_order.loss_ranks` (docs/design.md §4c, ADR 0041): the ranks of classes of one size by ARX's loss
of each class alone equal those of the exact key computed one class at a time in Fractions, for
every aggregate, with weights, with many classes sharing a share vector and distinct vectors
whose losses are equal exactly (a permutation across three QIDs) or differ in the last digits."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from airflow_skald.core.quality.class_order import loss_ranks


def _exact(row, domains, weights, size, how) -> Fraction:
    per = [Fraction(int(n), u) * w for n, u, w in zip(row, domains, weights, strict=True)]
    if how == "geometric_mean":
        return math.prod((size * v + 1 for v in per), start=Fraction(1))
    if how == "maximum":
        return max(per)
    return sum(per, Fraction(0))


def _expected(nums, domains, weights, size, how) -> np.ndarray:
    keys = [_exact(r, domains, weights, size, how) for r in zip(*nums, strict=True)]
    distinct = sorted(set(keys))
    return np.asarray([distinct.index(k) for k in keys])


@pytest.mark.parametrize("how", ["geometric_mean", "arithmetic_mean", "sum", "maximum"])
@pytest.mark.parametrize("seed", range(4))
def test_ranks_equal_the_exact_order(how, seed):
    rng = np.random.default_rng(seed)
    domains = [6, 10, 2**40 + 7]
    weights = [Fraction(1), Fraction(int(rng.integers(1, 4)), 3), Fraction(1, 2)]
    nums = [rng.integers(1, u + 1 if u < 100 else 2**40, 300) for u in domains]
    size = int(rng.integers(1, 5))
    assert np.array_equal(
        loss_ranks(nums, domains, weights, size, how), _expected(nums, domains, weights, size, how)
    )


def test_equal_losses_of_other_share_vectors_share_a_rank():
    """A permutation of the same shares across QIDs of one domain: the same loss exactly (ARX's
    doubles may differ in the last bit); a vector one part in 10^12 away: the next rank."""
    u = 10**12
    domains = [u, u, u]
    weights = [Fraction(1)] * 3
    rows = [(1, 2, 3), (3, 2, 1), (2, 3, 1), (1, 2, 4), (1, 2, 3), (u, u, u)]
    rows.append((10**9, 2 * 10**9, 3 * 10**9 + 1))
    rows.append((2 * 10**9, 10**9, 3 * 10**9))
    nums = [np.asarray(c, dtype=np.int64) for c in zip(*rows, strict=True)]
    for how in ("geometric_mean", "sum", "maximum"):
        got = loss_ranks(nums, domains, weights, 7, how)
        assert np.array_equal(got, _expected(nums, domains, weights, 7, how)), how
        assert got[0] == got[1] == got[2] == got[4] or how == "maximum"
    assert loss_ranks([np.zeros(0, np.int64)], [3], [Fraction(1)], 1, "sum").size == 0

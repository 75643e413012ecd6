"""t-closeness's smallest kept class (core/privacy/t_closeness.py, `closest_size`): against
every class of each size (all count vectors), the first size with a class within t in equal
distance, exactly; and the model keeps no class below it."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from airflow_skald.core.privacy.t_closeness import TCloseness, closest_size


def _compositions(n: int, m: int):
    """Every count vector of m values summing to n."""
    for cuts in itertools.combinations(range(n + m - 1), m - 1):
        bounds = (-1, *cuts, n + m - 1)
        yield [bounds[i + 1] - bounds[i] - 1 for i in range(m)]


def _first_close_size(g: list[int], t: Fraction) -> int:
    big_n = sum(g)
    for n in range(1, big_n + 1):
        for c in _compositions(n, len(g)):
            distance = Fraction(
                sum(abs(cv * big_n - gv * n) for cv, gv in zip(c, g, strict=True)), 2 * big_n * n
            )
            if distance <= t:
                return n
    return big_n


@pytest.mark.parametrize("seed", range(12))
def test_closest_size_is_the_first_size_with_a_close_class(seed):
    rng = np.random.default_rng(seed)
    g = [int(x) for x in rng.integers(1, 9, rng.integers(2, 5))]
    t = Fraction(int(rng.integers(1, 20)), 40)
    assert closest_size(np.array(g), t) == _first_close_size(g, t)


def test_the_model_keeps_no_class_below_it():
    g = np.array([40, 25, 20, 10, 5])
    model = TCloseness("s", Fraction(1, 5), "equal", global_counts=g)
    n0 = model.smallest_kept
    assert n0 == closest_size(g, Fraction(1, 5)) > 1
    assert TCloseness("s", Fraction(1, 5), "ordered", global_counts=g).smallest_kept == 1


def test_a_tiny_t_stops_at_the_work_limit_with_a_sound_bound():
    from airflow_skald.core.privacy import t_closeness

    g = np.array([10**8 + 7, 3 * 10**7 + 1, 10**6 + 3])  # 131M records
    got = closest_size(g, Fraction(1, 10**9))
    assert got == t_closeness.CLOSEST_SIZE_TRIES  # no size up to the limit is that close
    small = [5, 3, 1]
    limited = closest_size(np.array(small), Fraction(1, 10**9))  # N = 9: every size tried
    assert limited == _first_close_size(small, Fraction(1, 10**9)) == 9

"""t-closeness's smallest kept class (core/privacy/t_closeness.py, `closest_size`): against
every class of each size (all count vectors), the first size with a class within t in equal
distance, exactly; and the model keeps no class below it."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from class_tables import fine_and_coarse

from airflow_skald.core.privacy import distributions as S
from airflow_skald.core.privacy.t_closeness import TCloseness, closest_size, suppression_floor


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


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("distance", ["equal", "ordered"])
def test_suppression_floor_bounds_every_finer_node_and_grows_downwards(seed, distance):
    """The floor at a node never exceeds the records t-closeness suppresses at any finer node
    (here: the node's classes split at random), and merging classes never raises it."""
    rng = np.random.default_rng(seed)
    fine, coarse, value, m = fine_and_coarse(rng, 0.3)
    g = np.bincount(value, minlength=m)
    t = Fraction(int(rng.integers(1, 10)), 20)
    judge = S.t_equal if distance == "equal" else S.t_ordered
    tables = {}
    for name, cls in (("fine", fine), ("coarse", coarse)):
        cv = S.ClassValues.from_pairs(int(cls.max()) + 1, cls, value)
        v = judge(cv, g, t)
        suppressed = int(cv.sizes()[~v.ok].sum())
        tables[name] = (suppression_floor(cv.sizes(), v.figure, t), suppressed)
    (floor_fine, sup_fine), (floor_coarse, sup_coarse) = tables["fine"], tables["coarse"]
    assert floor_coarse <= floor_fine + 1e-9
    assert floor_fine <= sup_fine and floor_coarse <= sup_coarse
    assert floor_coarse <= sup_fine  # the coarse node's floor bounds its finer node


def test_suppression_floor_of_one_class():
    """q = (1/2, 1/2), t = 1/4: ten records of value 0 are at distance 1/2, and a finer node
    keeps at most the share (1 - 1/2) / (1 - 1/4) of them within t, so at least 10/3 are
    suppressed; a class within t adds nothing."""
    g, t = np.array([50, 50]), Fraction(1, 4)
    far = S.ClassValues.from_pairs(1, np.zeros(10, np.int64), np.zeros(10, np.int64))
    v = S.t_equal(far, g, t)
    assert v.figure.tolist() == [0.5]
    assert suppression_floor(far.sizes(), v.figure, t) == pytest.approx(10 / 3, rel=1e-6)
    near = S.ClassValues.from_pairs(1, np.zeros(4, np.int64), np.array([0, 0, 0, 1]))
    w = S.t_equal(near, g, t)
    assert w.figure.tolist() == [0.25] and suppression_floor(near.sizes(), w.figure, t) == 0

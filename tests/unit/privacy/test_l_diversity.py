"""Entropy l-diversity's suppression floor (core/privacy/l_diversity.py, `entropy_floor`):
never above the records suppressed at any finer node, never raised by merging classes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from class_tables import fine_and_coarse

from airflow_skald.core.privacy import distributions as S
from airflow_skald.core.privacy.l_diversity import entropy_floor


@pytest.mark.parametrize("seed", range(40))
def test_entropy_floor_bounds_every_finer_node_and_grows_downwards(seed):
    rng = np.random.default_rng(seed)
    fine, coarse, value, m = fine_and_coarse(rng, 0.4)
    ell = int(rng.integers(2, m + 1))
    got = {}
    for name, cls in (("fine", fine), ("coarse", coarse)):
        cv = S.ClassValues.from_pairs(int(cls.max()) + 1, cls, value)
        v = S.entropy_l(cv, ell)
        got[name] = (entropy_floor(cv.sizes(), v.figure, ell), int(cv.sizes()[~v.ok].sum()))
    (floor_fine, sup_fine), (floor_coarse, sup_coarse) = got["fine"], got["coarse"]
    assert floor_coarse <= floor_fine + 1e-9
    assert floor_fine <= sup_fine and floor_coarse <= sup_coarse and floor_coarse <= sup_fine


def test_entropy_floor_of_one_class():
    """Counts (3, 1): entropy H = ln 4 - (3/4) ln 3; at l = 2 at least 4 (1 - H / ln 2) of the
    four records fail at any finer node; an even class of two values adds nothing."""
    cv = S.ClassValues.from_pairs(2, np.array([0, 0, 0, 0, 1, 1]), np.array([0, 0, 0, 1, 0, 1]))
    v = S.entropy_l(cv, 2)
    assert v.ok.tolist() == [False, True]
    h = math.log(4) - 0.75 * math.log(3)
    assert entropy_floor(cv.sizes(), v.figure, 2) == pytest.approx(4 * (1 - h / math.log(2)))


@pytest.mark.parametrize("variant", ["distinct", "entropy", "recursive"])
def test_no_class_below_l_records_is_kept(variant):
    from fractions import Fraction

    from airflow_skald.core.privacy.l_diversity import LDiversity
    from airflow_skald.core.privacy.model import ClassTable

    model = LDiversity("s", 3, variant, Fraction(2) if variant == "recursive" else None)
    assert model.smallest_kept == 3
    # classes of 1..6 records, each of as many distinct values as it can hold
    cls = np.repeat(np.arange(6), np.arange(1, 7))
    value = np.concatenate([np.arange(s) for s in range(1, 7)])
    cv = S.ClassValues.from_pairs(6, cls, value)
    kept = model.keeps(ClassTable(cv.sizes(), {"s": cv}))
    assert not kept[cv.sizes() < model.smallest_kept].any()

"""The policy's judgement (core/privacy/policy.py): the monotone test suppresses the classes
below a class-based model's smallest kept size, and the search's `verdict_only` judgement
decides every node as the full one does."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from airflow_skald.core.privacy.distributions import ClassValues
from airflow_skald.core.privacy.k_anonymity import KAnonymity
from airflow_skald.core.privacy.l_diversity import LDiversity
from airflow_skald.core.privacy.model import ClassTable
from airflow_skald.core.privacy.policy import PrivacyPolicy
from airflow_skald.core.privacy.t_closeness import TCloseness


def _table(rng: np.random.Generator, m: int) -> tuple[ClassTable, np.ndarray]:
    """Classes of random sizes (many small), each with random counts of m values."""
    n_classes = int(rng.integers(1, 40))
    sizes = rng.choice([1, 2, 3, 5, 8, 20, 60], n_classes, p=[0.2, 0.2, 0.15, 0.15, 0.1, 0.1, 0.1])
    rows = [(c, v) for c, s in enumerate(sizes) for v in rng.integers(0, m, int(s))]
    cls, value = (np.array(x, dtype=np.int64) for x in zip(*rows, strict=True))
    cv = ClassValues.from_pairs(n_classes, cls, value)
    return ClassTable(cv.sizes(), {"s": cv}), np.bincount(value, minlength=m)


def _policy(rng: np.random.Generator, g: np.ndarray) -> PrivacyPolicy:
    t = Fraction(int(rng.integers(1, 12)), 20)
    models = [KAnonymity(int(rng.integers(1, 6))), TCloseness("s", t, "equal", global_counts=g)]
    if rng.random() < 0.3:
        models.append(LDiversity("s", 2, "distinct"))
    return PrivacyPolicy(tuple(models), Fraction(int(rng.integers(0, 6)), 20))


@pytest.mark.parametrize("seed", range(60))
def test_verdict_only_decides_as_the_full_judgement(seed):
    rng = np.random.default_rng(seed)
    table, g = _table(rng, int(rng.integers(2, 6)))
    policy = _policy(rng, g)
    full = policy.judge(table)
    quick = policy.judge(table, verdict_only=True)
    assert (quick.passes, quick.monotone_passes) == (full.passes, full.monotone_passes)
    assert not full.passes or full.monotone_passes  # the monotone test is necessary
    if not quick.monotone_passes:
        assert quick.n_suppressed > quick.max_suppressed
    else:
        assert np.array_equal(quick.kept, full.kept)


def test_classes_below_the_smallest_kept_size_fail_the_monotone_test():
    g = np.array([40, 25, 20, 10, 5])
    t_model = TCloseness("s", Fraction(1, 5), "equal", global_counts=g)
    small = t_model.smallest_kept
    assert small > 2
    # ten classes of small - 1 records, each as close as such a class can be, and one class of
    # the whole table's distribution: k = 2 keeps them all, t-closeness none of the small ones
    cls = np.repeat(np.arange(11), [*([small - 1] * 10), 100])
    value = np.concatenate([np.zeros((small - 1) * 10, np.int64), np.repeat(np.arange(5), g)])
    cv = ClassValues.from_pairs(11, cls, value)
    table = ClassTable(cv.sizes(), {"s": cv})
    limit = Fraction(1, 10)  # fewer records than the small classes hold
    assert (small - 1) * 10 > limit * table.n_records
    k_only = PrivacyPolicy((KAnonymity(2),), limit).judge(table)
    assert k_only.monotone_passes
    j = PrivacyPolicy((KAnonymity(2), t_model), limit).judge(table)
    assert not j.monotone_passes and not j.passes

"""The classifiers' AUC equals scikit-learn's roc_auc_score (binary, and one class against the
rest averaged over classes), ties included."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from airflow_skald.core.utility.classify import scores


@pytest.mark.parametrize("n,k", [(400, 2), (3000, 3), (20000, 30)])
def test_auc_equals_scikit_learn(n, k):
    rng = np.random.default_rng(k)
    y = rng.integers(0, k, n)
    proba = np.round(rng.dirichlet(np.ones(k), n), 2)  # rounded: many ties
    proba[np.arange(n), y] += rng.uniform(0, 0.2, n)  # some signal
    if k == 2:
        expected = roc_auc_score(y, proba[:, 1])
    else:
        normal = proba / proba.sum(axis=1, keepdims=True)
        expected = roc_auc_score(y, normal, multi_class="ovr", labels=range(k))
    assert scores(proba, y)["auc"] == pytest.approx(expected, abs=1e-12)

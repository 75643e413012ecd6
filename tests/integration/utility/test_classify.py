"""The classifiers' figures equal a direct scikit-learn computation on the same sample: the
same folds, encoders of scikit-learn's own, no weighting of distinct rows, scikit-learn's
metrics."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import KFold
from sklearn.naive_bayes import CategoricalNB
from sklearn.preprocessing import MinMaxScaler, OneHotEncoder, OrdinalEncoder

from airflow_skald.core.settings.utility import SEED, UtilitySettings
from airflow_skald.core.utility.analyse import classification
from airflow_skald.core.utility.classify import FOREST

N, FOLDS = 700, 4
QIDS = ["age", "city", "sex"]


def tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(5)
    age = rng.integers(18, 80, N)
    city = rng.choice(["north", "south", "east", "west"], N)
    sex = rng.choice(["f", "m"], N)
    score = (age - 45) / 15 + (city == "north") - 0.5 * (sex == "m") + rng.normal(0, 1, N)
    target = np.where(score > 0.8, "high", np.where(score > -0.5, "mid", "low"))
    original = pd.DataFrame({"age": age, "city": city, "sex": sex, "target": target})
    released = pd.DataFrame(
        {
            "age": [f"[{a // 20 * 20}-{a // 20 * 20 + 20}[" for a in age],
            "city": np.where(np.isin(city, ["north", "south"]), "N/S", "E/W"),
            "sex": "*",
            "target": target,
        }
    )
    released.loc[::23, QIDS] = "*"  # suppressed records
    return original, released


def direct_proba(kind, frame, y, train_rows, n_classes):
    numbers = [c for c in QIDS if pd.api.types.is_numeric_dtype(frame[c])]
    cats = [c for c in QIDS if c not in numbers]
    if kind == "logistic_regression":
        enc = ColumnTransformer([("c", OneHotEncoder(), cats), ("n", MinMaxScaler(), numbers)])
        model = LogisticRegression(solver="newton-cholesky", max_iter=200)
    elif kind == "naive_bayes":
        binned = frame.copy()
        for c in numbers:
            edges = np.unique(np.quantile(frame[c], np.linspace(0, 1, 11)[1:-1]))
            binned[c] = np.searchsorted(edges, frame[c], side="right")
        frame = binned
        enc = ColumnTransformer([("c", OrdinalEncoder(), QIDS)])
        model = CategoricalNB(min_categories=[frame[c].nunique() for c in QIDS])
    else:
        enc = ColumnTransformer([("c", OrdinalEncoder(), cats), ("n", "passthrough", numbers)])
        model = RandomForestClassifier(random_state=SEED, n_jobs=1, **FOREST)
    x = enc.fit_transform(frame[QIDS])  # unsupervised, on all sampled records
    x = x.toarray() if hasattr(x, "toarray") else np.asarray(x, dtype=float)
    if kind == "random_forest":  # the product's columns: the QIDs in their order
        order = [cats.index(c) if c in cats else len(cats) + numbers.index(c) for c in QIDS]
        x = x[:, order]
    proba = np.zeros((len(y), n_classes))
    for train, test in KFold(FOLDS).split(x):
        train = np.intersect1d(train, train_rows)
        model.fit(x[train], y[train])
        proba[np.ix_(test, model.classes_)] = model.predict_proba(x[test])
    return proba


def figures(proba, y):
    truth = np.eye(proba.shape[1])[y]
    return {
        "accuracy": float(np.mean(proba.argmax(axis=1) == y)),
        "brier": float(np.mean(((proba - truth) ** 2).sum(axis=1))),
        "auc": float(roc_auc_score(y, proba, multi_class="ovr")),
    }


@pytest.fixture(scope="module")
def computed():
    original, released = tables()
    settings = UtilitySettings(target="target", folds=FOLDS)
    out = classification(
        settings, QIDS, pa.Table.from_pandas(original), pa.Table.from_pandas(released)
    )
    return original, released, out


@pytest.mark.parametrize("kind", ["logistic_regression", "naive_bayes", "random_forest"])
def test_each_model_equals_scikit_learn_directly(computed, kind):
    original, released, out = computed
    classes = sorted(original["target"].unique())
    y = original["target"].map(classes.index).to_numpy()
    kept = np.flatnonzero(~(released[QIDS] == "*").all(axis=1).to_numpy())
    got = next(m for m in out["models"] if m["model"] == kind)
    for part, frame, rows in (
        ("original", original, np.arange(N)),
        ("release", released, kept),
    ):
        expected = figures(direct_proba(kind, frame, y, rows, len(classes)), y)
        assert got[part]["accuracy"] == pytest.approx(expected["accuracy"], abs=1.5 / N), part
        assert got[part]["brier"] == pytest.approx(expected["brier"], abs=1e-4), part
        assert got[part]["auc"] == pytest.approx(expected["auc"], abs=1e-4), part
    skill = 1 - got["release"]["brier"] / got["original"]["brier"]
    assert got["brier_skill"] == pytest.approx(skill)
    assert out["released_for_training"] == kept.size and out["records"] == N


def test_baseline_is_the_training_folds_majority(computed):
    original, _, out = computed
    classes = sorted(original["target"].unique())
    y = original["target"].map(classes.index).to_numpy()
    correct = 0
    for train, test in KFold(FOLDS).split(y):
        majority = np.bincount(y[train], minlength=len(classes)).argmax()
        correct += int(np.sum(y[test] == majority))
    assert out["baseline"]["accuracy"] == pytest.approx(correct / N)


def test_a_repeated_training_pool_fits_the_same_forest(computed, monkeypatch):
    # the forest learns from the first FOREST_POOL training records of each fold: with a pool
    # of 300 of 525, the last two folds' pools are the same records (the first two folds): one
    # fit serves both, and every fold's probabilities are scikit-learn's fit on its pool
    from airflow_skald.core.utility import classify as C

    monkeypatch.setattr(C, "FOREST_POOL", 300)
    original, _, _ = computed
    classes = sorted(original["target"].unique())
    y = original["target"].map(classes.index).to_numpy()
    features = C.encode(pa.Table.from_pandas(original), QIDS)
    blocks = C.folds(N, FOLDS)
    got = C.out_of_fold("random_forest", features, y, 3, blocks, np.ones(N, bool), SEED)
    pools = [np.setdiff1d(np.arange(N), test)[:300] for test in blocks]
    assert np.array_equal(pools[2], pools[3]) and not np.array_equal(pools[1], pools[2])
    for test, pool in zip(blocks, pools, strict=True):
        model = RandomForestClassifier(random_state=SEED, n_jobs=1, **FOREST)
        model.max_samples = C.FOREST_RECORDS if pool.size > C.FOREST_RECORDS else None
        model.fit(features.raw[pool], y[pool])
        assert np.array_equal(got[test], model.predict_proba(features.raw[test]))

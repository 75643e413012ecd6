"""Classifiers trained on the original and on the release, over the same folds of the same
records (ARX's `StatisticsClassification`), with scikit-learn's learners.

As ARX: k-fold cross-validation over the sample (its key order is already a random order, so
the folds are consecutive blocks); per fold, one model learns from the original records'
features, one from the released records' features (suppressed records left out of its
training, as ARX's `!outputHandle.isOutlier`), and a ZeroR baseline from the training labels
(the majority class, probabilities = the training folds' class shares). Each is scored on the
held-out fold: the original model on the original features, the release's on the released
ones (a suppressed record is all '*'), all against the original label. Figures: accuracy,
Brier score (sum over classes of squared probability errors, averaged), AUC (one class
against the rest, averaged over classes; 2 classes: the usual AUC) and ARX's Brier skill
score of the release, 1 - Brier(release) / Brier(original).

Features as ARX encodes them: a number column is a number scaled to [0, 1] (logistic
regression), kept as it is (random forest) or cut at its deciles (naive Bayes); any other
column, generalised labels included, is a category: one-hot (logistic regression) or its code.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_skald.core.utility.summary import TOP, is_number_type

#: the random forest's settings: ARX's trees (<= 100 leaves, >= 5 records a leaf, sqrt(features)
#: tried a split, bootstrap samples); 10 trees (ARX's default before 3.7; 3.9's is 500), each
#: from a bootstrap of at most FOREST_RECORDS of the first FOREST_POOL training records. On
#: Adult (10 folds, key order) 500 trees from full bootstraps reach accuracy 0.829 / 0.819
#: (original / release), AUC 0.878 / 0.854, in ~100 CPU-s; these 0.824 / 0.816 and 0.871 /
#: 0.852 in ~1 CPU-s (the utility analysis's target: 2 s on Adult)
FOREST = {"n_estimators": 10, "max_leaf_nodes": 100, "min_samples_leaf": 5}
FOREST_RECORDS = 5000
#: the training records the trees' bootstraps are drawn from: the first FOREST_POOL of the
#: training folds in key order (a uniform random subset; at 100k sampled records a tree cost
#: ~3x more drawn from all 90k)
FOREST_POOL = 20_000
#: models whose fit on distinct rows weighted by their records equals the fit on the records
WEIGHTED = ("logistic_regression", "naive_bayes")
NB_BINS = 10
#: coefficients (one-hot columns x classes) up to which logistic regression takes Newton steps
#: on every training record; beyond, L-BFGS steps (at most GRADIENT_STEPS, to GRADIENT_TOL) on
#: the first GRADIENT_RECORDS training records in key order (a uniform random subset). A
#: 30-class target of the paper's data (100k sampled, 27 / 282 columns original / release):
#: 34 + 55 CPU-s a run on every record to scikit-learn's tolerance, 0.7 + 1.1 s so; accuracy
#: 0.4428 / 0.4418 then, 0.4419 / 0.4363 so (the majority class: 0.21)
NEWTON_WEIGHTS = 512
GRADIENT_RECORDS = 10_000
GRADIENT_STEPS = 100
GRADIENT_TOL = 1e-3


@dataclass(frozen=True)
class Features:
    """One table's features, encoded for each kind of model."""

    onehot: object  # scipy CSR: categories one-hot, numbers scaled to [0, 1]
    codes: np.ndarray  # int64 codes of categories, decile codes of numbers (naive Bayes)
    raw: np.ndarray  # float64: codes of categories, numbers as they are (random forest)
    categories: np.ndarray  # per column, its number of codes
    row_ids: np.ndarray  # int64: equal for records whose features are all equal
    code_ids: np.ndarray  # int64: equal for records whose codes are all equal (naive Bayes)


def category_codes(column: pa.Array) -> np.ndarray:
    """Codes of a column's values in sorted order of the values (nulls: one more code)."""
    text = column.cast(pa.string()) if not pa.types.is_string(column.type) else column
    encoded = pc.dictionary_encode(text.fill_null("\x00null"))
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks()
    order = pc.array_sort_indices(encoded.dictionary).to_numpy()
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    return rank[encoded.indices.to_numpy(zero_copy_only=False)]


def _decile_codes(x: np.ndarray) -> np.ndarray:
    edges = np.unique(np.quantile(x, np.linspace(0, 1, NB_BINS + 1)[1:-1]))
    return np.searchsorted(edges, x, side="right").astype(np.int64)


def encode(table: pa.Table, names: Sequence[str]) -> Features:
    """The features `names` of `table` (one row per record)."""
    import scipy.sparse as sp

    n = table.num_rows
    blocks, codes, raw, cards = [], [], [], []
    for name in names:
        column = table.column(name).combine_chunks()
        if pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        if is_number_type(column.type) and column.null_count == 0:
            x = column.cast(pa.float64()).to_numpy(zero_copy_only=False)
            span = float(x.max() - x.min()) if n else 0.0
            scaled = (x - x.min()) / span if span else np.zeros(n)
            blocks.append(sp.csr_matrix(scaled.reshape(-1, 1)))
            c = _decile_codes(x) if n else np.zeros(0, np.int64)
            codes.append(c)
            raw.append(x)
            cards.append(int(c.max()) + 1 if n else 1)
        else:
            c = category_codes(column)
            card = int(c.max()) + 1 if n else 1
            blocks.append(sp.csr_matrix((np.ones(n), (np.arange(n), c)), shape=(n, card)))
            codes.append(c)
            raw.append(c.astype(np.float64))
            cards.append(card)
    onehot = sp.hstack(blocks, format="csr") if blocks else sp.csr_matrix((n, 0))
    stack = np.column_stack if names else (lambda _: np.zeros((n, 0)))
    raw_matrix, code_matrix = stack(raw), stack(codes)
    cards = np.asarray(cards, dtype=np.int64)
    return Features(
        onehot, code_matrix, raw_matrix, cards, _row_ids(raw_matrix), _row_ids(code_matrix)
    )


def _row_ids(raw: np.ndarray) -> np.ndarray:
    """One id per distinct row: each column's values ranked, the ranks combined column by
    column and re-ranked (so the combined id stays below the number of records)."""
    ids = np.zeros(raw.shape[0], dtype=np.int64)
    for j in range(raw.shape[1]):
        _, rank = np.unique(raw[:, j], return_inverse=True)
        _, ids = np.unique(ids * (int(rank.max()) + 1) + rank, return_inverse=True)
    return ids.astype(np.int64)


def _gradient_only(features: Features, n_classes: int) -> bool:
    """Logistic regression of too many coefficients for Newton steps (see NEWTON_WEIGHTS)."""
    return features.onehot.shape[1] * max(n_classes, 2) > NEWTON_WEIGHTS


def _model(kind: str, features: Features, seed: int, n_classes: int = 2):
    """(a fresh scikit-learn model, the feature matrix it learns from)."""
    if kind == "logistic_regression":
        from sklearn.linear_model import LogisticRegression

        # Newton steps solve a (features x features) system: cheap for few one-hot columns;
        # many (a QID of thousands of released labels) take the gradient-only solver
        # (one coefficient per column and class: 30 classes x 27 columns took 101 s a fold of
        # 90k records with Newton steps, 10.7 s with L-BFGS)
        # Newton steps are warm-started: each fold's fit begins at the last fold's coefficients
        # (the folds share 8 of 10 parts, so they converge in 2 steps instead of 5, to the same
        # optimum). L-BFGS steps are not: they stop early (GRADIENT_TOL), and a start trained
        # on the held-out fold would be where they stop (the figures flattered: the next
        # fold's records learnt). Their capped training records repeat from fold to fold
        # instead, and a repeated fit is not made again (`out_of_fold`).
        if _gradient_only(features, n_classes):
            model = LogisticRegression(solver="lbfgs", max_iter=GRADIENT_STEPS, tol=GRADIENT_TOL)
        else:
            model = LogisticRegression(solver="newton-cholesky", max_iter=200, warm_start=True)
        return model, features.onehot
    if kind == "naive_bayes":
        from sklearn.naive_bayes import CategoricalNB

        return CategoricalNB(min_categories=features.categories), features.codes
    if kind == "random_forest":
        from sklearn.ensemble import RandomForestClassifier

        records = FOREST_RECORDS if features.raw.shape[0] > FOREST_RECORDS else None
        forest = RandomForestClassifier(random_state=seed, n_jobs=1, max_samples=records, **FOREST)
        return forest, features.raw
    raise ValueError(f"unknown model {kind!r}")


def folds(n: int, k: int) -> list[np.ndarray]:
    """Held-out index blocks of the key-ordered sample: k consecutive blocks as scikit-learn's
    KFold (no shuffle) cuts them (at most n blocks; the first n % k one record longer), without
    importing its module (a fifth of a second of the analysis on Adult)."""
    k = min(k, n)
    if k < 2:
        return []
    sizes = np.full(k, n // k, dtype=np.int64)
    sizes[: n % k] += 1
    ends = np.cumsum(sizes)
    return [np.arange(end - size, end) for size, end in zip(sizes, ends, strict=True)]


def out_of_fold(
    kind: str, features: Features, y: np.ndarray, n_classes: int, blocks, train_mask, seed: int
) -> np.ndarray:
    """Each record's class probabilities from the model trained without its fold (rows of
    `train_mask` False never train); a fold without training records predicts the shares.
    A fold whose training records are the last fit's (the first GRADIENT_RECORDS or
    FOREST_POOL of two folds' training records can be the same records) predicts with that
    fit: the same records make the same model (the forest's seed is fixed)."""
    from sklearn.exceptions import ConvergenceWarning

    proba = np.zeros((y.size, n_classes))
    previous = None  # logistic regression: the last fold's model, warm-started from
    fitted = None  # (training records, model) of the last fit
    for test in blocks:
        train = np.ones(y.size, dtype=bool)
        train[test] = False
        train &= train_mask
        idx = np.flatnonzero(train)
        if kind == "logistic_regression" and _gradient_only(features, n_classes):
            idx = idx[:GRADIENT_RECORDS]
        elif kind == "random_forest":  # scikit-learn scans every row given for each tree
            idx = idx[:FOREST_POOL]
        if not idx.size:
            proba[test] = 1.0 / n_classes
            continue
        learnt = np.unique(y[idx])
        if learnt.size == 1:  # one class to learn: it is certain
            proba[test, y[idx[0]]] = 1.0
            continue
        if fitted is not None and np.array_equal(fitted[0], idx):
            model, x = fitted[1]
            proba[np.ix_(test, model.classes_)] = model.predict_proba(x[test])
            continue
        fitted = idx, None
        if previous is not None and np.array_equal(previous[0].classes_, learnt):
            model, x = previous
        else:
            model, x = _model(kind, features, seed, n_classes)
        if kind == "logistic_regression":
            previous = model, x
        with warnings.catch_warnings():  # L-BFGS stops at GRADIENT_STEPS by design
            warnings.simplefilter("ignore", ConvergenceWarning)
            if kind in WEIGHTED:  # the same fit from each distinct (features, label) once
                ids = features.code_ids if kind == "naive_bayes" else features.row_ids
                idx, weight = distinct_rows(ids, y, n_classes, idx)
                model.fit(x[idx], y[idx], sample_weight=weight)
            else:
                model.fit(x[idx], y[idx])
        fitted = fitted[0], (model, x)
        proba[np.ix_(test, model.classes_)] = model.predict_proba(x[test])
    return proba


def distinct_rows(
    row_ids: np.ndarray, y: np.ndarray, n_classes: int, idx: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(the first of each group of equal (features, label) rows among `idx`, the group's
    records): logistic regression's loss and naive Bayes' counts are sums over records, so
    weighting a distinct row by its records fits the same model as the records themselves."""
    keys = row_ids[idx] * n_classes + y[idx]
    _, first, counts = np.unique(keys, return_index=True, return_counts=True)
    order = np.argsort(first)
    return idx[first[order]], counts[order].astype(np.float64)


def zero_r(y: np.ndarray, n_classes: int, blocks) -> np.ndarray:
    """The majority-class baseline's probabilities: the training folds' class shares."""
    proba = np.zeros((y.size, n_classes))
    for test in blocks:
        train = np.ones(y.size, dtype=bool)
        train[test] = False
        shares = np.bincount(y[train], minlength=n_classes) / max(int(train.sum()), 1)
        proba[test] = shares
    return proba


def scores(proba: np.ndarray, y: np.ndarray) -> dict:
    """accuracy (most probable class, ties to the first), Brier score and AUC."""
    n_classes = proba.shape[1]
    truth = np.zeros_like(proba)
    truth[np.arange(y.size), y] = 1.0
    out = {
        "accuracy": float(np.mean(np.argmax(proba, axis=1) == y)),
        "brier": float(np.mean(np.sum((proba - truth) ** 2, axis=1))),
        "auc": None,
    }
    present = np.unique(y)
    if present.size == n_classes and n_classes == 2:
        out["auc"] = auc(proba[:, 1:], (y == 1)[:, None])
    elif present.size == n_classes > 2:
        normal = proba / np.maximum(proba.sum(axis=1, keepdims=True), 1e-300)
        out["auc"] = auc(normal, truth.astype(bool))
    return out


def auc(score: np.ndarray, positive: np.ndarray) -> float:
    """The mean over columns of each column's AUC: the share of (positive, negative) record
    pairs its score ranks right, ties counting one half (Mann-Whitney's U from average ranks).
    scikit-learn's roc_auc_score (one class against the rest, the classes' plain mean) without
    its per-class ROC curves: 30 classes of 100k records took it ~7 s a table, this ~0.2 s."""
    from scipy.stats import rankdata

    ranks = rankdata(score, axis=0)  # ties: their average rank
    n_pos = positive.sum(axis=0).astype(np.float64)
    n_neg = positive.shape[0] - n_pos
    u = np.where(positive, ranks, 0.0).sum(axis=0) - n_pos * (n_pos + 1) / 2
    return float(np.mean(u / (n_pos * n_neg)))


def labels_of(column: pa.Array) -> tuple[np.ndarray, list]:
    """(class index per record, the classes in sorted order) of the target column."""
    codes = category_codes(column)
    text = column.cast(pa.string()) if not pa.types.is_string(column.type) else column
    classes = sorted(set(text.fill_null("\x00null").to_pylist()))
    return codes, classes


def suppressed_rows(released: pa.Table, qids: Sequence[str]) -> np.ndarray:
    """Records released with every QID '*' (suppressed, as ARX's outliers)."""
    mask = np.ones(released.num_rows, dtype=bool)
    for q in qids:
        column = released.column(q).combine_chunks()
        if pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        mask &= (
            pc.equal(column.cast(pa.string()), TOP).fill_null(False).to_numpy(zero_copy_only=False)
        )
    return mask

"""What b-likeness and d-disclosure share: per (class, value) row of a node's classes, the
ratio of the value's share in its class to its share over all N input records,
x = (c_v / n) / p_v = c_v N / (n g_v), decided exactly against a bound given as a float with a
test that settles the rows whose float lies near the bound (docs/design.md §4c)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from airflow_skald.core.privacy.distributions import ClassValues

_NEAR = 1e-9  # relative: float figures this close to the bound are decided exactly


def row_terms(cv: ClassValues, global_counts: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per row: c_v, n (its class's size), g_v (the value's input records), N."""
    n = cv.sizes()[cv.cls]
    g = np.asarray(global_counts, dtype=np.int64)[cv.value]
    return cv.count, n, g, int(np.sum(global_counts))


def classes_passing(
    cv: ClassValues,
    figure: np.ndarray,
    bound: np.ndarray,
    exact: Callable[[int], bool],
    strict: bool = False,
) -> np.ndarray:
    """Bool per class: every row's `figure` <= `bound` (< with `strict`); rows within _NEAR
    of the bound are decided by `exact(row)`."""
    with np.errstate(invalid="ignore"):
        ok = figure < bound if strict else figure <= bound
        near = np.abs(figure - bound) <= _NEAR * np.maximum(1.0, np.abs(bound))
    for row in np.flatnonzero(near).tolist():
        ok[row] = exact(row)
    bad = np.bincount(cv.cls[~ok], minlength=cv.n_classes)
    return bad == 0

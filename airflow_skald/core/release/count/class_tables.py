"""The one class-counting step: counted tuples become the `ClassTable`s the privacy models
judge, the all-"*" class (suppressed records) and the other classes with their (class, value)
counts (the release check, `skald verify`, `skald audit` and the per-chunk baseline)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from airflow_skald.core.count.histogram import keys_of
from airflow_skald.core.encode.dimensions import TOP
from airflow_skald.core.encode.sensitive_domain import SensitiveStats
from airflow_skald.core.privacy import ClassTable
from airflow_skald.core.privacy.distributions import ClassValues
from airflow_skald.core.privacy.value_order import code_of

NONE = np.zeros(0, dtype=np.int64)


def class_tables(
    labels: Sequence[Sequence],
    codes: np.ndarray,
    sizes: np.ndarray,
    n_qids: int,
    attributes: Sequence[str],
    sensitive: Mapping[str, SensitiveStats],
    unknown: Callable[[str], Exception],
) -> tuple[ClassTable, ClassTable]:
    """The all-"*" class and the other classes of counted tuples, as the privacy models see
    them: the tuples' first `n_qids` columns make a class, the next ones are the `attributes`,
    coded as `sensitive` codes them (a CSV release holds them as text). `codes` is (tuples,
    columns) into per-column `labels`; `sizes` the tuples' records. A value `sensitive` does
    not know raises `unknown(attribute)`. The one class-counting step of the release check,
    `skald verify`, `skald audit` and the per-chunk baseline."""
    qlabels = labels[:n_qids]
    radices = [max(len(x), 1) for x in qlabels]
    keys = keys_of(list(codes[:, :n_qids].T), radices) if sizes.size else NONE
    star_key = -1
    if all(TOP in x for x in qlabels):
        star_key = int(keys_of([np.asarray([x.index(TOP)]) for x in qlabels], radices)[0])
    uniq, cls = _distinct(keys)
    values = {}
    for j, a in enumerate(attributes):
        # a CSV release holds the values as text: numbers as written, a null as an empty cell;
        # a date, time or boolean is known by its text (as phase 1 keeps it, `as_stored`)
        code = code_of(sensitive[a])
        try:
            lookup = np.asarray([code(v) for v in labels[n_qids + j]], dtype=np.int64)
        except (KeyError, TypeError):  # TypeError: an unhashable value
            raise unknown(a) from None
        values[a] = lookup[codes[:, n_qids + j]] if lookup.size else NONE

    def table(select: np.ndarray) -> ClassTable:
        if cls is None and not attributes:  # one tuple per class: its size is the class's
            return ClassTable(sizes[select].astype(np.int64), {})
        renumber = np.full(uniq.size, -1, dtype=np.int64)
        renumber[select] = np.arange(int(select.sum()))
        c = renumber[cls.reshape(-1)] if cls is not None else renumber
        rows = c >= 0
        n = int(select.sum())
        w = sizes[rows]
        size = np.bincount(c[rows], weights=w, minlength=n).astype(np.int64)
        pairs = {a: ClassValues.from_pairs(n, c[rows], values[a][rows], w) for a in attributes}
        return ClassTable(size, pairs)

    star = uniq == star_key
    return table(star), table(~star)


def _distinct(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """`np.unique(keys, return_inverse=True)`; the inverse None (each tuple its own class,
    in order) when the keys are already distinct and in order (a class table's tuples of
    QIDs alone, as counted): no sort, no copies."""
    if keys.size > 1 and bool((keys[1:] > keys[:-1]).all()):
        return keys, None
    return np.unique(keys, return_inverse=True)

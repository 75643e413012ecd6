"""`skald verify`'s check of microaggregated QIDs (docs/design.md §4f; the manifest's key and
what it says: `core.transform.microaggregation`; reached through the registry's
`check_classes`, with the release's classes as verify counted them).

A QID with `cluster: false` is not among the manifest's
`quasi_identifiers` (the other QIDs form the classes); the release check counts its column
beside the classes and checks that every released class holds ONE value of it (the class's
aggregate: no record's own value shows through) and that suppressed records hold `*`.
A clustered QID is one of the class's QIDs: its written value is the class's by construction.
"""

from __future__ import annotations

import numpy as np

from airflow_skald.core.data.hierarchies import TOP_LABEL as TOP
from airflow_skald.core.errors import VerificationError
from airflow_skald.core.transform.counted import CountedClasses


def check_microaggregated(
    classes: CountedClasses,
    n_qids: int,
    start: int,
    names: tuple[str, ...],
    top_released: bool = False,
) -> None:
    """`classes` counted over `n_qids` QIDs, other attributes, then `names` from column
    `start`: every class of the QIDs holds one value of each name, the all-`*` class `*`
    (its records are the suppressed ones) unless `top_released`: the release is the top
    node's and its one class released, whose aggregate it holds."""
    if not names or not classes.sizes.size:
        return
    if len(classes.labels) < start + len(names):
        raise ValueError("the release's classes were counted without the microaggregated columns")
    qids = classes.codes[:, :n_qids]
    star = np.ones(qids.shape[0], dtype=bool)
    for j in range(n_qids):
        labels = classes.labels[j]
        star &= qids[:, j] == (labels.index(TOP) if TOP in labels else -1)
    n_classes = np.unique(qids, axis=0).shape[0]
    for j, name in enumerate(names):
        column = classes.codes[:, start + j : start + j + 1]
        if np.unique(np.concatenate([qids, column], axis=1), axis=0).shape[0] != n_classes:
            raise VerificationError(
                f"microaggregated column '{name}' holds more than one value in a released class"
            )
        labels = classes.labels[start + j]
        if top_released:
            continue
        if any(labels[c] != TOP for c in np.unique(column[star]).tolist()):
            raise VerificationError(
                f"microaggregated column '{name}' is not '*' in a suppressed record"
            )

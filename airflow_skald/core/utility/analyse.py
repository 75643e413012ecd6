"""The manifest's `utility` section, from the merged partials of phase 3.

Per QID, the figures of the input and of the release (`summary`), the release's contingency
of the pairs named with the association (Cramér's V) of each pair in the sample before and
after, and, with a target, the classifiers' figures on the sample (`classify`). The input's
figures name no input value (count, distinct, the mode's records; numbers: mean, standard
deviation): the manifest is published with the release, and an input's min, max, median or
mode is a record's value. The release's labels are public: its figures name them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa

from airflow_skald.core.settings.utility import SEED, UtilitySettings
from airflow_skald.core.utility import classify as C
from airflow_skald.core.utility.collect import (
    PAIR_SEPARATOR,
    RELEASED,
    UtilityPartial,
    pair_name,
)
from airflow_skald.core.utility.summary import Counts, figures, release_figures

log = logging.getLogger("airflow_skald")

#: labels per side of a contingency table the manifest lists (the rest summed as "other")
PAIR_LABELS = 12
#: why a differentially private release has no utility analysis (docs/design.md §4e, ADR 0027)
DP_LEFT_OUT = (
    "Left out under differential privacy: the input's figures (records, distinct values, "
    "mean, standard deviation), the association of pairs before and after, and classifiers "
    "trained on the original records are statistics of every input record, those the keyed "
    "sample left out included, which the guarantee does not cover; no privacy budget is "
    "spent on them, so they are not published."
)
#: significant digits of the figures (a retry writes the same manifest bytes)
DIGITS = 6


def _round(x):
    if isinstance(x, float):
        return float(f"{x:.{DIGITS}g}")
    if isinstance(x, dict):
        return {k: _round(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_round(v) for v in x]
    return x


def _column(table: pa.Table, name: str) -> pa.Array:
    column = table.column(name).combine_chunks()
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    return column


def qid_figures(qids: Sequence[str], merged: UtilityPartial, sample: pa.Table | None) -> list:
    """Per QID: the input's figures and the release's (from the sample when a column had too
    many distinct values to count: `from_sample`)."""
    out = []
    for q in qids:
        before, after = merged.before[q], merged.after[q]
        row: dict = {"name": q}
        if before.overflow and sample is not None:
            row["before"] = {**figures(Counts.of(sample.column(q)), False), "from_sample": True}
        else:
            row["before"] = figures(before, name_values=False)
        row["after"] = release_figures(after)
        out.append(row)
    return out


def cramers_v(a: pa.Array, b: pa.Array) -> float | None:
    """Cramér's V of two columns, sqrt(chi² / (n (min(rows, columns) - 1))) without bias
    correction (scipy's `association(method="cramer")`); None when either holds one value."""
    x, y = C.category_codes(a), C.category_codes(b)
    if not x.size:
        return None
    rows, cols = int(x.max()) + 1, int(y.max()) + 1
    if min(rows, cols) < 2:
        return None
    observed = np.bincount(x * cols + y, minlength=rows * cols).reshape(rows, cols)
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / x.size
    chi2 = float(np.sum((observed - expected) ** 2 / expected))
    return (chi2 / (x.size * (min(rows, cols) - 1))) ** 0.5


def contingency(
    a: str, b: str, counts: Counts, original: pa.Table | None, released: pa.Table | None
) -> dict:
    """The release's records per label pair (the PAIR_LABELS most frequent labels of each side,
    the rest as "other"), and Cramér's V of the pair in the sample before and after."""
    cells: dict[tuple[str, str], int] = {}
    left: dict[str, int] = {}
    right: dict[str, int] = {}
    if counts.values is not None:
        for key, n in zip(counts.values.to_pylist(), counts.counts.tolist(), strict=True):
            la, lb = key.split(PAIR_SEPARATOR, 1)
            cells[la, lb] = n
            left[la] = left.get(la, 0) + n
            right[lb] = right.get(lb, 0) + n
    rows = sorted(left, key=lambda v: (-left[v], v))[:PAIR_LABELS]
    cols = sorted(right, key=lambda v: (-right[v], v))[:PAIR_LABELS]
    table = [[cells.get((r, c), 0) for c in cols] for r in rows]
    shown = sum(map(sum, table))
    out: dict = {
        "pair": [a, b],
        "rows": rows,
        "columns": cols,
        "counts": table,
        "other": sum(cells.values()) - shown,
    }
    if original is not None and released is not None:
        out["cramers_v_before"] = cramers_v(_column(original, a), _column(original, b))
        out["cramers_v_after"] = cramers_v(_column(released, a), _column(released, b))
    return out


def classification(
    settings: UtilitySettings, qids: list[str], original: pa.Table, released: pa.Table
) -> dict:
    """Each model's figures trained on the original and on the release, and ZeroR's."""
    from threadpoolctl import threadpool_limits

    names = settings.feature_names(qids)
    y, classes = C.labels_of(_column(original, settings.target))
    blocks = C.folds(y.size, settings.folds)
    everyone = np.ones(y.size, dtype=bool)
    kept = ~C.suppressed_rows(released, qids)
    out: dict = {
        "target": settings.target,
        "classes": len(classes),
        "records": int(y.size),
        "folds": len(blocks),
        "features": names,
        "released_for_training": int(kept.sum()),
        "baseline": C.scores(C.zero_r(y, len(classes), blocks), y),
        "models": [],
    }
    if not blocks:
        return out
    with threadpool_limits(1):  # the machine's cores belong to the run, and figures stay fixed
        before, after = C.encode(original, names), C.encode(released, names)
        for kind in settings.models:
            p_o = C.out_of_fold(kind, before, y, len(classes), blocks, everyone, SEED)
            p_r = C.out_of_fold(kind, after, y, len(classes), blocks, kept, SEED)
            o, r = C.scores(p_o, y), C.scores(p_r, y)
            skill = (
                0.0 if r["brier"] == 0 else (1 - r["brier"] / o["brier"] if o["brier"] else None)
            )
            out["models"].append({"model": kind, "original": o, "release": r, "brier_skill": skill})
    return out


def analyse(
    settings: UtilitySettings,
    qids: list[str],
    merged: UtilityPartial,
    generalise: Callable[[pa.Table], pa.Table],
) -> dict:
    """The `utility` section; `generalise` releases the sampled input rows as the run did
    (suppressed records masked)."""
    t0 = time.process_time()
    rows, original = merged.sample.ordered()
    if original is not None and RELEASED in original.column_names:  # a DP run's sample
        return {"settings": settings.describe(), "left_out": DP_LEFT_OUT}
    released = generalise(original) if original is not None and original.num_rows else None
    section: dict = {
        "settings": settings.describe(),
        "sample": {"records": int(rows.size), "seed": SEED},
        "qids": qid_figures(qids, merged, original),
        "contingency": [
            contingency(a, b, merged.pairs[pair_name(a, b)], original, released)
            for a, b in settings.pairs
        ],
    }
    if settings.target and released is not None:
        section["classification"] = classification(settings, qids, original, released)
    section = _round(section)
    log.info(
        "utility analysis: %d sampled records, %.2f s CPU", rows.size, time.process_time() - t0
    )
    return section

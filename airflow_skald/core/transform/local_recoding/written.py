"""A locally recoded run's ``recoding_steps.json`` (docs/design.md §4f): what the release keeps
so that `skald verify` re-checks every step from the release alone (how verify reads it back:
`recorded`). Phase 3's `after_verify` hook of `LocalRecoding` writes it, once the run checked
each step's classes (`verify.verify_steps`).

Counted from the written release's classes and the steps' kept classes (no pass over the
data): a class's records at step s >= 1 are the records of that step's kept class with its
labels; the global node's (step 0) are the rest.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from airflow_skald.core.data.side_files import labels_digest
from airflow_skald.core.errors import VerificationError
from airflow_skald.core.transform.counted import CountedClasses
from airflow_skald.core.transform.encoded import EncodedDimension
from airflow_skald.core.transform.local_recoding.recorded import (
    RECODING_STEPS,
    kept_tuples,
    read_recoding_steps,
)
from airflow_skald.core.transform.suppression.sensitive_counts import overall_attributes

if TYPE_CHECKING:
    from airflow_skald.core.transform.hooks_phases import Staged


def of_run(
    classes: CountedClasses,
    dims: Sequence[EncodedDimension],
    decision: Any,
    sensitive: Mapping[str, Any],
    attributes: Sequence[str],
) -> bytes:
    """The file's bytes for a locally recoded run (deterministic: a retry writes the same).
    `classes`: the written release's; `attributes`: those whose step distributions a
    step-relative model compares with."""
    n_qids = len(dims)
    tuples, totals = kept_tuples(classes, n_qids)
    order = sorted(range(len(tuples)), key=tuples.__getitem__)
    position = {tuples[i]: p for p, i in enumerate(order)}
    left = totals[np.asarray(order, dtype=np.int64)] if order else totals
    steps = [s for s in decision.steps if not s.at_top]
    body_steps = []
    for step in steps:
        digits = np.unravel_index(step.kept_keys, tuple(step.radices))
        columns = [
            d.labels(int(level), np.asarray(c, dtype=np.int64))
            for d, level, c in zip(dims, step.node, digits, strict=True)
        ]
        at = np.asarray([position[t] for t in zip(*columns, strict=True)], dtype=np.int64)
        np.subtract.at(left, at, step.kept_sizes)
        body_steps.append(_step_body(step.levels, step.n_records, at, step.kept_sizes))
    if (left < 0).any():
        raise VerificationError("local recoding: a step released more records than written")
    first = np.flatnonzero(left)
    n_first = int(decision.figures.n_records)
    body_steps.insert(0, _step_body(decision.levels, n_first, first, left[first]))
    dists = {
        a: {
            "values": list(sensitive[a].values),
            "counts": [
                [int(c) for c in sensitive[a].counts],
                *([int(c) for c in s.distributions[a]] for s in steps),
            ],
        }
        for a in attributes
    }
    body = {
        "order": "the release's non-'*' classes sorted by their QID labels (manifest.node's order)",
        "labels_sha256": labels_digest([tuples[i] for i in order]),
        "classes": len(order),
        "steps": body_steps,
        "distributions": dists,
    }
    return json.dumps(body, indent=1).encode() + b"\n"


def _step_body(node: Mapping[str, int], records: int, at: np.ndarray, sizes: np.ndarray) -> dict:
    order = np.argsort(at, kind="stable")
    return {
        "node": dict(node),
        "records": int(records),
        "classes": at[order].tolist(),
        "released": np.asarray(sizes, dtype=np.int64)[order].tolist(),
    }


def kept(ctx: Staged, manifest: dict) -> dict:
    """Write the file beside the staged release and name it in the manifest; read it back as
    `skald verify` will (the run's own proof that verify finds every step in it)."""
    attributes = overall_attributes(ctx.policy.models, "drop")  # compared with a distribution
    plan = ctx.plan
    sensitive = plan.stats.sensitive
    data = of_run(ctx.classes, plan.dims, ctx.decision, sensitive, attributes)
    manifest = ctx.files.keep(manifest, "recoding_steps", RECODING_STEPS, data)
    read_recoding_steps(ctx.staging, manifest, ctx.classes, len(plan.dims), sensitive, attributes)
    return manifest

"""The run's ``recoding_steps.json`` (docs/design.md §4f): what a locally recoded release keeps
so that `skald verify` re-checks every step from the release alone (the file, and how verify
reads it back: `core.transform.local_recoding.recorded`).

Counted from the written release's classes and the steps' kept classes (no pass over the
data): a class's records at step s >= 1 are the records of that step's kept class with its
labels; the global node's (step 0) are the rest.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from airflow_skald.core.data.side_files import labels_digest
from airflow_skald.core.encode.sensitive_domain import SensitiveStats
from airflow_skald.core.errors import VerificationError
from airflow_skald.core.privacy import PrivacyPolicy
from airflow_skald.core.release.check.archive import overall_attributes
from airflow_skald.core.release.count.classes import ReleaseClasses
from airflow_skald.core.release.write.commit import write_bytes_atomic
from airflow_skald.core.release.write.manifest_schema import Manifest
from airflow_skald.core.transform.encoded import EncodedDimension
from airflow_skald.core.transform.local_recoding.recorded import (
    RECODING_STEPS,
    kept_tuples,
    read_recoding_steps,
)

MANIFEST_WHERE = "the manifest about to be written"


def of_run(
    classes: ReleaseClasses,
    dims: Sequence[EncodedDimension],
    decision: Any,
    sensitive: Mapping[str, SensitiveStats],
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


def with_recoding_steps(manifest: dict, data: bytes) -> dict:
    """The manifest naming the file and its SHA-256, in the schema's order."""
    entry = {"file": RECODING_STEPS, "sha256": hashlib.sha256(data).hexdigest()}
    return Manifest.parse({**manifest, "recoding_steps": entry}, MANIFEST_WHERE).to_dict()


def kept(
    staging: str,
    manifest: dict,
    classes: ReleaseClasses,
    plan: Any,
    decision: Any,
    policy: PrivacyPolicy,
) -> dict:
    """Write the file beside the staged release and name it in the manifest; read it back as
    `skald verify` will (the run's own proof that verify finds every step in it)."""
    attributes = overall_attributes(policy.models, "drop")  # compared with a distribution
    sensitive = plan.stats.sensitive
    data = of_run(classes, plan.dims, decision, sensitive, attributes)
    write_bytes_atomic(f"{staging.rstrip('/')}/{RECODING_STEPS}", data)
    manifest = with_recoding_steps(manifest, data)
    read_recoding_steps(staging, manifest, classes, len(plan.dims), sensitive, attributes)
    return manifest

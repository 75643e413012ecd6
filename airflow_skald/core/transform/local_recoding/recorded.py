"""What a locally recoded release keeps so that `skald verify` re-checks every step from the
release alone (docs/design.md §4f; the steps of ARX 3.9's ``ARXResult.optimizeIterativeFast``),
read back: ``recoding_steps.json``, which step released how many records of each released
class, and, for the models that compare a class with its step's records (t-closeness,
b-likeness, d-disclosure), each step's distribution of their attributes.

Without it a step-relative model cannot be re-checked: the release does not tell which
records a step searched. The file holds counts; the distributions name their values (as
``sensitive_counts.json`` does, and only for attributes the release or that file already
hold). Its classes are the release's non-"*" classes in one canonical order, the order of
their QID label tuples, named by one SHA-256 of those sorted tuples (`labels_digest`, as
``population_counts.json`` names them), so verify finds each count's class from the parts and
knows when a part's labels were altered. The manifest names the file with its SHA-256
(``recoding_steps``: ``{"file", "sha256"}``); verify refuses a file other than that one, and
one whose counts are not the release's class sizes or the manifest's steps. The run writes it
(`written`) and reads it back here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from airflow_skald.core.count.histogram import keys_of
from airflow_skald.core.data.hierarchies import TOP_LABEL as TOP
from airflow_skald.core.data.side_files import labels_digest, read_named
from airflow_skald.core.errors import DataError, VerificationError
from airflow_skald.core.privacy.value_order import code_of
from airflow_skald.core.transform.counted import CountedClasses
from airflow_skald.core.transform.local_recoding.manifest import RECODING_STEPS


@dataclass(frozen=True)
class RecordedStep:
    """One step as the file keeps it: its node, the records it searched, and per released
    class (index into the canonical order) the records it released there; `distributions`:
    per attribute, the step's records per value, in the verifying side's value order."""

    node: dict[str, int]  # the level per QID, as the manifest names a node
    n_records: int
    classes: np.ndarray
    sizes: np.ndarray
    distributions: dict[str, list[int]]


def kept_tuples(classes: CountedClasses, n_qids: int) -> tuple[list[tuple[str, ...]], np.ndarray]:
    """The release's non-"*" classes as the class table's `tables` orders its kept table (by QID
    key): their label tuples and sizes."""
    if not classes.sizes.size:
        return [], np.zeros(0, np.int64)
    qlabels = classes.labels[:n_qids]
    radices = [max(len(x), 1) for x in qlabels]
    keys = keys_of(list(classes.codes[:, :n_qids].T), radices)
    if all(TOP in x for x in qlabels):
        star = keys_of([np.asarray([x.index(TOP)]) for x in qlabels], radices)[0]
        keep = keys != star
        keys, sizes = keys[keep], classes.sizes[keep]
    else:
        sizes = classes.sizes
    uniq, inverse = np.unique(keys, return_inverse=True)
    totals = np.bincount(inverse, weights=sizes, minlength=uniq.size).astype(np.int64)
    digits = np.unravel_index(uniq, tuple(radices)) if uniq.size else ()
    columns = [[qlabels[j][c] for c in d.tolist()] for j, d in enumerate(digits)]
    return list(zip(*columns, strict=True)) if uniq.size else [], totals


def read_recoding_steps(
    path: str,
    manifest: dict | None,
    classes: CountedClasses,
    n_qids: int,
    sensitive: Mapping[str, Any],
    overall: Sequence[str] = (),
) -> list[RecordedStep] | None:
    """The steps the release keeps, each class index mapped to the kept table's order (None:
    its manifest names no file). DataError if the file is missing or malformed;
    VerificationError if it is not the file the manifest names, its classes are not the
    release's, or its steps are not the manifest's. `overall`: the attributes the policy's
    models compare with a distribution (`archive.overall_attributes`), each with a
    distribution per step; `sensitive`: the release's statistics per attribute."""
    data = read_named(path, manifest, "recoding_steps", RECODING_STEPS)
    if data is None:
        return None
    name = f"{RECODING_STEPS} of {path}"
    digest, raw, dists = _parsed(data, name)
    needed = set(overall)
    if not needed <= set(dists) <= set(sensitive) or any(
        len(r) != len(raw) for _, r in dists.values()
    ):
        raise DataError(f"{name} is not a valid steps file (one distribution per step)")
    tuples, totals = kept_tuples(classes, n_qids)
    order = sorted(range(len(tuples)), key=tuples.__getitem__)
    if digest != labels_digest([tuples[i] for i in order]):
        raise VerificationError(f"{name}: the release's classes are not the file's (labels)")
    index = np.asarray(order, dtype=np.int64)
    counted = np.zeros(len(order), dtype=np.int64)
    steps = []
    for s, (node, records, at, sizes) in enumerate(raw):
        if at.size != sizes.size or (at.size and (at.min() < 0 or at.max() >= len(order))):
            raise DataError(f"{name} is not a valid steps file")
        if (sizes <= 0).any():
            raise VerificationError(f"{name}: step {s} releases an empty class")
        np.add.at(counted, at, sizes)
        per_step = {a: _aligned(v, rows[s], sensitive[a], name) for a, (v, rows) in dists.items()}
        steps.append(RecordedStep(node, records, index[at], sizes, per_step))
        _labels_fit(node, [tuples[order[p]] for p in at.tolist()], manifest, name, s)
    if not np.array_equal(counted, totals[index] if index.size else totals):
        raise VerificationError(f"{name}: its steps' records are not the release's class sizes")
    _as_manifest(steps, manifest, name)
    _consistent(steps, sensitive, manifest, name)
    return steps


def _parsed(data: bytes, name: str) -> tuple[Any, list[tuple], dict[str, tuple[list, list]]]:
    """The file's labels digest, its steps (node, records, class indices, sizes) and its
    distributions (values, counts per step); DataError naming the file if malformed."""
    try:
        body = json.loads(data)
        digest = body["labels_sha256"]
        raw = [
            (
                {str(q): int(x) for q, x in s["node"].items()},
                int(s["records"]),
                np.asarray([int(c) for c in s["classes"]], dtype=np.int64),
                np.asarray([int(c) for c in s["released"]], dtype=np.int64),
            )
            for s in body["steps"]
        ]
        dists = {
            a: (list(d["values"]), [[int(c) for c in row] for row in d["counts"]])
            for a, d in body["distributions"].items()
        }
    except (ValueError, KeyError, TypeError, AttributeError):
        raise DataError(f"{name} is not a valid steps file") from None
    return digest, raw, dists


def _labels_fit(node: Mapping, labels: list[tuple], manifest: Mapping | None, name: str, s: int):
    """A step's classes carry '*' wherever its node is at a QID's top (their labels can be
    that node's: a class moved to another step's list is refused)."""
    tops = (manifest or {}).get("top_node") or {}
    for j, (qid, level) in enumerate(node.items()):
        if tops.get(qid) == level and any(t[j] != TOP for t in labels):
            raise VerificationError(
                f"{name}: step {s} lists a class whose '{qid}' is not '*' at its node's top"
            )


def _consistent(
    steps: list[RecordedStep],
    sensitive: Mapping[str, Any],
    manifest: Mapping | None,
    name: str,
) -> None:
    """The file's figures agree with each other and with the release: the global node
    searched every record; each step searched the records the one before left (its records
    less those it released); each step's distribution counts its records, the first is the
    release's (or, when it drops suppressed records, the input's), and a later step's is
    within the one before."""
    n = (manifest or {}).get("n_records")
    if steps and n is not None and steps[0].n_records != n:
        raise VerificationError(
            f"{name}: the global node searched {steps[0].n_records} records, not the release's {n}"
        )
    for s, (a, b) in enumerate(zip(steps, steps[1:], strict=False)):
        if b.n_records != a.n_records - int(a.sizes.sum()):
            raise VerificationError(
                f"{name}: step {s + 1} searched {b.n_records} records, not the "
                f"{a.n_records - int(a.sizes.sum())} step {s} left"
            )
    for attribute, stats in sensitive.items():
        rows = [step.distributions[attribute] for step in steps if attribute in step.distributions]
        if not rows:
            continue
        if list(rows[0]) != [int(c) for c in stats.counts]:
            raise VerificationError(
                f"{name}: the global node's '{attribute}' counts are not the release's"
            )
        for s, (step, row) in enumerate(zip(steps, rows, strict=True)):
            if sum(row) != step.n_records or (
                s and any(x > y for x, y in zip(row, rows[s - 1], strict=True))
            ):
                raise VerificationError(
                    f"{name}: step {s}'s '{attribute}' counts are not its records'"
                )


def _aligned(values: list, counts: list[int], stats: Any, name: str) -> list[int]:
    """A step's counts per value, in `stats`' value order (the release's own, or the input's
    when the release drops suppressed records)."""
    code = code_of(stats)
    out = [0] * len(stats.values)
    if len(values) != len(counts):
        raise DataError(f"{name} is not a valid steps file")
    for v, c in zip(values, counts, strict=True):
        try:
            out[code(v)] += c
        except (KeyError, TypeError):
            if c:
                raise VerificationError(
                    f"{name}: a step counts a value the release does not hold"
                ) from None
    return out


def _as_manifest(steps: list[RecordedStep], manifest: Mapping | None, name: str) -> None:
    """The file's steps are the manifest's: the global node, then each step not at the top,
    with the records searched and released."""
    recoding = (manifest or {}).get("local_recoding") or {}
    listed = [s for s in recoding.get("steps", []) if not s.get("at_top")]
    if len(steps) != len(listed) + 1 or steps[0].node != (manifest or {}).get("node"):
        raise VerificationError(f"{name}: its steps are not manifest.json's")
    for s, m in zip(steps[1:], listed, strict=True):
        if (
            s.node != m.get("node")
            or s.n_records != m.get("records")
            or int(s.sizes.sum()) != m.get("released")
        ):
            raise VerificationError(f"{name}: its steps are not manifest.json's")

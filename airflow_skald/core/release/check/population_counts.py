"""What a research-subset release keeps so that `skald verify` re-checks δ-presence and exact
k-map from the release alone (docs/design.md §4e): ``population_counts.json``, per class of the release,
how many population records and how many subset records it holds at the chosen node, and how
many population classes at the node hold no subset record (ADR 0040).

The file holds counts only, never a value: its classes are the release's own classes (their
QID labels as written, all-"*" included) in one canonical order, the order of their label
tuples, and the file names them by one SHA-256 of those sorted tuples (`labels_sha256`), so
verify finds each count's class from the parts and knows when a part's labels were altered.
The manifest names the file with its SHA-256 (``population_counts``: ``{"file", "sha256"}``),
as drop mode names ``sensitive_counts.json`` (`archive`); verify refuses a file that does not
match it, and a release whose classes or class sizes are not the file's.

Counted from phase 2's histogram at the chosen node (no pass over the data): a kept class
with its subset and population records; the suppressed classes' records, masked, are one
all-"*" class (dropped: not in the release, not in the file).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.count.histogram import keys_of
from airflow_skald.core.count.root_counts import RootCounts
from airflow_skald.core.encode.dimensions import TOP
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.errors import DataError, VerificationError
from airflow_skald.core.privacy import ClassTable
from airflow_skald.core.release.check.archive import read_named
from airflow_skald.core.release.count.classes import ReleaseClasses
from airflow_skald.core.release.write.manifest_schema import Manifest
from airflow_skald.core.search.class_source import ClassSource
from airflow_skald.core.search.decision import Decision
from airflow_skald.core.transform.research_subset.classes import SubsetFlags, flags_of

POPULATION_COUNTS = "population_counts.json"
MANIFEST_WHERE = "the manifest about to be written"


@dataclass(frozen=True)
class PopulationCounts:
    """Per class of a release, in the order of their label tuples: subset and population
    records; `labels_sha256` names those sorted tuples."""

    labels_sha256: str
    subset: np.ndarray
    population: np.ndarray
    # population classes at the node holding no subset record (δ = 0: δ-presence, ADR 0040)
    unreleased: int = 0

    def to_bytes(self) -> bytes:
        """The file's bytes (deterministic: a retry writes the same)."""
        body = {
            "order": "the release's classes sorted by their QID labels (manifest.node's order)",
            "labels_sha256": self.labels_sha256,
            "classes": int(self.subset.size),
            "subset_records": int(self.subset.sum()),
            "population_records": int(self.population.sum()),
            "population_classes_without_subset": int(self.unreleased),
            "subset": self.subset.tolist(),
            "population": self.population.tolist(),
        }
        return json.dumps(body, indent=1).encode() + b"\n"


def _canonical(
    labels: Sequence[tuple[str, ...]], subset: np.ndarray, population: np.ndarray
) -> PopulationCounts:
    """Equal label tuples summed, sorted; their digest."""
    merged: dict[tuple[str, ...], list[int]] = {}
    for t, s, p in zip(labels, subset.tolist(), population.tolist(), strict=True):
        got = merged.setdefault(t, [0, 0])
        got[0] += s
        got[1] += p
    order = sorted(merged)
    return PopulationCounts(
        labels_digest(order),
        np.asarray([merged[t][0] for t in order], dtype=np.int64),
        np.asarray([merged[t][1] for t in order], dtype=np.int64),
    )


def labels_digest(ordered: Sequence[tuple[str, ...]]) -> str:
    text = json.dumps([list(t) for t in ordered], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def at_node(
    plan: Plan, counts: RootCounts, decision: Decision, subset: SubsetFlags, dropped: bool
) -> PopulationCounts:
    """The release's classes as phase 3 writes them, from phase 2's counts at the node."""
    if counts.node is not None and tuple(counts.node) != tuple(plan.root):
        plan = plan.with_root(counts.node)
    keys, table = ClassSource(plan, counts, (), subset).keyed(tuple(decision.node))
    population = table.population if table.population is not None else table.sizes
    suppressed = np.isin(keys, decision.suppressed_keys)
    kept = np.flatnonzero(~suppressed)
    digits = np.unravel_index(keys[kept], tuple(decision.radices)) if kept.size else ()
    columns = [
        dim.labels(level, np.asarray(codes, dtype=np.int64))
        for dim, level, codes in zip(plan.dims, decision.node, digits, strict=False)
    ]
    labels = list(zip(*columns, strict=True)) if kept.size else []
    subset_n, population_n = table.sizes[kept], population[kept]
    if suppressed.any() and not dropped:  # masked: one all-"*" class
        labels.append(tuple(TOP for _ in plan.dims))
        subset_n = np.append(subset_n, table.sizes[suppressed].sum())
        population_n = np.append(population_n, population[suppressed].sum())
    counted = _canonical(labels, np.asarray(subset_n, np.int64), np.asarray(population_n, np.int64))
    return replace(counted, unreleased=table.unreleased)


def with_population_counts(manifest: dict, data: bytes) -> dict:
    """The manifest naming the file and its SHA-256, in the schema's order."""
    entry = {"file": POPULATION_COUNTS, "sha256": hashlib.sha256(data).hexdigest()}
    return Manifest.parse({**manifest, "population_counts": entry}, MANIFEST_WHERE).to_dict()


def read_population_counts(path: str, manifest: dict | None) -> PopulationCounts | None:
    """The counts the release keeps (None if its manifest names none): DataError if the file
    is missing or malformed, VerificationError if it is not the file the manifest names."""
    data = read_named(path, manifest, "population_counts", POPULATION_COUNTS)
    if data is None:
        return None
    name = f"{POPULATION_COUNTS} of {path}"
    try:
        body = json.loads(data)
        digest = body["labels_sha256"]
        subset = np.asarray([int(c) for c in body["subset"]], dtype=np.int64)
        population = np.asarray([int(c) for c in body["population"]], dtype=np.int64)
        unreleased = int(body.get("population_classes_without_subset", 0))  # older files: 0
    except (ValueError, KeyError, TypeError, AttributeError):
        raise DataError(f"{name} is not a valid counts file") from None
    if not isinstance(digest, str) or subset.size != population.size or unreleased < 0:
        raise DataError(f"{name} is not a valid counts file")
    if (subset < 0).any() or (population < subset).any():
        raise VerificationError(f"{name}: a class holds more subset than population records")
    return PopulationCounts(digest, subset, population, unreleased)


def with_population(
    classes: ReleaseClasses,
    n_qids: int,
    star: ClassTable,
    kept: ClassTable,
    counts: PopulationCounts,
    path: str,
) -> tuple[ClassTable, ClassTable]:
    """The release's all-"*" class and other classes (`ReleaseClasses.tables`) with their
    population counts from the file; VerificationError when the parts' classes are not the
    file's (another label tuple, or another number of records in a class)."""
    qlabels = [np.asarray(x, dtype=object) for x in classes.labels[:n_qids]]
    radices = [max(len(x), 1) for x in qlabels]
    sizes = classes.sizes.astype(np.int64)
    keys = keys_of(list(classes.codes[:, :n_qids].T), radices) if sizes.size else sizes
    uniq, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    n = np.bincount(inverse.reshape(-1), weights=sizes, minlength=uniq.size).astype(np.int64)
    rows = classes.codes[first, :n_qids]
    tuples = [tuple(str(qlabels[j][c]) for j, c in enumerate(row)) for row in rows.tolist()]
    order = sorted(range(len(tuples)), key=tuples.__getitem__)
    name = f"{POPULATION_COUNTS} of {path}"
    if labels_digest([tuples[i] for i in order]) != counts.labels_sha256:
        raise VerificationError(f"the classes of release {path} are not those {name} counts")
    if not np.array_equal(n[order], counts.subset):
        raise VerificationError(
            f"a class of release {path} holds another number of records than {name} counts"
        )
    population = np.empty(uniq.size, dtype=np.int64)
    population[order] = counts.population
    star_mask = np.asarray([all(v == TOP for v in t) for t in tuples], dtype=bool)
    # `class_tables` keeps the classes in key order, the all-"*" one apart
    return (
        replace(star, population=population[star_mask]),
        replace(kept, population=population[~star_mask], unreleased=counts.unreleased),
    )


def of_run(config: SkaldConfig, plan: Plan, counts: RootCounts, decision: Decision) -> bytes | None:
    """The file's bytes for a run with a research subset (None: the run has none)."""
    flags = flags_of(config.research_subset, plan.stats.sensitive)
    if flags is None:
        return None
    dropped = config.suppression.drop
    return at_node(plan, counts, decision, flags, dropped).to_bytes()

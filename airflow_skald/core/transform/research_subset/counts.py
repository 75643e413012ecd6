"""`population_counts.json`, what a research-subset release keeps so that `skald verify`
re-checks δ-presence and exact k-map from the release alone (docs/design.md §4e; ADR 0040):
per class of the release, how many population records and how many subset records it holds
at the chosen node, and how many population classes at the node hold no subset record.

The file holds counts only, never a value: its classes are the release's own classes (their
QID labels as written, all-"*" included) in one canonical order, the order of their label
tuples, and the file names them by one SHA-256 of those sorted tuples (`labels_sha256`), so
verify finds each count's class from the parts (`with_population`) and knows when a part's
labels were altered. The release writes it and the manifest names it (`at_node`: counted
from phase 2's histogram at the node).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from airflow_skald.core.count.histogram import keys_of
from airflow_skald.core.data.hierarchies import TOP_LABEL as TOP
from airflow_skald.core.data.side_files import labels_digest, read_named
from airflow_skald.core.errors import DataError, VerificationError
from airflow_skald.core.privacy import ClassTable

POPULATION_COUNTS = "population_counts.json"


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

    @classmethod
    def parse(cls, data: bytes, name: str) -> PopulationCounts:
        """The file's counts (`name`: the file as messages name it): DataError if malformed,
        VerificationError if a class holds more subset than population records."""
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
        return cls(digest, subset, population, unreleased)

    # ------------------------------------------------------------------ `KeptCounts`
    @property
    def context(self) -> dict[str, Any]:
        """δ-presence and exact k-map are rebuilt knowing the release keeps its classes'
        population counts (`RebuildContext.population`)."""
        return {"population": True}

    def on_tables(
        self, classes: Any, n_qids: int, star: ClassTable, kept: ClassTable, path: str
    ) -> tuple[ClassTable, ClassTable]:
        """The release's class tables with these population counts (`with_population`)."""
        return with_population(classes, n_qids, star, kept, self, path)


def canonical(
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


def with_population(
    classes: Any,
    n_qids: int,
    star: ClassTable,
    kept: ClassTable,
    counts: PopulationCounts,
    path: str,
) -> tuple[ClassTable, ClassTable]:
    """The release's all-"*" class and other classes (`ReleaseClasses.tables`) with their
    population counts from the file; VerificationError when the parts' classes are not the
    file's (another label tuple, or another number of records in a class). `classes`: the
    release's (`release.count.classes.ReleaseClasses`: `labels`, `codes`, `sizes`)."""
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


def read_population_counts(path: str, manifest: dict | None) -> PopulationCounts | None:
    """The counts release `path` keeps (None if its manifest names none): DataError if the
    file is missing or malformed, VerificationError if it is not the file the manifest names."""
    data = read_named(path, manifest, "population_counts", POPULATION_COUNTS)
    if data is None:
        return None
    return PopulationCounts.parse(data, f"{POPULATION_COUNTS} of {path}")

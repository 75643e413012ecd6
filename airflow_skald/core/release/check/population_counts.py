"""`population_counts.json` of a research-subset release (docs/design.md §4e; the file, its
format and how verify matches it with the release's classes: `transform.research_subset.
counts`): written from phase 2's histogram at the chosen node (no pass over the data), named
in the manifest with its SHA-256 (``population_counts``: ``{"file", "sha256"}``, as drop
mode names ``sensitive_counts.json``: `archive`), and read back by verify, which refuses a
file that does not match it (`transform.research_subset.counts.read_population_counts`).

A kept class counts its subset and population records; the suppressed classes' records,
masked, are one all-"*" class (dropped: not in the release, not in the file).
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

import numpy as np

from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.count.root_counts import RootCounts
from airflow_skald.core.encode.dimensions import TOP
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.release.write.manifest_schema import Manifest
from airflow_skald.core.search.class_source import ClassSource
from airflow_skald.core.search.decision import Decision
from airflow_skald.core.transform.research_subset.classes import SubsetFlags, flags_of
from airflow_skald.core.transform.research_subset.counts import (
    POPULATION_COUNTS,
    PopulationCounts,
    canonical,
)

__all__ = ["POPULATION_COUNTS", "at_node", "of_run"]

MANIFEST_WHERE = "the manifest about to be written"


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
    counted = canonical(labels, np.asarray(subset_n, np.int64), np.asarray(population_n, np.int64))
    return replace(counted, unreleased=table.unreleased)


def with_population_counts(manifest: dict, data: bytes) -> dict:
    """The manifest naming the file and its SHA-256, in the schema's order."""
    entry = {"file": POPULATION_COUNTS, "sha256": hashlib.sha256(data).hexdigest()}
    return Manifest.parse({**manifest, "population_counts": entry}, MANIFEST_WHERE).to_dict()


def of_run(config: SkaldConfig, plan: Plan, counts: RootCounts, decision: Decision) -> bytes | None:
    """The file's bytes for a run with a research subset (None: the run has none)."""
    flags = flags_of(config.research_subset, plan.stats.sensitive)
    if flags is None:
        return None
    dropped = config.suppression.drop
    return at_node(plan, counts, decision, flags, dropped).to_bytes()

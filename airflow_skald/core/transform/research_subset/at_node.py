"""A research subset's ``population_counts.json`` as phase 2 counts it (docs/design.md §4e;
the file, its format and how verify matches it with the release's classes: `counts`):
written from phase 2's counts at the chosen node (no pass over the data) by the
`after_search` hook of `ResearchSubset`, kept in the run's store, and copied beside the
staged release (named in the manifest with its SHA-256) by its `side_files` hook.

A kept class counts its subset and population records; the suppressed classes' records,
masked, are one all-"*" class (dropped: not in the release, not in the file).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from airflow_skald.core.data.hierarchies import TOP_LABEL as TOP
from airflow_skald.core.transform.research_subset.classes import SubsetFlags, flags_of
from airflow_skald.core.transform.research_subset.counts import PopulationCounts, canonical

if TYPE_CHECKING:
    from airflow_skald.core.transform.hooks_phases import NodeClasses


def at_node(
    classes: NodeClasses, decision: Any, subset: SubsetFlags, dropped: bool
) -> PopulationCounts:
    """The release's classes as phase 3 writes them, from phase 2's counts at the node."""
    plan = classes.plan
    keys, table = classes.keyed((), subset)
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


def of_run(config: Any, classes: NodeClasses, decision: Any) -> bytes | None:
    """The file's bytes for a run with a research subset (None: the run has none)."""
    flags = flags_of(config.research_subset, classes.plan.stats.sensitive)
    if flags is None:
        return None
    return at_node(classes, decision, flags, config.suppression.drop).to_bytes()

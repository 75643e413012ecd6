"""Phase 3's share of the utility analysis (docs/design.md §5): the collector the written chunks feed
(no pass of its own), the merged section the publish step adds to the manifest, and the
warning about QIDs generalised away for every record."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.data.io import ChunkRef
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.errors import ConfigError
from airflow_skald.core.generalise.part import generalise_table, released_columns
from airflow_skald.core.release.write.manifest_schema import Manifest
from airflow_skald.core.search.decision import Decision
from airflow_skald.core.transform.microaggregation.aggregates import Aggregates
from airflow_skald.core.utility.analyse import analyse
from airflow_skald.core.utility.collect import Collector, UtilityPartial, file_offsets
from airflow_skald.core.utility.top import advice, all_top

log = logging.getLogger("airflow_skald")


def collector(config: SkaldConfig, plan: Plan, chunks: Sequence[ChunkRef]) -> Collector | None:
    """The collector of a run with a `utility:` section (`chunks`: all the run's chunks, for
    the records' numbers); None without one."""
    settings = config.utility
    if settings is None:
        return None
    columns = released_columns(config, plan.stats.columns)
    for name in settings.columns(config.qid_names):
        if name not in columns:
            raise ConfigError(f"utility names '{name}', which is not a column of the input")
    return Collector(settings, config.qid_names, file_offsets(chunks), plan.stats.n_rows)


def merged(parts: Sequence[UtilityPartial | None]) -> UtilityPartial | None:
    live = [p for p in parts if p is not None]
    return UtilityPartial.merge(live) if live else None


def with_section(manifest: dict, run: Any, partial: UtilityPartial) -> dict:
    """The manifest with its `utility` section (in the schema's place); the run record gets
    the analysis's CPU seconds (the chunks' shares and the section's) as `cpu_s.utility`."""
    body, cpu = section(run.config, run.plan(), run.decision(), run.microaggregates(), partial)
    run.record.cpu_s["utility"] = cpu + partial.cpu_s
    return Manifest.of(**{**manifest, "utility": body}).to_dict()


def section(
    config: SkaldConfig,
    plan: Plan,
    decision: Decision,
    aggregates: Sequence[Aggregates],
    partial: UtilityPartial,
) -> tuple[dict, float]:
    """(the manifest's `utility` section, its CPU seconds): the sampled input rows are
    released by the phase's own function (suppressed records masked, as ARX's outliers)."""
    t0 = time.process_time()
    masked = config.with_transformation(config.suppression.masked())

    def release(table: pa.Table) -> pa.Table:
        sample = ChunkRef(-1, "the utility analysis's sample", 0, table.num_rows)
        # the sample holds the lattice's QIDs: a QID out of it (microaggregation with
        # cluster: false) is no feature, so its aggregate is not written into the sample
        held = [a for a in aggregates if a.name in table.column_names]
        return generalise_table(masked, plan, decision, table, sample, held)

    body = analyse(config.utility, config.qid_names, partial, release)
    return body, time.process_time() - t0


def warn_all_top(config: SkaldConfig, plan: Plan, decision: Decision) -> list[str]:
    """Log one warning naming the QIDs generalised to the top for every released record."""
    nodes = [decision.node, *(s.node for s in decision.steps if s.released)]
    names = all_top([plan.levels(n) for n in nodes], plan.levels(plan.tops))
    if names:
        log.warning("%s", advice(names, config.quality.objective, bool(decision.steps)))
    return names

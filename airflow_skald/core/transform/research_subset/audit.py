"""What `skald audit` can judge with a research subset (docs/design.md §4e; ADR 0040, 0045):
a release holds the subset's records only, so its population-based models (δ-presence, exact
k-map) are listed as not checked and the rest judged on it; a population table is judged as
the subset's classes, except l-diversity and t-closeness, which phases 1 and 2 count over the
subset's records (ADR 0045) and a table's audit would count over every record."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from airflow_skald.core.errors import DataError

NOT_AUDITED = (
    "not checked: a release holds no population record; skald verify re-checks it from the "
    "release's population_counts.json, skald audit CONFIG on the population table"
)


def audited(config: Any, release: bool) -> tuple[Any, list[dict]]:
    """`config` (a `SkaldConfig` with a research subset) as `skald audit` judges a table
    (`release`: a release's folder, else the population table), and the models it leaves
    out, each with the reason."""
    not_checked: list[dict] = []
    if release:  # the population is not in it
        not_checked = [
            {**m.describe(), "reason": NOT_AUDITED} for m in config.privacy if m.population_based
        ]
        kept_models = tuple(m for m in config.privacy if not m.population_based)
        others = tuple(t for t in config.transformations if t is not config.research_subset)
        if not kept_models:
            raise DataError(
                "a release of a research subset holds no population records: its "
                "delta-presence / exact k-map can only be audited on the population table"
            )
        return replace(config, transformations=others, privacy=kept_models), not_checked
    if config.criteria_attributes:
        raise DataError(
            "skald audit of a population table judges l-diversity / t-closeness with a "
            "research_subset over every record, not the subset's: audit the release instead"
        )
    return config, not_checked

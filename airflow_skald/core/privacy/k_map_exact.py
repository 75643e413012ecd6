"""Exact k-map (docs/design.md §4e, ARX's ``KMap(k, subset)``): with a research subset of a population
table, every released class matches at least k population records. `privacy.k_map: {k: 5}`
without an estimator (with `sampling_fraction` or `population` it is the estimated k-map of
docs/design.md §4c, `k_map.py`). Class-based and monotone: merging classes adds their population
counts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from airflow_skald.core.privacy.delta_presence import (
    NO_POPULATION,
    population_of_table,
    subset_column,
)
from airflow_skald.core.privacy.model import ClassTable, ParseContext, PrivacyModel, is_int
from airflow_skald.core.settings.parse import mapping, no_unknown
from airflow_skald.core.settings.table import BY_NAME

ESTIMATED = ("sampling_fraction", "population", "estimator", "alpha")


def is_exact(raw: Any) -> bool:
    """A `k_map` entry without an estimator's settings: the exact model."""
    return isinstance(raw, dict) and not any(key in raw for key in ESTIMATED)


@dataclass(frozen=True)
class ExactKMap(PrivacyModel):
    k: int

    name = "k_map"
    config_key = "k_map"
    thresholds = ("k_map",)
    manifest_models = ("k-map-exact",)
    monotone = True
    population_based = True

    @classmethod
    def parse(cls, raw: Any, ctx: ParseContext) -> tuple[PrivacyModel, ...]:
        if raw is None or not is_exact(raw):
            return ()
        where = "privacy.k_map"
        raw = mapping(raw, where)
        no_unknown(raw, {"k", *ESTIMATED}, where)
        subset_column(ctx, f"{where} without an estimator (exact k-map)")
        return (cls(BY_NAME["k_map"].parse(raw.get("k"), f"{where}.k")),)

    @classmethod
    def settings_value(cls, models: tuple[PrivacyModel, ...]) -> Any:
        return models[0].settings_entry() if models else None

    def settings_entry(self) -> dict:
        return {"k": self.k}

    def with_threshold(self, key: str, value: Any) -> PrivacyModel:
        return ExactKMap(value)

    def keeps(self, table: ClassTable) -> np.ndarray:
        return population_of_table(table, "exact k-map") >= self.k

    def violation(self, table: ClassTable, where: str) -> str | None:
        if table.population is None:  # a written release: its population is not in it
            return None
        return super().violation(table, where)

    def describe(self) -> dict:
        return {"model": "k-map-exact", "k": self.k}

    def figure(self, kept: ClassTable) -> dict:
        pop = kept.population
        return {"min_population_count": int(pop.min()) if kept.n_classes and pop is not None else 0}

    @classmethod
    def check_entry(cls, entry: dict) -> str | None:
        return None if is_int(entry.get("k"), 2) else ".k must be an integer >= 2"

    @classmethod
    def rebuild(cls, entry: dict, ctx: Any) -> PrivacyModel | str:
        if getattr(ctx, "population", False):  # population_counts.json: re-checked from it
            return cls(int(entry["k"]))
        return NO_POPULATION.format(what="exact k-map counts each class in")

    def label(self) -> str:
        return f"{self.k}-map (exact, population table)"

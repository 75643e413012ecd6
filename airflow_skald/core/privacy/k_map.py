"""k-map, estimated (Sweeney; El Emam and Dankar 2008; docs/design.md §4c, ARX's ``KMap`` with an
estimator): k-anonymity with ARX's derived k' (`risk.kmap.derived_k`: Poisson or zero-truncated
Poisson at significance alpha, from the sampling fraction or the population size), capped at k and
at the records. Class-based, monotone with suppression and generalisation."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import Any

import numpy as np

from airflow_skald.core.errors import ConfigError
from airflow_skald.core.privacy.k_map_exact import is_exact
from airflow_skald.core.privacy.model import ClassTable, ParseContext, PrivacyModel, is_int
from airflow_skald.core.privacy.risk.analysis import PopulationModel
from airflow_skald.core.privacy.risk.kmap import ESTIMATORS, derived_k
from airflow_skald.core.privacy.sample_based import (
    fraction_of,
    population_entry,
    population_of,
    population_rebuilt,
)
from airflow_skald.core.settings.parse import choice, mapping, no_unknown
from airflow_skald.core.settings.table import BY_NAME
from airflow_skald.core.text import decimal_text

ALPHA = Fraction(1, 100)  # ARX's default significance in its examples


@dataclass(frozen=True)
class KMap(PrivacyModel):
    k: int
    population: PopulationModel
    estimator: str = "poisson"
    alpha: Fraction = ALPHA
    n_input: int | None = None
    fixed_k: int | None = None  # rebuilt from a manifest: k' as the run derived it

    name = "k_map"
    config_key = "k_map"
    thresholds = ("k_map",)
    manifest_models = ("k-map",)
    monotone = True

    @classmethod
    def parse(cls, raw: Any, ctx: ParseContext) -> tuple[PrivacyModel, ...]:
        if raw is None or is_exact(raw):
            return ()  # without an estimator: the exact model (k_map_exact.py)
        where = "privacy.k_map"
        raw = mapping(raw, where)
        no_unknown(raw, {"k", "estimator", "alpha", "sampling_fraction", "population"}, where)
        if "k" not in raw:
            raise ConfigError(f"{where} needs 'k'")
        k = BY_NAME["k_map"].parse(raw["k"], f"{where}.k")
        estimator = choice(raw.get("estimator", "poisson"), ESTIMATORS, f"{where}.estimator")
        alpha = ALPHA
        if "alpha" in raw:
            alpha = BY_NAME["risk_sampling_fraction"].parse(raw["alpha"], f"{where}.alpha")
        return (cls(k, population_of(raw, where), estimator, alpha),)

    @classmethod
    def settings_value(cls, models: tuple[PrivacyModel, ...]) -> Any:
        return models[0].settings_entry() if models else None

    def settings_entry(self) -> dict:
        out = {k: v for k, v in self.describe().items() if k not in ("model", "derived_k")}
        return out

    def with_threshold(self, key: str, value: Any) -> PrivacyModel:
        return KMap(value, self.population, self.estimator, self.alpha, self.n_input)

    def with_records(self, n_records: int) -> PrivacyModel:
        return KMap(self.k, self.population, self.estimator, self.alpha, n_records)

    def derived(self, n_records: int) -> int:
        """k' for an input of `n_records` records."""
        pop = self.population
        if pop.population is not None:
            fraction = Fraction(n_records, pop.population)
        else:
            fraction = Fraction(pop.sampling_fraction)
        return derived_k(self.k, fraction, self.alpha, self.estimator, n_records)

    @cached_property
    def k_prime(self) -> int | None:
        if self.fixed_k is not None:
            return self.fixed_k
        if self.n_input is not None:
            return self.derived(self.n_input)
        if self.population.sampling_fraction is not None:
            return self.derived(1 << 62)
        return None

    @property
    def min_class_size(self) -> int:
        return self.k_prime or 1

    def keeps(self, table: ClassTable) -> np.ndarray:
        known = self.n_input is not None or self.fixed_k is not None
        k = self.k_prime if known else self.derived(table.n_records)
        return table.sizes >= k

    def describe(self) -> dict:
        out = {
            "model": "k-map",
            "k": self.k,
            "estimator": self.estimator,
            "alpha": decimal_text(self.alpha),
            **self.population.describe(),
        }
        if self.k_prime is not None:
            out["derived_k"] = self.k_prime
        return out

    def figure(self, kept: ClassTable) -> dict:
        return {"min_class_size": int(kept.sizes.min()) if kept.n_classes else 0}

    @classmethod
    def check_entry(cls, entry: dict) -> str | None:
        if not is_int(entry.get("k"), 2):
            return ".k must be an integer >= 2"
        if entry.get("estimator") not in ESTIMATORS:
            return f".estimator must be one of {', '.join(ESTIMATORS)}"
        if not fraction_of(entry, "alpha"):
            return ".alpha must be a number in (0, 1]"
        if "derived_k" in entry and not is_int(entry["derived_k"], 1):
            return ".derived_k must be an integer >= 1"
        return population_entry(entry)

    @classmethod
    def rebuild(cls, entry: dict, ctx: Any) -> PrivacyModel | str:
        return cls(
            int(entry["k"]),
            population_rebuilt(entry),
            entry["estimator"],
            Fraction(str(entry["alpha"])),
            fixed_k=int(entry["derived_k"]) if "derived_k" in entry else None,
        )

    def label(self) -> str:
        return f"{self.k}-map (k'={self.k_prime})" if self.k_prime else f"{self.k}-map"

"""Population uniqueness (docs/design.md §4c, ARX's ``PopulationUniqueness``): the share of the
population's records estimated unique, from the class-size histogram of the classes left by
Zayatz's, Pitman's, the SNB model or Dankar's rule (without its Zayatz fallback), the sampling
fraction being the records left over the population size, holds iff 0 < u <= max, or no class
has size 1. Sample-based; not monotone (Zayatz: with generalisation only): the search evaluates
it at every node the monotone models let through, and the shortest fulfilling prefix is found
by trying every candidate in order (`sample_based.shortest_prefix`)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from airflow_skald.core.privacy.model import ClassTable, ParseContext, PrivacyModel
from airflow_skald.core.privacy.risk.analysis import PopulationModel
from airflow_skald.core.privacy.risk.estimators import MODELS, Histograms, estimate
from airflow_skald.core.privacy.risk.zayatz_bounds import HOLDS, UNDECIDED, decide
from airflow_skald.core.privacy.sample_based import (
    SampleBasedModel,
    fraction_of,
    fraction_setting,
    population_entry,
    population_of,
    population_rebuilt,
)
from airflow_skald.core.settings.parse import choice, mapping, no_unknown
from airflow_skald.core.text import decimal_text


@dataclass(frozen=True)
class PopulationUniqueness(SampleBasedModel):
    max: Fraction
    model: str
    population: PopulationModel
    n_input: int | None = None  # the input's records (with_records): the population's size

    name = "population_uniqueness"
    config_key = "population_uniqueness"
    thresholds = ("population_uniqueness",)
    manifest_models = ("population-uniqueness",)
    monotone = False
    cheap = False  # (Zayatz's candidates are mostly decided by bounds: `zayatz_bounds`)

    @classmethod
    def parse(cls, raw: Any, ctx: ParseContext) -> tuple[PrivacyModel, ...]:
        if raw is None:
            return ()
        where = "privacy.population_uniqueness"
        raw = mapping(raw, where)
        no_unknown(raw, {"max", "model", "sampling_fraction", "population"}, where)
        top = fraction_setting(raw, "max", "population_uniqueness", where)
        model = choice(raw.get("model", "dankar"), MODELS, f"{where}.model")
        return (cls(top, model, population_of(raw, where)),)

    @classmethod
    def settings_value(cls, models: tuple[PrivacyModel, ...]) -> Any:
        return models[0].settings_entry() if models else None

    def with_threshold(self, key: str, value: Any) -> PrivacyModel:
        return PopulationUniqueness(value, self.model, self.population, self.n_input)

    def with_records(self, n_records: int) -> PrivacyModel:
        return PopulationUniqueness(self.max, self.model, self.population, n_records)

    def _population(self, sizes: np.ndarray) -> float:
        return self.population.size(self.n_input if self.n_input is not None else int(sizes.sum()))

    def uniques(self, sizes: np.ndarray, prefixes: np.ndarray) -> np.ndarray:
        """The estimated share of population uniques after each prefix (NaN: unavailable)."""
        values, counts = np.unique(sizes, return_counts=True)
        starts = np.r_[0, np.cumsum(counts)[:-1]]
        gone = np.clip(prefixes[:, None] - starts[None, :], 0, counts[None, :])
        left = counts[None, :] - gone
        pop = self._population(sizes)
        u = estimate(Histograms(values, left, pop), (self.model,), fallback=False)
        return getattr(u, self.model) / pop

    def holds(self, sizes: np.ndarray, prefixes: np.ndarray) -> np.ndarray:
        if sizes.size == 0:
            return np.ones(prefixes.size, dtype=bool)
        out = prefixes >= np.count_nonzero(sizes == 1)  # no class of size 1 left
        todo = np.flatnonzero(~out)
        if todo.size:
            out[todo] = self._fulfils(sizes, prefixes[todo])
        return out

    def _fulfils(self, sizes: np.ndarray, prefixes: np.ndarray) -> np.ndarray:
        """0 < u <= max after each prefix (each leaving classes of size 1)."""
        verdict = np.full(prefixes.size, UNDECIDED, dtype=np.int8)
        if self.model == "zayatz":
            values, counts = np.unique(sizes, return_counts=True)
            verdict = decide(values, counts, self._population(sizes), prefixes, float(self.max))
        todo = np.flatnonzero(verdict == UNDECIDED)
        if todo.size:
            u = self.uniques(sizes, prefixes[todo])
            with np.errstate(invalid="ignore"):
                verdict[todo] = (u > 0) & (u <= float(self.max))
        return verdict == HOLDS

    def describe(self) -> dict:
        return {
            "model": "population-uniqueness",
            "max": decimal_text(self.max),
            "estimator": self.model,
            **self.population.describe(),
        }

    def settings_entry(self) -> dict:
        out = {k: v for k, v in self.describe().items() if k not in ("model", "estimator")}
        return {**out, "model": self.model}

    def figure(self, kept: ClassTable) -> dict:
        if not kept.n_classes:
            return {"population_uniques": 0.0}
        sizes = np.sort(kept.sizes.astype(np.int64))
        u = self.uniques(sizes, np.zeros(1, dtype=np.int64))[0]
        return {"population_uniques": None if np.isnan(u) else float(u)}

    @classmethod
    def check_entry(cls, entry: dict) -> str | None:
        if not fraction_of(entry, "max"):
            return ".max must be a number in (0, 1]"
        if entry.get("estimator") not in MODELS:
            return f".estimator must be one of {', '.join(MODELS)}"
        return population_entry(entry)

    @classmethod
    def rebuild(cls, entry: dict, ctx: Any) -> PrivacyModel | str:
        return cls(
            Fraction(str(entry["max"])),
            entry["estimator"],
            population_rebuilt(entry),
            getattr(ctx, "n_records", None),
        )

    def label(self) -> str:
        return f"population uniqueness ({self.model}) <= {decimal_text(self.max)}"

"""δ-presence (Nergiz, Atzori and Clifton 2007; docs/design.md §4e, ARX's ``DPresence``): with a
research subset of a population table, every class of the population at the node has dmin <= subset
records / population records <= dmax, decided exactly (fractions; ARX compares doubles). A released
class that fails is suppressed; a population class without a subset record has δ = 0 and nothing to
suppress, so with dmin > 0 it fails the node (ARX's ``HashGroupify.analyzeAll``; ADR 0040).
Class-based; not monotone (merging two classes averages their ratios), so the search learns every
node (ARX: not monotone either); only that failure is monotone (`judged`: it holds at every finer
node)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from airflow_skald.core.errors import ConfigError
from airflow_skald.core.privacy.model import ClassTable, ParseContext, PrivacyModel, decimal_of
from airflow_skald.core.settings.parse import mapping, no_unknown
from airflow_skald.core.text import decimal_text

NO_POPULATION = (
    "not re-checked: {what} the population table, and the release keeps no "
    "population_counts.json (made before releases kept it; `skald audit CONFIG` checks the "
    "population table itself)"
)


def population_of_table(table: ClassTable, where: str) -> np.ndarray:
    """The population counts a population-table model reads (a programming error without)."""
    if table.population is None:
        raise ValueError(f"{where} needs the classes' population counts (a research subset)")
    return table.population


def subset_column(ctx: ParseContext, where: str) -> str:
    if ctx.research_subset is None:
        raise ConfigError(f"{where} needs research_subset: {{column: ...}} (docs/design.md §4e)")
    return ctx.research_subset


@dataclass(frozen=True)
class DeltaPresence(PrivacyModel):
    dmin: Fraction
    dmax: Fraction

    name = "delta_presence"
    config_key = "delta_presence"
    thresholds = ()
    manifest_models = ("delta-presence",)
    monotone = False
    population_based = True

    @classmethod
    def parse(cls, raw: Any, ctx: ParseContext) -> tuple[PrivacyModel, ...]:
        if raw is None:
            return ()
        where = "privacy.delta_presence"
        raw = mapping(raw, where)
        no_unknown(raw, {"min", "max"}, where)
        subset_column(ctx, where)
        lo = _fraction(raw.get("min", 0), f"{where}.min")
        hi = _fraction(raw.get("max", 1), f"{where}.max")
        if lo > hi:
            raise ConfigError(
                f"{where}.min must be <= max (got {raw.get('min')} > {raw.get('max')})"
            )
        return (cls(lo, hi),)

    @classmethod
    def settings_value(cls, models: tuple[PrivacyModel, ...]) -> Any:
        return models[0].settings_entry() if models else None

    def settings_entry(self) -> dict:
        return {"min": decimal_text(self.dmin), "max": decimal_text(self.dmax)}

    def keeps(self, table: ClassTable) -> np.ndarray:
        pop = population_of_table(table, "delta-presence")
        sub = table.sizes
        # dmin <= sub / pop <= dmax, exactly: sub * den >= num * pop (int64 products are far
        # below overflow for record counts and the few digits a threshold has)
        lo_ok = sub * self.dmin.denominator >= pop * self.dmin.numerator
        hi_ok = sub * self.dmax.denominator <= pop * self.dmax.numerator
        return lo_ok & hi_ok

    def judged(self, table: ClassTable) -> tuple[np.ndarray, float]:
        """`keeps`; and with min > 0, a node with a population class holding no subset record
        fails (its δ is 0; nothing of it can be suppressed, ARX's `HashGroupify.analyzeAll`),
        and so does every node below it (that class's parts hold no subset record either)."""
        return self.keeps(table), (math.inf if self.fails_unreleased(table) else 0.0)

    def fails_unreleased(self, table: ClassTable) -> bool:
        """The node has population classes without a subset record, and min > 0."""
        return self.dmin > 0 and table.unreleased > 0

    def violation(self, table: ClassTable, where: str) -> str | None:
        if table.population is None:  # a written release: its population is not in it
            return None
        lines = [super().violation(table, where)]
        if self.fails_unreleased(table):
            lines.append(
                f"{where} violates {self.label()}: {table.unreleased} population class(es) "
                "without a subset record (δ = 0)"
            )
        return "; ".join(x for x in lines if x) or None

    def describe(self) -> dict:
        return {
            "model": "delta-presence",
            "min": decimal_text(self.dmin),
            "max": decimal_text(self.dmax),
        }

    def figure(self, kept: ClassTable) -> dict:
        if not kept.n_classes or kept.population is None:
            return {"delta_min": None, "delta_max": None, "min_population_count": None}
        ratio = kept.sizes / kept.population
        return {
            "delta_min": float(ratio.min()),
            "delta_max": float(ratio.max()),
            "min_population_count": int(kept.population.min()),
        }

    @classmethod
    def check_entry(cls, entry: dict) -> str | None:
        for key in ("min", "max"):
            value = decimal_of(entry.get(key))
            if value is None or not 0 <= value <= 1:
                return f".{key} must be a number in [0, 1]"
        return None

    @classmethod
    def rebuild(cls, entry: dict, ctx: Any) -> PrivacyModel | str:
        if getattr(ctx, "population", False):  # population_counts.json: re-checked from it
            return cls(decimal_of(entry["min"]), decimal_of(entry["max"]))
        return NO_POPULATION.format(what="delta-presence compares each class with")

    def label(self) -> str:
        return f"({decimal_text(self.dmin)}, {decimal_text(self.dmax)})-presence"


def _fraction(value: Any, where: str) -> Fraction:
    got = decimal_of(value)
    if got is None or not 0 <= got <= 1:
        raise ConfigError(f"{where} must be a number in [0, 1] (got {value!r})")
    return got

"""The risk analysis of a table (docs/design.md §4c), from its class sizes alone, as ARX's
``RiskEstimateBuilder`` reports it: prosecutor risk (records at risk above a threshold, the
highest risk, the average), journalist (= prosecutor: no population table is given), marketer,
sample uniques, and population uniques by Zayatz, Pitman, SNB and Dankar's rule with the model
it picked. An estimator that does not converge is reported as None ("unavailable"), never 0.

Records whose every QID is `*` (suppressed, or a class at the top node) are left out, as ARX
leaves out its suppressed records.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from airflow_skald.core.privacy.risk.analysed import RiskAnalysis
from airflow_skald.core.privacy.risk.estimators import Histograms, estimate
from airflow_skald.core.settings.table import BY_NAME
from airflow_skald.core.text import decimal_text


@dataclass(frozen=True)
class PopulationModel:
    """The population a sample is drawn from: its size, or the sampling fraction of the input
    (ARXPopulationModel: size = input records / fraction)."""

    population: int | None = None
    sampling_fraction: Fraction | None = None

    def size(self, n_input: int) -> float:
        if self.population is not None:
            return float(self.population)
        fraction = self.sampling_fraction if self.sampling_fraction is not None else Fraction(1)
        return float(Fraction(n_input) / fraction)

    def describe(self) -> dict:
        if self.population is not None:
            return {"population": self.population}
        fraction = self.sampling_fraction if self.sampling_fraction is not None else Fraction(1)
        return {"sampling_fraction": decimal_text(fraction)}


#: the prosecutor threshold when the config names none (the settings table's default)
DEFAULT_THRESHOLD: Fraction = BY_NAME["risk_threshold"].default


@dataclass(frozen=True)
class RiskSettings:
    """What a risk analysis is made with: the prosecutor threshold and the population, its
    size or the input's sampling fraction (`SkaldConfig.risk`: the config's ``risk:``,
    docs/design.md §4c; one field per key of the section)."""

    threshold: Fraction = DEFAULT_THRESHOLD
    sampling_fraction: Fraction | None = None
    population: int | None = None

    @property
    def population_model(self) -> PopulationModel:
        return PopulationModel(self.population, self.sampling_fraction)

    def analyse(self, sizes: np.ndarray, n_input: int) -> RiskAnalysis:
        """The analysis of classes of `sizes` (the all-`*` records already left out), with
        the records by class size for the report's plot."""
        out = analyse(sizes, self.threshold, self.population_model, n_input)
        out["by_class_size"] = class_size_bins(sizes)
        return RiskAnalysis.from_dict(out)

    @classmethod
    def of_entry(cls, entry: dict) -> RiskSettings:
        """The settings a manifest's `risk_analysis` was made with."""
        fraction = entry.get("sampling_fraction")
        return cls(
            Fraction(str(entry["threshold"])),
            Fraction(str(fraction)) if "sampling_fraction" in entry else None,
            entry.get("population"),
        )

    def listed(self) -> dict[str, Any]:
        """The config's effective settings' ``risk`` entry, listing only what is set (so
        configs without them keep their hash); empty when nothing is."""
        risk: dict[str, Any] = {}
        if self.threshold != DEFAULT_THRESHOLD:
            risk["threshold"] = str(self.threshold)
        if self.sampling_fraction is not None:
            risk["sampling_fraction"] = str(self.sampling_fraction)
        if self.population is not None:
            risk["population"] = self.population
        return {"risk": risk} if risk else {}


def _num(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def analyse(
    sizes: np.ndarray, threshold: Fraction, population: PopulationModel, n_input: int
) -> dict:
    """The risk figures of classes of `sizes` (JSON-safe; fractions of the records analysed).
    `n_input`: the input's records, against which a sampling fraction gives the population."""
    sizes = np.asarray(sizes, dtype=np.int64)
    sizes = sizes[sizes > 0]
    n = int(sizes.sum())
    c = int(sizes.size)
    pop = population.size(n_input)
    out: dict = {
        "records": n,
        "classes": c,
        "threshold": decimal_text(Fraction(threshold)),
        **population.describe(),
        "population_size": _num(pop),
    }
    if n == 0:
        out.update(
            prosecutor={"records_at_risk": 0.0, "highest_risk": 0.0, "average_risk": 0.0},
            marketer_risk=0.0,
            sample_uniques=0.0,
            population_uniques={m: 0.0 for m in ("zayatz", "pitman", "snb", "dankar")},
            dankar_model="dankar",
        )
        return out
    t = Fraction(threshold)
    # risk 1/size > t  <=>  size * t < 1 (exact)
    at_risk = sizes[sizes * t.numerator < t.denominator].sum()
    average = c / n
    prosecutor = {
        "records_at_risk": float(at_risk) / n,
        "highest_risk": 1.0 / int(sizes.min()),
        "average_risk": average,
    }
    u = estimate(Histograms.of(sizes, pop))
    out.update(
        prosecutor=prosecutor,
        journalist=dict(prosecutor),
        marketer_risk=average,
        sample_uniques=int(np.count_nonzero(sizes == 1)) / n,
        population_uniques={
            "zayatz": _num(u.zayatz[0] / pop),
            "pitman": _num(u.pitman[0] / pop),
            "snb": _num(u.snb[0] / pop),
            "dankar": _num(u.dankar[0] / pop),
        },
        dankar_model=str(u.dankar_model[0]),
    )
    return out


def class_size_bins(sizes: np.ndarray) -> list[dict]:
    """Records and classes by class size (1, 2, 3-4, 5-9, 10-19, ...), each with its prosecutor
    risk range: the report's plot."""
    sizes = np.asarray(sizes, dtype=np.int64)
    sizes = sizes[sizes > 0]
    if not sizes.size:
        return []
    edges = [1, 2, 3, 5, 10]
    while edges[-1] <= sizes.max():  # 20, 50, 100, 200, 500, ...
        edges.append(edges[-1] * 5 // 2 if str(edges[-1]).startswith("2") else edges[-1] * 2)
    out = []
    for lo, hi in zip(edges, edges[1:], strict=False):
        hit = sizes[(sizes >= lo) & (sizes < hi)]
        if hit.size:
            label = str(lo) if hi == lo + 1 else f"{lo}-{hi - 1}"
            out.append(
                {"sizes": label, "classes": int(hit.size), "records": int(hit.sum()),
                 "risk": f"{1 / (hi - 1):.3g}-{1 / lo:.3g}" if hi > lo + 1 else f"{1 / lo:.3g}"}
            )  # fmt: skip
    return out

"""The risk analysis of a release, typed (docs/design.md §4c; the manifest's ``risk_analysis``,
`analysis.RiskSettings.analyse`): what it was made with, the prosecutor (and journalist),
marketer and uniqueness figures, and the records by class size for the report's plot. Each
`to_dict` gives the entry as `analysis.analyse` makes it: same keys, same order."""

from __future__ import annotations

from dataclasses import dataclass, field

#: the population-uniqueness estimators, in the entry's order
ESTIMATORS = ("zayatz", "pitman", "snb", "dankar")


@dataclass(frozen=True)
class ProsecutorRisk:
    """Records at risk above the threshold, the highest risk and the average (fractions)."""

    records_at_risk: float
    highest_risk: float
    average_risk: float

    def to_dict(self) -> dict:
        return {
            "records_at_risk": self.records_at_risk,
            "highest_risk": self.highest_risk,
            "average_risk": self.average_risk,
        }

    @classmethod
    def from_dict(cls, d: dict) -> ProsecutorRisk:
        return cls(d["records_at_risk"], d["highest_risk"], d["average_risk"])


@dataclass(frozen=True)
class SizeBin:
    """Records and classes of one class-size bin ("3-4"), with its prosecutor risk range."""

    sizes: str
    classes: int
    records: int
    risk: str

    def to_dict(self) -> dict:
        return {"sizes": self.sizes, "classes": self.classes, "records": self.records,
                "risk": self.risk}  # fmt: skip

    @classmethod
    def from_dict(cls, d: dict) -> SizeBin:
        return cls(d["sizes"], d["classes"], d["records"], d["risk"])


@dataclass(frozen=True)
class RiskAnalysis:
    """The analysis of the released classes (all-`*` records left out). The population is
    its size (`population`) or the input's sampling fraction (decimal text), as configured;
    an estimator that did not converge is None."""

    records: int
    classes: int
    threshold: str  # decimal text
    population_size: float | None
    prosecutor: ProsecutorRisk
    marketer_risk: float
    sample_uniques: float
    population_uniques: dict[str, float | None]  # per estimator (`ESTIMATORS`)
    dankar_model: str
    population: int | None = None
    sampling_fraction: str | None = None
    journalist: ProsecutorRisk | None = None  # none when no record is analysed
    by_class_size: list[SizeBin] = field(default_factory=list)

    def to_dict(self) -> dict:
        described = (
            {"population": self.population}
            if self.population is not None
            else {"sampling_fraction": self.sampling_fraction}
        )
        journalist = {"journalist": self.journalist.to_dict()} if self.journalist else {}
        return {
            "records": self.records,
            "classes": self.classes,
            "threshold": self.threshold,
            **described,
            "population_size": self.population_size,
            "prosecutor": self.prosecutor.to_dict(),
            **journalist,
            "marketer_risk": self.marketer_risk,
            "sample_uniques": self.sample_uniques,
            "population_uniques": dict(self.population_uniques),
            "dankar_model": self.dankar_model,
            "by_class_size": [b.to_dict() for b in self.by_class_size],
        }

    @classmethod
    def from_dict(cls, d: dict) -> RiskAnalysis:
        journalist = d.get("journalist")
        return cls(
            records=d["records"],
            classes=d["classes"],
            threshold=d["threshold"],
            population_size=d["population_size"],
            prosecutor=ProsecutorRisk.from_dict(d["prosecutor"]),
            marketer_risk=d["marketer_risk"],
            sample_uniques=d["sample_uniques"],
            population_uniques={m: d["population_uniques"][m] for m in ESTIMATORS},
            dankar_model=d["dankar_model"],
            population=d.get("population"),
            sampling_fraction=d.get("sampling_fraction"),
            journalist=ProsecutorRisk.from_dict(journalist) if journalist is not None else None,
            by_class_size=[SizeBin.from_dict(b) for b in d["by_class_size"]],
        )

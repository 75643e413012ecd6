"""The figures of one node under a privacy policy: counts, every reported metric, each privacy
model's figure over the kept classes, and the re-identification risk of the kept classes.

A typed result built once, from the models (``core.privacy``) and metrics (``core.quality``);
the decision, the per-chunk baseline, the manifest and the report all read it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from airflow_skald.core.privacy import ClassTable, Judgement, PrivacyPolicy
from airflow_skald.core.privacy.risk.analysed import RiskAnalysis
from airflow_skald.core.quality.metric import Metric, Scored
from airflow_skald.core.quality.reported import REPORTED


@dataclass(frozen=True)
class NodeFigures:
    """What a node releases, in figures (never a data value)."""

    n_records: int
    n_suppressed: int
    max_suppressed: int
    n_classes: int  # kept classes
    min_class_size: int  # kept classes; 0 if none
    passes: bool
    quality: dict = field(default_factory=dict)  # metric name -> loss (precision: higher=better)
    privacy: list = field(default_factory=list)  # per model: its settings and figure reached

    @classmethod
    def of(
        cls,
        table: ClassTable,
        policy: PrivacyPolicy,
        node: Sequence[int] = (),
        tops: Sequence[int] = (),
        metrics: Sequence[Metric] = REPORTED,
        judgement: Judgement | None = None,
    ) -> NodeFigures:
        j = judgement or policy.judge(table)
        scored = Scored(table, j, tuple(node), tuple(tops))
        kept = scored.kept_sizes
        return cls(
            n_records=j.n_records,
            n_suppressed=j.n_suppressed,
            max_suppressed=j.max_suppressed,
            n_classes=int(kept.size),
            min_class_size=int(kept.min()) if kept.size else 0,
            passes=j.passes,
            quality={m.name: m.value(scored) for m in metrics if node or m.name != "precision"},
            privacy=policy.figures(table.subset(j.kept)),
        )

    @property
    def dm_star(self) -> int:
        return self.quality["dm_star"]

    @property
    def dm_star_arx(self) -> int:
        return self.quality["dm_star_arx"]

    @property
    def dm(self) -> int:
        return self.quality["dm"]

    @property
    def precision(self) -> float:
        return self.quality["precision"]

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> NodeFigures:
        return cls(**d)


def risk(kept: np.ndarray, min_class_size: int) -> dict:
    """Re-identification risk of kept classes: prosecutor risk and records in small classes
    (`share_below_2k`: the manifest's name, k being the policy's minimal class size)."""
    kept = np.asarray(kept, dtype=np.int64)
    if kept.size == 0:
        return {"prosecutor_risk_max": 0.0, "prosecutor_risk_avg": 0.0, "share_below_2k": 0.0}
    n = int(kept.sum())
    return {
        "prosecutor_risk_max": 1.0 / int(kept.min()),
        "prosecutor_risk_avg": float(kept.size / n),
        "share_below_2k": float(kept[kept < 2 * min_class_size].sum() / n),
    }


def class_size_histogram(sizes: np.ndarray) -> dict:
    """Class sizes binned in powers of two, in numeric order (for the report)."""
    if sizes.size == 0:
        return {}
    edges = 2 ** np.arange(0, int(np.ceil(np.log2(sizes.max() + 1))) + 1)
    counts, _ = np.histogram(sizes, bins=edges)
    return {
        f"{int(a)}-{int(b) - 1}": int(c)
        for a, b, c in zip(edges, edges[1:], counts, strict=False)
        if c
    }


@dataclass(frozen=True)
class RiskFigures:
    """The kept classes' re-identification risk (`risk`: the manifest's ``risk``) and, when the
    config asks for it, the risk analysis of the release (docs/design.md §4c; the manifest's
    ``risk_analysis``: `privacy.risk.analysis.RiskSettings.analyse`)."""

    prosecutor_risk_max: float
    prosecutor_risk_avg: float
    share_below_2k: float
    analysis: RiskAnalysis | None = None

    @classmethod
    def of(cls, kept: np.ndarray, min_class_size: int) -> RiskFigures:
        return cls.from_dict(risk(kept, min_class_size))

    def with_analysis(self, analysis: RiskAnalysis) -> RiskFigures:
        return replace(self, analysis=analysis)

    def to_dict(self) -> dict:
        out: dict = {
            "prosecutor_risk_max": self.prosecutor_risk_max,
            "prosecutor_risk_avg": self.prosecutor_risk_avg,
            "share_below_2k": self.share_below_2k,
        }
        if self.analysis is not None:
            out["analysis"] = self.analysis.to_dict()
        return out

    @classmethod
    def from_dict(cls, d: dict) -> RiskFigures:
        return cls(
            d["prosecutor_risk_max"],
            d["prosecutor_risk_avg"],
            d["share_below_2k"],
            RiskAnalysis.from_dict(d["analysis"]) if d.get("analysis") is not None else None,
        )


@dataclass(frozen=True)
class ClassSizeHistogram:
    """Classes per size bin (powers of two: ``"4-7"``), in numeric order (for the report)."""

    bins: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, sizes: np.ndarray) -> ClassSizeHistogram:
        return cls(class_size_histogram(sizes))

    def to_dict(self) -> dict[str, int]:
        return dict(self.bins)

    @classmethod
    def from_dict(cls, d: dict) -> ClassSizeHistogram:
        return cls({str(k): int(v) for k, v in d.items()})

"""Phase 2's decision, typed: the chosen node in its forms, its figures, and one field per
transformation's result (docs/design.md §4): the suppressed classes (suppression), the
local recoding steps (§4f), a DP run's selection (§4e). The search's counters, the policy
it ran under (`PolicyUnder`, one `ModelEntry` per model), the risk figures
(`figures.RiskFigures`), the class size histogram (`figures.ClassSizeHistogram`) and the
quality models' figures (`quality_figures.QualityFigures`) are typed too; each `to_dict` gives
the manifest's entry as it was (same keys, same order).

`to_dict` is what the manifest and the operators' XCom read (small, no data values);
`to_bytes`/`from_bytes` persist it as `decision.json` between phases.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from airflow_skald.core.privacy.at_risk import AtRiskClass
from airflow_skald.core.search.dp_selection import DPSelection
from airflow_skald.core.search.figures import ClassSizeHistogram, NodeFigures, RiskFigures
from airflow_skald.core.search.quality_figures import QualityFigures
from airflow_skald.core.transform.local_recoding.described import RecodingSettings
from airflow_skald.core.transform.local_recoding.steps import Step

if TYPE_CHECKING:
    from airflow_skald.core.privacy import PrivacyPolicy


@dataclass(frozen=True)
class ModelEntry:
    """One privacy model as the policy describes it (`PrivacyModel.describe`): its name (the
    entry's ``model``, always its first key) and its settings, JSON-safe, in their order."""

    model: str
    settings: dict[str, Any]

    def to_dict(self) -> dict:
        return {"model": self.model, **self.settings}

    @classmethod
    def from_dict(cls, d: dict) -> ModelEntry:
        return cls(d["model"], {k: v for k, v in d.items() if k != "model"})


@dataclass(frozen=True)
class PolicyUnder:
    """The privacy policy a node was chosen under: its models and the suppression limit."""

    models: list[ModelEntry]
    suppression_limit: str  # decimal text

    @classmethod
    def of(cls, policy: PrivacyPolicy, suppression_limit: str) -> PolicyUnder:
        return cls([ModelEntry.from_dict(m) for m in policy.describe()], suppression_limit)

    def to_dict(self) -> dict:
        return {
            "models": [m.to_dict() for m in self.models],
            "suppression_limit": self.suppression_limit,
        }

    @classmethod
    def from_dict(cls, d: dict) -> PolicyUnder:
        return cls([ModelEntry.from_dict(m) for m in d["models"]], d["suppression_limit"])


@dataclass(frozen=True)
class LatticeCounts:
    """The search's counters: nodes of the lattice, evaluated, known to pass, pruned."""

    nodes: int
    evaluated: int
    passing: int
    pruned: int
    # the non-empty root bins N_RAM bounds (docs/design.md §4b); None: a DP run's lattice from
    # level 0 (no figure of phase 1's domain, ADR 0027)
    root_bins_nonempty: int | None = None

    def to_dict(self) -> dict:
        out = {
            "nodes": self.nodes,
            "evaluated": self.evaluated,
            "passing": self.passing,
            "pruned": self.pruned,
        }
        if self.root_bins_nonempty is not None:
            out["root_bins_nonempty"] = self.root_bins_nonempty
        return out

    @classmethod
    def from_dict(cls, d: dict) -> LatticeCounts:
        return cls(
            d["nodes"], d["evaluated"], d["passing"], d["pruned"], d.get("root_bins_nonempty")
        )


#: the figures the manifest gives before and after the local recoding steps
RECODING_SHOWN = ("n_suppressed", "n_equivalence_classes", "min_class_size", "dm_star", "dm")


@dataclass(frozen=True)
class RecodingFigures:
    """The release's figures before (the global node alone) or after the steps."""

    n_suppressed: int
    n_equivalence_classes: int
    min_class_size: int
    dm_star: int
    dm: int
    loss: float  # ARX's Loss of the release (`recoded.release_loss`)
    records: int | None = None  # before the steps: every record

    @classmethod
    def of(cls, decision: Decision, loss: float, records: int | None = None) -> RecodingFigures:
        d = decision.to_dict()
        return cls(**{key: d[key] for key in RECODING_SHOWN}, loss=loss, records=records)

    def to_dict(self) -> dict:
        out = {key: getattr(self, key) for key in RECODING_SHOWN}
        if self.records is not None:
            out["records"] = self.records
        return out | {"loss": self.loss}

    @classmethod
    def from_dict(cls, d: dict) -> RecodingFigures:
        return cls(
            **{key: d[key] for key in RECODING_SHOWN}, loss=d["loss"], records=d.get("records")
        )


@dataclass(frozen=True)
class LocalRecoding:
    """Local recoding's result (docs/design.md §4f): its settings, the release's figures
    before and after, and the steps after the global node."""

    settings: RecodingSettings
    before: RecodingFigures
    after: RecodingFigures
    steps: list[Step] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "settings": self.settings.to_dict(),
            "before": self.before.to_dict(),
            "after": self.after.to_dict(),
            "steps": [s.to_dict() for s in self.steps],
        }

    @classmethod
    def from_state(cls, d: dict, step_states: list[dict]) -> LocalRecoding:
        return cls(
            RecodingSettings.from_dict(d["settings"]),
            RecodingFigures.from_dict(d["before"]),
            RecodingFigures.from_dict(d["after"]),
            [Step.from_state(s) for s in step_states],
        )


@dataclass
class Decision:
    """The chosen node, its figures and the privacy settings it was chosen under."""

    node: tuple[int, ...]
    levels: dict[str, int]
    node_paper: str
    radices: tuple[int, ...]
    figures: NodeFigures
    privacy: PolicyUnder
    lattice: LatticeCounts
    risk: RiskFigures  # the kept classes' risk; the risk analysis when asked
    class_size_histogram: ClassSizeHistogram = field(default_factory=ClassSizeHistogram)
    # criteria's most at-risk classes (no values)
    at_risk: list[AtRiskClass] = field(default_factory=list)
    quality: QualityFigures | None = None  # every quality model's score, per-QID table
    # suppression: the node's suppressed classes (sorted keys), whose records phase 3 drops
    suppressed_keys: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    local_recoding: LocalRecoding | None = None
    dp: DPSelection | None = None

    @property
    def precision(self) -> float:
        return self.figures.precision

    @property
    def max_suppressed(self) -> int:
        return self.figures.max_suppressed

    @property
    def steps(self) -> list[Step]:
        """The local recoding steps after this node (none without local recoding)."""
        return self.local_recoding.steps if self.local_recoding is not None else []

    def to_dict(self) -> dict:
        f = self.figures
        return {
            "node": self.levels,
            "node_levels": list(self.node),
            "node_paper": self.node_paper,
            "radices": list(self.radices),
            "privacy": self.privacy.to_dict(),
            "n_records": f.n_records,
            "n_suppressed": f.n_suppressed,
            "max_suppressed": f.max_suppressed,
            "n_equivalence_classes": f.n_classes,
            "min_class_size": f.min_class_size,
            **f.quality,
            "privacy_models": f.privacy,
            "lattice": self.lattice.to_dict(),
            "risk": self.risk.to_dict(),
            "class_size_histogram": self.class_size_histogram.to_dict(),
            "at_risk_classes": [c.to_dict() for c in self.at_risk],
            "quality_models": self.quality.to_dict() if self.quality is not None else {},
            **({"local_recoding": self.local_recoding.to_dict()} if self.local_recoding else {}),
            **({"differential_privacy": self.dp.to_dict()} if self.dp else {}),
        }

    def to_bytes(self) -> bytes:
        body = self.to_dict()
        body["figures"] = self.figures.to_dict()
        body["suppressed_keys"] = self.suppressed_keys.tolist()
        body["step_states"] = [s.to_state() for s in self.steps]
        return json.dumps(body, sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> Decision:
        d = json.loads(data)
        recoding = d.get("local_recoding")
        dp = d.get("differential_privacy")
        return cls(
            node=tuple(d["node_levels"]),
            levels=d["node"],
            node_paper=d["node_paper"],
            radices=tuple(d["radices"]),
            figures=NodeFigures.from_dict(d["figures"]),
            privacy=PolicyUnder.from_dict(d["privacy"]),
            lattice=LatticeCounts.from_dict(d["lattice"]),
            risk=RiskFigures.from_dict(d["risk"]),
            class_size_histogram=ClassSizeHistogram.from_dict(d.get("class_size_histogram", {})),
            at_risk=[AtRiskClass.from_dict(c) for c in d.get("at_risk_classes", [])],
            quality=QualityFigures.from_dict(d["quality_models"])
            if d.get("quality_models")
            else None,
            suppressed_keys=np.asarray(d["suppressed_keys"], dtype=np.int64),
            local_recoding=(
                LocalRecoding.from_state(recoding, d.get("step_states", [])) if recoding else None
            ),
            dp=DPSelection.from_dict(dp) if dp else None,
        )

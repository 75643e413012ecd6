"""t-closeness (SPEC §4b, ARX's Equal/Ordered/HierarchicalDistanceTCloseness): the distribution
of the sensitive attribute in every kept class is within t of its distribution over all input
records. Not monotone with suppression."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from airflow_skald.core.privacy import distributions as S
from airflow_skald.core.privacy.l_diversity import at_risk_classes
from airflow_skald.core.privacy.model import ClassTable, PrivacyModel
from airflow_skald.core.text import decimal_text


@dataclass(frozen=True)
class TCloseness(PrivacyModel):
    attribute: str = field()  # field(): not the base class's None default
    t: Fraction
    distance: str  # equal | ordered | hierarchical
    global_counts: np.ndarray = field(compare=False, repr=False)
    hierarchy: S.EmdHierarchy | None = field(default=None, compare=False, repr=False)
    hierarchy_sha256: str | None = None  # the configured hierarchy's hash (hierarchical only)

    name = "t"
    monotone = False

    def verdict(self, table: ClassTable) -> S.Verdict:
        cv = table.values[self.attribute]
        if self.distance == "equal":
            return S.t_equal(cv, self.global_counts, self.t)
        if self.distance == "ordered":
            return S.t_ordered(cv, self.global_counts, self.t)
        return S.t_hierarchical(cv, self.global_counts, self.t, self.hierarchy)

    def keeps(self, table: ClassTable) -> np.ndarray:
        return self.verdict(table).ok

    def describe(self) -> dict:
        return {
            "model": "t-closeness",
            "attribute": self.attribute,
            "distance": self.distance,
            "t": decimal_text(self.t),
        } | ({"hierarchy_sha256": self.hierarchy_sha256} if self.hierarchy_sha256 else {})

    def figure(self, kept: ClassTable) -> dict:
        if not kept.n_classes:
            return {"max_distance": None}
        return {"max_distance": S.worst_figure("t_closeness", self.verdict(kept).figure)}

    def label(self) -> str:
        return f"{self.distance}-distance t-closeness of '{self.attribute}' (t={self.t})"

    def at_risk(self, kept: ClassTable, top: int = 5) -> list[dict]:
        if not kept.n_classes:
            return []
        return at_risk_classes(self, "t_closeness", kept, self.verdict(kept).figure, top)

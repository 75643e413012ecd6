"""l-diversity (SPEC §4b, ARX's DistinctLDiversity / EntropyLDiversity / RecursiveCLDiversity):
every kept class holds its sensitive attribute's values diversely enough. Distinct l is
monotone with suppression; entropy l and recursive (c,l) are not (ARX: the same)."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from airflow_skald.core.privacy import distributions as S
from airflow_skald.core.privacy.model import ClassTable, PrivacyModel
from airflow_skald.core.text import decimal_text

_FIGURE = {
    "distinct": ("min_distinct", "distinct"),
    "entropy": ("min_entropy_l", "entropy"),
    "recursive": ("max_recursive_ratio", "recursive"),
}


@dataclass(frozen=True)
class LDiversity(PrivacyModel):
    attribute: str = field()  # field(): not the base class's None default
    l: int  # noqa: E741 - the criterion's own name
    variant: str = "distinct"
    c: Fraction | None = None

    name = "l"

    @property
    def monotone(self) -> bool:  # type: ignore[override]
        return self.variant == "distinct"

    def verdict(self, table: ClassTable) -> S.Verdict:
        cv = table.values[self.attribute]
        if self.variant == "distinct":
            return S.distinct_l(cv, self.l)
        if self.variant == "entropy":
            return S.entropy_l(cv, self.l)
        return S.recursive_cl(cv, self.c, self.l)

    def keeps(self, table: ClassTable) -> np.ndarray:
        return self.verdict(table).ok

    def describe(self) -> dict:
        out = {
            "model": f"{self.variant}-l-diversity"
            if self.variant != "recursive"
            else "recursive-cl-diversity",
            "attribute": self.attribute,
            "l": self.l,
        }
        if self.c is not None:
            out["c"] = decimal_text(self.c)
        return out

    def figure(self, kept: ClassTable) -> dict:
        key, kind = _FIGURE[self.variant]
        if not kept.n_classes:
            return {key: None}
        return {key: S.worst_figure(kind, self.verdict(kept).figure)}

    def label(self) -> str:
        c = f", c={self.c}" if self.c is not None else ""
        return f"{self.variant} l-diversity of '{self.attribute}' (l={self.l}{c})"

    def at_risk(self, kept: ClassTable, top: int = 5) -> list[dict]:
        if not kept.n_classes:
            return []
        return at_risk_classes(self, _FIGURE[self.variant][1], kept, self.verdict(kept).figure, top)


def at_risk_classes(
    model: PrivacyModel, kind: str, kept: ClassTable, figure: np.ndarray, top: int
) -> list[dict]:
    """`top` kept classes with the worst `figure`, as sizes and ranked value counts."""
    cv = kept.values[model.attribute]
    out = []
    for i in S.most_at_risk(kind, figure, None, top).tolist():
        counts = sorted(cv.distribution(i).values(), reverse=True)
        out.append(
            {
                "model": model.describe()["model"],
                "attribute": model.attribute,
                "size": int(kept.sizes[i]),
                "figure": int(figure[i]) if figure.dtype.kind in "iu" else float(figure[i]),
                "distribution": {f"value #{r + 1}": int(c) for r, c in enumerate(counts)},
            }
        )
    return out

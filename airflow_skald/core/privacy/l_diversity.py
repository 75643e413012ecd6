"""l-diversity (Machanavajjhala et al. 2007; docs/design.md §4b, ARX's ``DistinctLDiversity`` /
``EntropyLDiversity`` / ``RecursiveCLDiversity``): every kept class holds its sensitive attribute's
values diversely enough. Distinct l is monotone with suppression; entropy l and recursive (c,l) are
not (ARX: the same). Entropy l estimates the entropy as Shannon (ARX's default) or Grassberger
(`estimator: grassberger`, ARX's `EntropyEstimator.GRASSBERGER`, distributions/grassberger.py)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

import numpy as np

from airflow_skald.core.errors import ConfigError
from airflow_skald.core.privacy import distributions as S
from airflow_skald.core.privacy.at_risk import AtRiskClass
from airflow_skald.core.privacy.distributions.grassberger import (
    ESTIMATORS,
    entropy_l_grassberger,
)
from airflow_skald.core.privacy.model import (
    ClassTable,
    ParseContext,
    PrivacyModel,
    RebuildContext,
    decimal_of,
    is_column,
    is_int,
)
from airflow_skald.core.settings.parse import choice, criteria_list, no_repeats, no_unknown
from airflow_skald.core.settings.table import BY_NAME
from airflow_skald.core.text import decimal_text, rank_names

VARIANTS = ("distinct", "entropy", "recursive")


def entropy_floor(sizes: np.ndarray, figure: np.ndarray, ell: int) -> float:
    """A lower bound of the records entropy l-diversity suppresses at a node and at every
    node below it: the sum over classes of entropy H < ln l of n (1 - H / ln l) (`figure` is
    exp(H); ADR 0011).

    Entropy is concave and never negative: a class split into finer classes, the share w of
    its records in parts of entropy >= ln l, has H >= w ln l, so at least n (1 - H / ln l) of
    its records are in parts that fail; and merging classes never raises the sum ((1 - H /
    ln l)+ is convex and decreasing, the merged entropy at least the parts' mean). Computed
    with a margin, never above the exact bound."""
    if ell < 2 or figure.size == 0:
        return 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        shortfall = 1 - (np.log(figure) + S.FLOOR_MARGIN) / math.log(ell)
    return S.suppression_floor(sizes, shortfall)


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
    estimator: str = "shannon"

    name = "l"
    config_key = "l_diversity"
    thresholds = ("l", "c", "entropy_estimator")
    manifest_models = (
        "distinct-l-diversity",
        "entropy-l-diversity",
        "recursive-cl-diversity",
    )
    with_research_subset = True  # the subset's records of each class, as ARX (ADR 0045)

    @classmethod
    def parse(cls, raw: Any, ctx: ParseContext) -> tuple[PrivacyModel, ...]:
        out = []
        for at, item in criteria_list(raw, "l_diversity", list(ctx.sensitive)):
            no_unknown(item, {"attribute", "l", "variant", "c", "estimator"}, at)
            if "l" not in item:
                raise ConfigError(f"{at} needs 'l'")
            variant = choice(item.get("variant", "distinct"), VARIANTS, f"{at}.variant")
            ell = BY_NAME["l"].parse(item["l"], f"{at}.l")
            c = None
            if variant == "recursive":
                if "c" not in item:
                    raise ConfigError(f"{at}: recursive (c,l)-diversity needs 'c'")
                c = BY_NAME["c"].parse(item["c"], f"{at}.c")
            elif "c" in item:
                raise ConfigError(f"{at}: 'c' applies to variant recursive only")
            estimator = "shannon"
            if "estimator" in item:
                if variant != "entropy":
                    raise ConfigError(f"{at}: 'estimator' applies to variant entropy only")
                estimator = BY_NAME["entropy_estimator"].parse(item["estimator"], f"{at}.estimator")
            out.append(cls(item["attribute"], ell, variant, c, estimator))
        no_repeats(out, "l_diversity", lambda c: (c.attribute, c.variant))
        return tuple(out)

    def settings_entry(self) -> dict:
        out: dict[str, Any] = {"attribute": self.attribute, "variant": self.variant, "l": self.l}
        if self.c is not None:
            out["c"] = decimal_text(self.c)
        if self.estimator != "shannon":
            out["estimator"] = self.estimator
        return out

    def with_threshold(self, key: str, value: Any) -> PrivacyModel:
        if key == "c" and self.variant != "recursive":
            raise ConfigError("c applies to recursive (c,l)-diversity only")
        if key == "entropy_estimator":
            if self.variant != "entropy":
                raise ConfigError("entropy_estimator applies to entropy l-diversity only")
            return replace(self, estimator=value)
        return replace(self, **{key: value})

    def bind(self, sensitive: Mapping[str, Any], where: str) -> PrivacyModel:
        stats = sensitive[self.attribute]
        if self.l > stats.m:
            raise ConfigError(
                f"{where}: l={self.l} but '{self.attribute}' has only "
                f"{stats.m} distinct value(s) in the input"
            )
        return self

    @classmethod
    def check_entry(cls, entry: dict) -> str | None:
        if not is_column(entry.get("attribute")):
            return ".attribute must be a column name"
        if not is_int(entry.get("l"), 2):
            return ".l must be an integer >= 2"
        recursive = entry["model"] == "recursive-cl-diversity"
        if recursive != ("c" in entry):
            return ": c goes with recursive (c,l)-diversity, and only with it"
        c = decimal_of(entry["c"]) if recursive else 1
        if c is None or c <= 0:
            return ".c must be a number > 0"
        if entry.get("estimator", "shannon") not in ESTIMATORS or (
            "estimator" in entry and entry["model"] != "entropy-l-diversity"
        ):
            return f".estimator must be one of {', '.join(ESTIMATORS)}, of entropy l only"
        return None

    @classmethod
    def rebuild(cls, entry: dict, ctx: RebuildContext) -> PrivacyModel | str:
        name = entry["model"]
        variant = "recursive" if name.startswith("recursive") else name.split("-")[0]
        c = Fraction(entry["c"]) if "c" in entry else None
        estimator = entry.get("estimator", "shannon")
        return cls(entry["attribute"], int(entry["l"]), variant, c, estimator)

    @property
    def monotone(self) -> bool:  # type: ignore[override]
        return self.variant == "distinct"

    @property
    def smallest_kept(self) -> int:
        """l: every variant needs at least l distinct values, so at least l records."""
        return max(1, int(self.l))

    def verdict(self, table: ClassTable) -> S.Verdict:
        cv = table.values[self.attribute]
        if self.variant == "distinct":
            return S.distinct_l(cv, self.l)
        if self.variant == "entropy" and self.estimator == "grassberger":
            return entropy_l_grassberger(cv, self.l)
        if self.variant == "entropy":
            return S.entropy_l(cv, self.l)
        return S.recursive_cl(cv, self.c, self.l)

    def keeps(self, table: ClassTable) -> np.ndarray:
        return self.verdict(table).ok

    def judged(self, table: ClassTable) -> tuple[np.ndarray, float]:
        verdict = self.verdict(table)
        if self.variant != "entropy" or self.estimator != "shannon":
            return verdict.ok, 0.0  # Grassberger's estimate is not concave: no floor
        return verdict.ok, entropy_floor(table.sizes, verdict.figure, self.l)

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
        if self.estimator != "shannon":
            out["estimator"] = self.estimator
        return out

    def figure(self, kept: ClassTable) -> dict:
        key, kind = _FIGURE[self.variant]
        if not kept.n_classes:
            return {key: None}
        return {key: S.worst_figure(kind, self.verdict(kept).figure)}

    def label(self) -> str:
        c = f", c={self.c}" if self.c is not None else ""
        if self.estimator != "shannon":
            c += f", {self.estimator} estimator"
        return f"{self.variant} l-diversity of '{self.attribute}' (l={self.l}{c})"

    def at_risk(self, kept: ClassTable, top: int = 5) -> list[AtRiskClass]:
        if not kept.n_classes:
            return []
        return at_risk_classes(self, _FIGURE[self.variant][1], kept, self.verdict(kept).figure, top)


def at_risk_classes(
    model: PrivacyModel, kind: str, kept: ClassTable, figure: np.ndarray, top: int
) -> list[AtRiskClass]:
    """`top` kept classes with the worst `figure`, as sizes and ranked value counts."""
    cv = kept.values[model.attribute]
    out = []
    for i in S.most_at_risk(kind, figure, None, top).tolist():
        counts = sorted(cv.distribution(i).values(), reverse=True)
        out.append(
            AtRiskClass(
                model.describe()["model"],
                model.attribute,
                int(kept.sizes[i]),
                int(figure[i]) if figure.dtype.kind in "iu" else float(figure[i]),
                ranked_counts(counts),
            )
        )
    return out


def ranked_counts(counts: list[int]) -> dict[str, int]:
    """``{"value #01": 12, "value #02": 7, ...}``: ranks zero-padded to one width, so the
    keys' text order (a JSON writer's sort_keys, a report's table) is the frequency order."""
    return dict(zip(rank_names(len(counts)), map(int, counts), strict=True))

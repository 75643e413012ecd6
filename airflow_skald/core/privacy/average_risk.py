"""Average re-identification risk (docs/design.md §4c, ARX's ``AverageReidentificationRisk``): over the
n records in C classes left, C / n <= max; optionally, with a highest risk h, the records in
classes smaller than ARX's size threshold of h are at most `records_at_risk` * n. Sample-based;
C / n alone is monotone with suppression and generalisation, the records-at-risk share is not
(classes of 6, 9, 23 and 36 records with 6 suppressed leave 9 of 68 at risk under a threshold of
20; merging the 6 and the 9 puts 15 of 74 at risk, over 0.2, and 15 records do not fit a limit
of 7), so with `highest` every node the monotone part lets through is evaluated."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from airflow_skald.core.errors import ConfigError
from airflow_skald.core.privacy.model import ClassTable, ParseContext, PrivacyModel
from airflow_skald.core.privacy.sample_based import (
    SampleBasedModel,
    fraction_of,
    fraction_setting,
    ratio_at_most,
    suffix_counts,
)
from airflow_skald.core.settings.parse import mapping, no_unknown
from airflow_skald.core.text import decimal_text

RELATIVE_THRESHOLD_PRECISION = Fraction(1, 100)  # ARX's ParameterTranslation


def size_threshold(highest: Fraction) -> int:
    """ARX's ParameterTranslation.getSizeThreshold, exactly: floor(1/h), plus one when the
    risk of that size exceeds h by 1 % of h or more."""
    size = 1 / Fraction(highest)
    floor = math.floor(size)
    if Fraction(1, floor) - Fraction(highest) >= RELATIVE_THRESHOLD_PRECISION * highest:
        floor += 1
    return floor


@dataclass(frozen=True)
class AverageRisk(SampleBasedModel):
    max: Fraction
    highest: Fraction | None = None
    records_at_risk: Fraction | None = None

    name = "average_risk"
    config_key = "average_risk"
    thresholds = ("average_risk",)
    manifest_models = ("average-risk",)

    @property
    def monotone(self) -> bool:  # type: ignore[override]
        return self.highest is None

    @classmethod
    def parse(cls, raw: Any, ctx: ParseContext) -> tuple[PrivacyModel, ...]:
        if raw is None:
            return ()
        where = "privacy.average_risk"
        raw = mapping(raw, where)
        no_unknown(raw, {"max", "highest", "records_at_risk"}, where)
        top = fraction_setting(raw, "max", "average_risk", where)
        if ("highest" in raw) != ("records_at_risk" in raw):
            raise ConfigError(f"{where}: 'highest' and 'records_at_risk' go together")
        if "highest" not in raw:
            return (cls(top),)
        highest = fraction_setting(raw, "highest", "average_risk", where)
        share = fraction_setting(raw, "records_at_risk", "average_risk", where)
        return (cls(top, highest, share),)

    @classmethod
    def settings_value(cls, models: tuple[PrivacyModel, ...]) -> Any:
        return models[0].settings_entry() if models else None

    def with_threshold(self, key: str, value: Any) -> PrivacyModel:
        return AverageRisk(value, self.highest, self.records_at_risk)

    @property
    def smallest_size(self) -> int | None:
        return None if self.highest is None else size_threshold(self.highest)

    def holds(self, sizes: np.ndarray, prefixes: np.ndarray) -> np.ndarray:
        classes, records = suffix_counts(sizes, prefixes)
        ok = ratio_at_most(classes, records, self.max)
        if self.highest is not None:
            small = np.where(sizes < self.smallest_size, sizes, 0)
            cum = np.r_[0, np.cumsum(small, dtype=np.int64)]
            at_risk = cum[-1] - cum[prefixes]
            ok &= ratio_at_most(at_risk, records, self.records_at_risk)
        return ok

    def describe(self) -> dict:
        out = {"model": "average-risk", "max": decimal_text(self.max)}
        if self.highest is not None:
            out["highest"] = decimal_text(self.highest)
            out["records_at_risk"] = decimal_text(self.records_at_risk)
        return out

    def figure(self, kept: ClassTable) -> dict:
        n = kept.n_records
        out = {"average_risk": kept.n_classes / n if n else 0.0}
        if self.highest is not None:
            small = kept.sizes[kept.sizes < self.smallest_size].sum()
            out["records_at_risk_share"] = float(small) / n if n else 0.0
        return out

    @classmethod
    def check_entry(cls, entry: dict) -> str | None:
        if not fraction_of(entry, "max"):
            return ".max must be a number in (0, 1]"
        if "highest" in entry and not (
            fraction_of(entry, "highest") and fraction_of(entry, "records_at_risk")
        ):
            return ".highest and .records_at_risk must be numbers in (0, 1]"
        return None

    @classmethod
    def rebuild(cls, entry: dict, ctx: Any) -> PrivacyModel | str:
        if "highest" not in entry:
            return cls(Fraction(entry["max"]))
        return cls(
            Fraction(entry["max"]), Fraction(entry["highest"]), Fraction(entry["records_at_risk"])
        )

    def label(self) -> str:
        return f"average risk <= {decimal_text(self.max)}"

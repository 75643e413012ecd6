"""Sample uniqueness (docs/design.md §4c, ARX's ``SampleUniqueness``): the records alone in their class
are at most `max` of the n records left. Sample-based, monotone with suppression and
generalisation."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

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


@dataclass(frozen=True)
class SampleUniqueness(SampleBasedModel):
    max: Fraction

    name = "sample_uniqueness"
    config_key = "sample_uniqueness"
    thresholds = ("sample_uniqueness",)
    manifest_models = ("sample-uniqueness",)
    monotone = True

    @classmethod
    def parse(cls, raw: Any, ctx: ParseContext) -> tuple[PrivacyModel, ...]:
        if raw is None:
            return ()
        where = "privacy.sample_uniqueness"
        raw = mapping(raw, where)
        no_unknown(raw, {"max"}, where)
        return (cls(fraction_setting(raw, "max", "sample_uniqueness", where)),)

    @classmethod
    def settings_value(cls, models: tuple[PrivacyModel, ...]) -> Any:
        return models[0].settings_entry() if models else None

    def with_threshold(self, key: str, value: Any) -> PrivacyModel:
        return SampleUniqueness(value)

    def holds(self, sizes: np.ndarray, prefixes: np.ndarray) -> np.ndarray:
        _, records = suffix_counts(sizes, prefixes)
        ones = np.count_nonzero(sizes == 1)
        uniques = np.maximum(ones - prefixes, 0)  # sizes ascending: the uniques come first
        return ratio_at_most(uniques, records, self.max)

    def describe(self) -> dict:
        return {"model": "sample-uniqueness", "max": decimal_text(self.max)}

    def figure(self, kept: ClassTable) -> dict:
        n = kept.n_records
        return {"sample_uniques": int(np.count_nonzero(kept.sizes == 1)) / n if n else 0.0}

    @classmethod
    def check_entry(cls, entry: dict) -> str | None:
        return None if fraction_of(entry, "max") else ".max must be a number in (0, 1]"

    @classmethod
    def rebuild(cls, entry: dict, ctx: Any) -> PrivacyModel | str:
        return cls(Fraction(entry["max"]))

    def label(self) -> str:
        return f"sample uniqueness <= {decimal_text(self.max)}"

"""k-anonymity (Sweeney 2002, "k-anonymity: a model for protecting privacy"; ARX's ``KAnonymity``):
every kept class has at least k records (monotone with suppression)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from airflow_skald.core.privacy.model import ClassTable, ParseContext, PrivacyModel, is_int
from airflow_skald.core.settings.table import BY_NAME


@dataclass(frozen=True)
class KAnonymity(PrivacyModel):
    k: int

    name = "k"
    config_key = "k"
    thresholds = ("k",)
    manifest_models = ("k-anonymity",)
    monotone = True
    attribute = None
    with_research_subset = True
    with_differential_privacy = True  # a larger k than SafePub's: δ only falls as k grows
    by_size = True

    @classmethod
    def parse(cls, raw: Any, ctx: ParseContext) -> tuple[PrivacyModel, ...]:
        if raw is None:
            return ()  # optional when another model is configured (registry.parse_models)
        return (cls(BY_NAME["k"].parse(raw)),)

    @classmethod
    def settings_value(cls, models: tuple[PrivacyModel, ...]) -> Any:
        return models[0].k if models else None

    @classmethod
    def check_entry(cls, entry: dict) -> str | None:
        if "k" in entry and not is_int(entry["k"], 2):
            return ".k must be an integer >= 2"
        return None

    @classmethod
    def rebuild(cls, entry: dict, ctx: Any) -> PrivacyModel | str:
        return cls(int(entry["k"]))

    @property
    def min_class_size(self) -> int:
        return self.k

    def keeps(self, table: ClassTable) -> np.ndarray:
        return table.sizes >= self.k

    def describe(self) -> dict:
        return {"model": "k-anonymity", "k": self.k}

    def figure(self, kept: ClassTable) -> dict:
        return {"min_class_size": int(kept.sizes.min()) if kept.n_classes else 0}

    def violation(self, table: ClassTable, where: str) -> str | None:
        small = table.sizes[table.sizes < self.k]
        if not small.size:
            return None
        return (
            f"{where} is not {self.k}-anonymous: {small.size} class(es) smaller than k "
            f"(smallest has {int(small.min())} record(s))"
        )

    def label(self) -> str:
        return f"k={self.k}"

"""k-anonymity: every kept class has at least k records (monotone with suppression)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from airflow_skald.core.privacy.model import ClassTable, PrivacyModel


@dataclass(frozen=True)
class KAnonymity(PrivacyModel):
    k: int

    name = "k"
    monotone = True
    attribute = None

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

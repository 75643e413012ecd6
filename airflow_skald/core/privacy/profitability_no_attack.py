"""ARX's game-theoretic privacy model without an attack (``ProfitabilityProsecutorNoAttack``,
``ProfitabilityJournalistNoAttack``, ADR 0046): no class gives the adversary a reason to attack,
gain / size - cost <= 0, i.e. every kept class has at least k = the smallest integer above
gain / cost records (1 without gain); the prosecutor counts the class's records
(k-anonymity), the journalist the class's population records (exact k-map against the research
subset's population table). `privacy.profitability: {attack: false, ...}`. Class-based and
monotone."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from airflow_skald.core.privacy.delta_presence import NO_POPULATION, population_of_table
from airflow_skald.core.privacy.model import ClassTable, PrivacyModel
from airflow_skald.core.privacy.profitability_settings import (
    ProfitabilityEntry,
    ProfitabilitySettings,
)


@dataclass(frozen=True)
class ProfitabilityNoAttack(ProfitabilityEntry, PrivacyModel):  # type: ignore[misc]
    settings: ProfitabilitySettings

    manifest_models = ("profitability-no-attack",)
    monotone = True
    with_attack = False

    @property
    def journalist(self) -> bool:
        return self.settings.attacker == "journalist"

    @property
    def k(self) -> int:
        return self.settings.cost.no_attack_k()

    @property
    def min_class_size(self) -> int:
        """ARX's getMinimalClassSize: k for the prosecutor, none for the journalist."""
        return 1 if self.journalist else self.k

    def _counts(self, table: ClassTable) -> np.ndarray:
        if self.journalist:
            return population_of_table(table, "profitability without attack (journalist)")
        return table.sizes

    def keeps(self, table: ClassTable) -> np.ndarray:
        return self._counts(table) >= self.k

    def violation(self, table: ClassTable, where: str) -> str | None:
        if self.journalist and table.population is None:  # a written release
            return None
        return super().violation(table, where)

    def describe(self) -> dict:
        return {"model": "profitability-no-attack", "k": self.k, **self.settings.entry()}

    def figure(self, kept: ClassTable) -> dict:
        if not kept.n_classes or (self.journalist and kept.population is None):
            return {"min_count": 0}
        return {"min_count": int(self._counts(kept).min())}

    @classmethod
    def rebuild(cls, entry: dict, ctx: Any) -> PrivacyModel | str:
        model = cls(ProfitabilitySettings.rebuilt(entry))
        if model.journalist and not getattr(ctx, "population", False):
            return NO_POPULATION.format(what="profitability (journalist) counts each class in")
        return model

    def label(self) -> str:
        return self.settings.label(f"no-attack profitability, k={self.k}")

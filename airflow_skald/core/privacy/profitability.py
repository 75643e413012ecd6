"""ARX's game-theoretic privacy model with an attacker (``ProfitabilityProsecutor``,
``ProfitabilityJournalist``; Wan et al., ADR 0046): a class is kept iff the publisher's
expected payout per record is > 0: benefit x (1 - its entropy-based information loss), less
the publisher's loss x the adversary's success probability where attacking pays the adversary
(gain x success - cost > 0). Success is 1 / the class's records (prosecutor) or 1 / the
population records of the class (journalist, with a research subset: ARX's ``pcount``).
Class-based and not monotone: generalising lowers the adversary's success and the benefit.

The classes' losses come with the node's classes (`ClassTable.label_loss`: the search
computes them from the classes' keys, `quality.entropy_loss`); a written release holds no
domain shares, so `skald verify` names this model as not re-checked. The SQL engines run it
unchanged: the losses come from the root histogram's keys and the hierarchies, the journalist's
population records from the engine's counts of the research subset (ADR 0068).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from airflow_skald.core.privacy.delta_presence import population_of_table
from airflow_skald.core.privacy.model import ClassTable, PrivacyModel
from airflow_skald.core.privacy.profitability_settings import (
    ProfitabilityEntry,
    ProfitabilitySettings,
)

NOT_FROM_RELEASE = (
    "not re-checked from the release: profitability weighs each class by its labels' domain "
    "shares in the hierarchies (the run judged it; `skald audit CONFIG` judges it again)"
)


def success_probability(table: ClassTable, journalist: bool) -> np.ndarray:
    """The adversary's success per class: 1 / records, or 1 / population records
    (journalist; a class without them: 1 / records, as ARX)."""
    sizes = table.sizes.astype(np.float64)
    if not journalist:
        return 1.0 / sizes
    pop = population_of_table(table, "profitability (journalist)").astype(np.float64)
    with np.errstate(divide="ignore"):
        return np.where(pop == 0, 1.0 / sizes, 1.0 / pop)


@dataclass(frozen=True)
class Profitability(ProfitabilityEntry, PrivacyModel):  # type: ignore[misc]
    settings: ProfitabilitySettings

    manifest_models = ("profitability",)
    monotone = False
    reads_label_loss = True

    def payout(self, table: ClassTable) -> np.ndarray:
        """Each class's expected publisher payout per record."""
        if table.label_loss is None:
            raise ValueError("profitability needs each class's information loss (label_loss)")
        journalist = self.settings.attacker == "journalist"
        return self.settings.cost.payout(table.label_loss, success_probability(table, journalist))

    def keeps(self, table: ClassTable) -> np.ndarray:
        return (table.sizes > 0) & (self.payout(table) > 0)

    @property
    def smallest_kept(self) -> int:
        """The prosecutor keeps no class of fewer records than the cost/benefit allows at
        loss 0 (`CostBenefit.smallest_keepable`): k-anonymity at that size is the monotone
        part the search tags on. The journalist's is on population counts (`judged`)."""
        return 1 if self.population_based else self.settings.cost.smallest_keepable()

    def judged(self, table: ClassTable) -> tuple[np.ndarray, float]:
        """With the journalist, the subset records of classes with fewer population records
        than the cost/benefit allows at loss 0: suppressed here and at every finer node (a
        class's population records only fall as classes split)."""
        keeps = self.keeps(table)
        if not self.population_based:
            return keeps, 0.0
        few = population_of_table(table, "profitability") < self.settings.cost.smallest_keepable()
        return keeps, float(table.sizes[few].sum(dtype=np.int64))

    def violation(self, table: ClassTable, where: str) -> str | None:
        if table.label_loss is None:  # a written release: no domain shares in it
            return None
        return super().violation(table, where)

    def describe(self) -> dict:
        return {"model": "profitability", **self.settings.entry()}

    def figure(self, kept: ClassTable) -> dict:
        if kept.label_loss is None:  # a written release: not recomputed from it
            return {}
        if not kept.n_classes:
            return {"publisher_payout": 0.0}
        records = kept.sizes.astype(np.float64)
        return {"publisher_payout": float(np.dot(records, self.payout(kept)))}

    @classmethod
    def rebuild(cls, entry: dict, ctx: Any) -> PrivacyModel | str:
        return NOT_FROM_RELEASE

    def label(self) -> str:
        return self.settings.label("profitability")

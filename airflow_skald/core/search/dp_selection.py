"""A DP run's part of the decision (docs/design.md §4e; the manifest's
``differential_privacy``): the model's parameters as it describes them (`DPModelEntry`) and
the node's selection over the sample (`DPSelection`). Each `to_dict` gives the entry as it
was: same keys, same order (the manifest is written unsorted)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class DPModelEntry:
    """The DP model's entry (`DifferentialPrivacy.describe` without ``model``): ε and δ, the
    search's budget and steps (searched) or the fixed node, and the k, β and ε they give."""

    epsilon: float
    delta: float
    k: int
    beta: float
    epsilon_anonymisation: float
    search_budget: float | None = None  # searched
    search_steps: int | None = None  # searched
    epsilon_per_step: float | None = None  # searched
    node: dict[str, int] | None = None  # fixed: the configured node, per QID

    @property
    def searched(self) -> bool:
        return self.node is None

    @classmethod
    def of(cls, model: Any) -> DPModelEntry:
        """The entry of a `privacy.differential_privacy.DifferentialPrivacy`."""
        return cls.from_dict(model.describe())

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"epsilon": self.epsilon, "delta": self.delta}
        if self.searched:
            out |= {"search_budget": self.search_budget, "search_steps": self.search_steps}
        else:
            out["node"] = self.node
        out |= {"k": self.k, "beta": self.beta, "epsilon_anonymisation": self.epsilon_anonymisation}
        if self.searched:
            out["epsilon_per_step"] = self.epsilon_per_step
        return out

    @classmethod
    def from_dict(cls, d: dict) -> DPModelEntry:
        """From the model's entry, or a selection's (whose ``node`` is the released one:
        a searched entry, which names a search budget, has no node of its own)."""
        searched = "search_budget" in d
        return cls(
            d["epsilon"],
            d["delta"],
            d["k"],
            d["beta"],
            d["epsilon_anonymisation"],
            d.get("search_budget"),
            d.get("search_steps"),
            d.get("epsilon_per_step"),
            None if searched else d["node"],
        )


@dataclass(frozen=True)
class DPSelection:
    """A DP run's parameters and its node's selection over the sample (docs/design.md §4e)."""

    parameters: DPModelEntry  # the model's entry (epsilon, delta, k, ...; a fixed node's `node`)
    mode: str  # "fixed" or "searched"
    node: dict[str, int]  # the released node, per QID
    records_input: int
    records_sampled: int
    records_released: int
    composition: str
    objective: str | None = None  # searched: the score function (never the score itself)
    pivots_drawn: int | None = None  # searched: SafePub's steps drawn
    objective_chosen: str | None = None  # searched with no objective named: why this one

    @property
    def records_suppressed(self) -> int:
        return self.records_input - self.records_released

    def to_dict(self) -> dict:
        search: dict = {"mode": self.mode}
        if self.objective_chosen is not None:
            search["objective_chosen"] = self.objective_chosen
        if self.objective is not None:
            search |= {"objective": self.objective, "pivots_drawn": self.pivots_drawn}
        return {
            **self.parameters.to_dict(),
            **search,
            "node": self.node,
            "records_input": self.records_input,
            "records_sampled": self.records_sampled,
            "records_released": self.records_released,
            "records_suppressed": self.records_suppressed,
            "composition": self.composition,
        }

    @classmethod
    def from_dict(cls, d: dict) -> DPSelection:
        return cls(
            DPModelEntry.from_dict(d),
            d["mode"],
            d["node"],
            d["records_input"],
            d["records_sampled"],
            d["records_released"],
            d["composition"],
            d.get("objective"),
            d.get("pivots_drawn"),
            d.get("objective_chosen"),
        )

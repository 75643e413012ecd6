"""A kept class close to breaking a criterion on a sensitive attribute (the manifest's
``at_risk_classes``; `PrivacyModel.at_risk`): its size, its figure and the counts of its
sensitive values by rank (most frequent first), never a value."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AtRiskClass:
    """One kept class of the criterion `model` on `attribute`."""

    model: str
    attribute: str | None
    size: int
    figure: int | float
    distribution: dict[str, int]  # "value #01" -> records, most frequent first

    def to_dict(self) -> dict:
        return {
            "model": self.model,
            "attribute": self.attribute,
            "size": self.size,
            "figure": self.figure,
            "distribution": dict(self.distribution),
        }

    @classmethod
    def from_dict(cls, d: dict) -> AtRiskClass:
        return cls(d["model"], d["attribute"], d["size"], d["figure"], dict(d["distribution"]))

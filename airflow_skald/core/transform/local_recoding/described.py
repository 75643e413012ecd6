"""Local recoding's settings as the run describes them (decimal text): the settings' entry
``transformation.local_recoding`` (the config hash) and the manifest's
``local_recoding.settings`` (`search.decision.LocalRecoding`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RecodingSettings:
    """The fast mode's records, gs factor and steps; the adaptive mode's gs factor, steps and
    adaption factor (`LocalRecoding.described`)."""

    mode: str
    gs_factor: str | None
    max_steps: int | None
    records: str | None = None  # fast
    adaption_factor: str | None = None  # adaptive

    @property
    def adaptive(self) -> bool:
        return self.mode == "adaptive"

    def to_dict(self) -> dict:
        if not self.adaptive:  # as before the adaptive mode (the settings' hash unchanged)
            return {
                "records": self.records,
                "gs_factor": self.gs_factor,
                "max_steps": self.max_steps,
            }
        return {
            "mode": self.mode,
            "gs_factor": self.gs_factor,
            "max_steps": self.max_steps,
            "adaption_factor": self.adaption_factor,
        }

    @classmethod
    def from_dict(cls, d: dict) -> RecodingSettings:
        return cls(
            d.get("mode", "fast"),
            d.get("gs_factor"),
            d.get("max_steps"),
            d.get("records"),
            d.get("adaption_factor"),
        )

"""`transformation:` of the config (docs/design.md §4f) as validated values: a leaf module, so the config
reads it without importing the transformations (`core.transform`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from airflow_skald.core.errors import ConfigError
from airflow_skald.core.text import decimal_text

#: the models ARX allows with local recoding (``PrivacyCriterion.isLocalRecodingSupported``)
SUPPORTED = ("k", "l", "t", "b_likeness", "d_disclosure", "average_risk", "k_map")


@dataclass(frozen=True)
class LocalRecodingSettings:
    """`transformation.local_recoding` of the config, validated (records in (0, 1])."""

    records: Fraction
    gs_factor: Fraction | None = None
    max_steps: int | None = None

    def describe(self) -> dict:
        return {
            "records": decimal_text(self.records),
            "gs_factor": None if self.gs_factor is None else decimal_text(self.gs_factor),
            "max_steps": self.max_steps,
        }

    def at_least(self, n_records: int) -> Fraction:
        """The records every step must release: records * N (a fraction of all records)."""
        return self.records * n_records

    def step_limit(self, n_records: int, remaining: int) -> Fraction:
        """The suppression limit of a step over `remaining` records: 1 - records * N / R,
        clamped to [0, 1] (exact)."""
        limit = 1 - self.at_least(n_records) / remaining
        return min(Fraction(1), max(Fraction(0), limit))


def check_models(models: Sequence[Any]) -> None:
    """Only the models ARX recodes locally; the first other one refused in one line."""
    for m in models:
        if m.name not in SUPPORTED:
            raise ConfigError(
                f"transformation.local_recoding does not apply with privacy.{m.config_key} "
                "(ARX allows it with k, l, t, b-likeness, d-disclosure, average risk and "
                "estimated k-map only)"
            )

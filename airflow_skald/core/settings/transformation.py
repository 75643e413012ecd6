"""`transformation:` of the config (docs/design.md §4f) as validated values: a leaf module, so the config
reads it without importing the transformations (`core.transform`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from airflow_skald.core.errors import ConfigError
from airflow_skald.core.settings.setting import (
    SHARE,
    ZERO_TO_ONE,
    Setting,
    choice_setting,
    decimal_setting,
    integer_setting,
)
from airflow_skald.core.text import decimal_text

#: the models ARX allows with local recoding (``PrivacyCriterion.isLocalRecodingSupported``)
SUPPORTED = ("k", "l", "t", "b_likeness", "d_disclosure", "average_risk", "k_map")


#: `transformation.local_recoding.mode`: ARX's optimizeIterativeFast and optimizeIterative
MODES = ("fast", "adaptive")
#: the adaptive mode's adaption factor when the config gives none (ARX's GUI default)
ADAPTION_DEFAULT = Fraction(1, 20)


@dataclass(frozen=True)
class LocalRecodingSettings:
    """`transformation.local_recoding` of the config, validated. ``fast`` (ARX's
    ``optimizeIterativeFast``): records in (0, 1]; ``adaptive`` (ARX's ``optimizeIterative``,
    docs/adr/0048): no records, each step under the run's suppression limit, the gs factor
    raised by `adaption_factor` after a search that released nothing."""

    records: Fraction | None
    gs_factor: Fraction | None = None
    max_steps: int | None = None
    mode: str = "fast"
    adaption_factor: Fraction | None = None

    @property
    def adaptive(self) -> bool:
        return self.mode == "adaptive"

    def describe(self) -> dict:
        gs = None if self.gs_factor is None else decimal_text(self.gs_factor)
        if not self.adaptive:  # as before the adaptive mode (the settings' hash unchanged)
            return {
                "records": decimal_text(self.records),
                "gs_factor": gs,
                "max_steps": self.max_steps,
            }
        return {
            "mode": self.mode,
            "gs_factor": gs,
            "max_steps": self.max_steps,
            "adaption_factor": decimal_text(self.adaption),
        }

    @property
    def adaption(self) -> Fraction:
        """The adaptive mode's adaption factor (ARX's GUI default 0.05 when not given)."""
        return ADAPTION_DEFAULT if self.adaption_factor is None else self.adaption_factor

    def at_least(self, n_records: int) -> Fraction:
        """The records every step must release: records * N (a fraction of all records)."""
        return self.records * n_records

    def step_limit(self, n_records: int, remaining: int, run_limit: Fraction) -> Fraction:
        """The suppression limit of a step over `remaining` records: 1 - records * N / R,
        clamped to [0, 1] (exact); adaptive: the run's (`run_limit`, as ARX's ``optimize``
        keeps the configuration's)."""
        if self.adaptive:
            return run_limit
        limit = 1 - self.at_least(n_records) / remaining
        return min(Fraction(1), max(Fraction(0), limit))


def check_mode(settings: LocalRecodingSettings) -> None:
    """`records` belongs to the fast mode, `adaption_factor` to the adaptive one."""
    if settings.adaptive and settings.records is not None:
        raise ConfigError(
            "transformation.local_recoding.records does not apply with mode adaptive (each step "
            "runs under the run's suppression limit, as ARX's optimizeIterative)"
        )
    if not settings.adaptive and settings.records is None:
        raise ConfigError("transformation.local_recoding needs records (e.g. 0.01)")
    if not settings.adaptive and settings.adaption_factor is not None:
        raise ConfigError("transformation.local_recoding.adaption_factor needs mode adaptive")


def check_models(models: Sequence[Any]) -> None:
    """Only the models ARX recodes locally; the first other one refused in one line."""
    for m in models:
        if m.name not in SUPPORTED:
            raise ConfigError(
                f"transformation.local_recoding does not apply with privacy.{m.config_key} "
                "(ARX allows it with k, l, t, b-likeness, d-disclosure, average risk and "
                "estimated k-map only)"
            )


#: the settings table's rows of `transformation.local_recoding:` (`table.SETTINGS` lists them)
LOCAL_RECODING_ROWS: tuple[Setting, ...] = (
    decimal_setting(
        "local_recoding",
        ("transformation", "local_recoding", "records"),
        SHARE,
        "Local recoding (docs/design.md §4f): the share of ALL records each step must release (e.g. "
        "0.01); empty = the file's (off when the file has no transformation.local_recoding).",
    ),
    decimal_setting(
        "local_recoding_gs",
        ("transformation", "local_recoding", "gs_factor"),
        ZERO_TO_ONE,
        "Local recoding: the gs factor of the steps (0..1); empty = the objective's.",
    ),
    integer_setting(
        "local_recoding_steps",
        ("transformation", "local_recoding", "max_steps"),
        1,
        "Local recoding: the most searches (each step is one; adaptive: a search that released "
        "nothing counts too, ARX's maxIterations); empty = unlimited.",
    ),
    choice_setting(
        "local_recoding_mode",
        ("transformation", "local_recoding", "mode"),
        MODES,
        "Local recoding: fast (ARX's optimizeIterativeFast: each step releases at least "
        "`records` of all records) or adaptive (ARX's optimizeIterative: each step under the "
        "run's suppression limit, its gs factor raised by the adaption factor after a search "
        "that released nothing); empty = the file's (default fast).",
    ),
    decimal_setting(
        "local_recoding_adaption",
        ("transformation", "local_recoding", "adaption_factor"),
        ZERO_TO_ONE,
        "Local recoding, adaptive: added to the steps' gs factor after a search that released "
        "nothing (0..1; 0: stop there); empty = the file's (default 0.05, ARX's).",
    ),
)

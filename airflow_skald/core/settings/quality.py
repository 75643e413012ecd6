"""`quality:` of the config (docs/design.md §4d) as one validated value, and the names the settings
table offers (a leaf module: the config reads it without importing the models)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from airflow_skald.core.errors import ConfigError
from airflow_skald.core.settings.cost_benefit import CostBenefit
from airflow_skald.core.settings.setting import (
    AT_LEAST_ZERO,
    ZERO_TO_ONE,
    Setting,
    choice_setting,
    decimal_setting,
)

#: every objective, in the registry's order (core.quality.registry.MODELS)
OBJECTIVES = (
    "dm_star",
    "dm_star_arx",
    "dm",
    "aecs",
    "loss",
    "nu_entropy",
    "nu_entropy_nm",
    "precision",
    "height",
    "publisher_payout",
)
#: ARX's multi-dimensional models: per-QID values, weighted and aggregated
MULTI_DIMENSIONAL = ("loss", "nu_entropy", "nu_entropy_nm", "precision", "height")
AGGREGATES = ("geometric_mean", "arithmetic_mean", "sum", "maximum", "rank")
LINEAR = ("sum", "arithmetic_mean")  # aggregates of logarithms decided exactly


@dataclass(frozen=True)
class QualitySettings:
    """`quality:` of the config (docs/design.md §4d), validated: the objective, ARX's gs factor, the
    per-QID weights as written (missing = 1, in the config's QID order) and the aggregate
    (None: the model's default). `SkaldConfig.quality`."""

    objective: str = "dm_star"
    gs_factor: Fraction = Fraction(1, 2)
    weights: Mapping[str, Fraction] = field(default_factory=dict)
    aggregate: str | None = None
    # publisher_payout (ADR 0046): the configured profitability model's parameters and attacker
    cost_benefit: CostBenefit = field(default_factory=CostBenefit)
    attacker: str = "prosecutor"
    # differential privacy with no objective named: ARX's default (loss), said so; not listed
    objective_default: bool = False

    @property
    def g_factor(self) -> Fraction:
        """ARX's generalisation factor: 1 up to gs 0.5, then falling to 0 at gs 1."""
        gs = self.gs_factor
        return Fraction(1) if gs <= Fraction(1, 2) else 1 - 2 * (gs - Fraction(1, 2))

    @property
    def s_factor(self) -> Fraction:
        """ARX's suppression factor: 2 gs below gs 0.5, else 1."""
        gs = self.gs_factor
        return 2 * gs if gs < Fraction(1, 2) else Fraction(1)

    def normalised_weights(self, names: Sequence[str]) -> tuple[Fraction, ...]:
        """ARX: each weight divided by the largest; all 1 when the largest is 0."""
        raw = [Fraction(self.weights.get(n, 1)) for n in names]
        top = max(raw, default=Fraction(0))
        if top == 0:
            return tuple(Fraction(1) for _ in raw)
        return tuple(w / top for w in raw)

    def describe(self) -> dict:
        return {
            "objective": self.objective,
            "gs_factor": _text(self.gs_factor),
            "weights": {k: _text(v) for k, v in sorted(self.weights.items())},
            "aggregate": self.aggregate,
            **(
                {"cost_benefit": self.cost_benefit.describe(), "attacker": self.attacker}
                if self.objective == "publisher_payout"
                else {}
            ),
        }


def _text(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else format(float(x), "g")


def check(settings: QualitySettings, qids: Sequence[str]) -> None:
    """The combination of quality settings, checked once where the config is read."""
    how = settings.aggregate
    if how is not None:
        if settings.objective not in MULTI_DIMENSIONAL:
            raise ConfigError(
                f"quality.aggregate applies to {', '.join(MULTI_DIMENSIONAL)}, not to "
                f"objective {settings.objective}"
            )
        if settings.objective.startswith("nu_entropy") and how not in LINEAR:
            raise ConfigError(
                f"quality.aggregate of {settings.objective} must be sum or arithmetic_mean (a geometric "
                "mean, maximum or rank of logarithms cannot be decided exactly)"
            )
    for name in settings.weights:
        if name not in qids:
            raise ConfigError(f"quality.weights names '{name}', which is not a quasi-identifier")


#: the settings table's rows of `quality:` (`table.SETTINGS` lists them in its order)
QUALITY_ROWS: tuple[Setting, ...] = (
    choice_setting(
        "objective",
        ("quality", "objective"),
        OBJECTIVES,
        "What the search minimises (docs/design.md §4d): dm_star (the paper's, default), dm_star_arx, dm, "
        "aecs, loss, nu_entropy, nu_entropy_nm, precision, height, publisher_payout (ARX's "
        "quality models).",
        default="dm_star",
    ),
    decimal_setting(
        "gs_factor",
        ("quality", "gs_factor"),
        ZERO_TO_ONE,
        "ARX's gs factor weighting generalisation against suppression (0..1; default 0.5).",
        default=Fraction(1, 2),
    ),
    choice_setting(
        "aggregate",
        ("quality", "aggregate"),
        AGGREGATES,
        "How a multi-dimensional objective combines the QIDs (rank: ARX's RANK, the weighted "
        "values largest first, compared in turn); empty = the model's default "
        "(loss: geometric_mean, precision: arithmetic_mean, nu_entropy, nu_entropy_nm and height: sum).",
    ),
)


#: one entry of quality.weights (a mapping per QID: the file only, not a per-run setting)
QUALITY_WEIGHT = decimal_setting(
    "weight",
    None,
    AT_LEAST_ZERO,
    "ARX's attribute weight of one QID (divided by the largest).",
    cli=False,
    param=False,
)

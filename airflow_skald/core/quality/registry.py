"""The quality models a run may minimise (docs/design.md §4d): one line per model. The config loader,
the search and the report ask this registry; nothing else names a model's class."""

from __future__ import annotations

from airflow_skald.core.quality.aecs import AECS
from airflow_skald.core.quality.context import QualityContext
from airflow_skald.core.quality.dm import DM
from airflow_skald.core.quality.dm_star import DMStar
from airflow_skald.core.quality.dm_star_arx import DMStarARX
from airflow_skald.core.quality.height import Height
from airflow_skald.core.quality.loss import Loss
from airflow_skald.core.quality.metric import Metric
from airflow_skald.core.quality.multidim import MultiDimensional
from airflow_skald.core.quality.nu_entropy import NUEntropy
from airflow_skald.core.quality.nu_entropy_nm import NUNMEntropy
from airflow_skald.core.quality.precision import NMPrecision
from airflow_skald.core.quality.publisher_payout import PublisherPayout

MODELS: dict[str, type[Metric]] = {
    "dm_star": DMStar,
    "dm_star_arx": DMStarARX,
    "dm": DM,
    "aecs": AECS,
    "loss": Loss,
    "nu_entropy": NUEntropy,
    "nu_entropy_nm": NUNMEntropy,
    "precision": NMPrecision,
    "height": Height,
    "publisher_payout": PublisherPayout,
}


def build(name: str, ctx: QualityContext, aggregate: str | None = None) -> Metric:
    cls = MODELS[name]
    if issubclass(cls, MultiDimensional) or cls is AECS:
        return cls(ctx, aggregate)  # type: ignore[call-arg]
    if cls is PublisherPayout:
        return cls(ctx)  # type: ignore[call-arg]
    return cls()


def objective(ctx: QualityContext) -> Metric:
    """The configured objective, with the configured aggregate."""
    s = ctx.settings
    return build(s.objective, ctx, s.aggregate)


def every_model(ctx: QualityContext) -> dict[str, Metric]:
    """Every model for the report: the objective as configured, the others by default."""
    s = ctx.settings
    return {name: build(name, ctx, s.aggregate if name == s.objective else None) for name in MODELS}

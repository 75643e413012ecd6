"""The privacy models a config may ask for: one line per model. Config loading, per-run
overrides, the policy a run applies, and `skald verify`'s rebuild from a manifest all ask this
registry; nothing else names a model's class."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_skald.core.errors import ConfigError
from airflow_skald.core.privacy.average_risk import AverageRisk
from airflow_skald.core.privacy.b_likeness import BLikeness
from airflow_skald.core.privacy.d_disclosure import DDisclosure
from airflow_skald.core.privacy.delta_presence import DeltaPresence
from airflow_skald.core.privacy.differential_privacy import DifferentialPrivacy
from airflow_skald.core.privacy.k_anonymity import KAnonymity
from airflow_skald.core.privacy.k_map import KMap
from airflow_skald.core.privacy.k_map_exact import ExactKMap
from airflow_skald.core.privacy.l_diversity import LDiversity
from airflow_skald.core.privacy.model import ParseContext, PrivacyModel, RebuildContext
from airflow_skald.core.privacy.population_uniqueness import PopulationUniqueness
from airflow_skald.core.privacy.profitability import Profitability
from airflow_skald.core.privacy.profitability_no_attack import ProfitabilityNoAttack
from airflow_skald.core.privacy.sample_uniqueness import SampleUniqueness
from airflow_skald.core.privacy.t_closeness import TCloseness

# class-based models first; the sample-based ones in the order they judge a node (docs/design.md §4c)
MODELS: tuple[type[PrivacyModel], ...] = (
    KAnonymity,
    DifferentialPrivacy,
    LDiversity,
    TCloseness,
    KMap,
    ExactKMap,  # k_map without an estimator: against a population table (docs/design.md §4e)
    DeltaPresence,
    BLikeness,
    DDisclosure,
    ProfitabilityNoAttack,  # profitability with attack: false (ADR 0046)
    Profitability,  # ARX's game-theoretic model (ADR 0046)
    AverageRisk,
    SampleUniqueness,
    PopulationUniqueness,
)

#: the keys a config may hold under `privacy:` (besides suppression_limit)
CONFIG_KEYS: tuple[str, ...] = tuple(dict.fromkeys(m.config_key for m in MODELS))
#: the settings-table rows the models own (per-run thresholds)
THRESHOLDS: tuple[str, ...] = tuple(dict.fromkeys(t for m in MODELS for t in m.thresholds))


def parse_models(privacy: Mapping[str, Any], ctx: ParseContext) -> tuple[PrivacyModel, ...]:
    """Every model the `privacy:` mapping asks for, in registry order; at least one."""
    models = tuple(model for cls in MODELS for model in cls.parse(privacy.get(cls.config_key), ctx))
    if not models:
        raise ConfigError(
            "privacy.k is required (or another privacy model: "
            + ", ".join(f"privacy.{key}" for key in CONFIG_KEYS[1:])
            + ")"
        )
    return models


def settings_of(models: tuple[PrivacyModel, ...]) -> dict[str, Any]:
    """The models as the effective settings list them (one entry per config key)."""
    out: dict[str, Any] = {}
    for cls in MODELS:  # two models may share a key (k_map): the configured one's entry
        value = cls.settings_value(tuple(m for m in models if type(m) is cls))
        if value is not None or cls.config_key not in out:
            out[cls.config_key] = value
    return out


def archived_settings_of(models: tuple[PrivacyModel, ...]) -> dict[str, Any]:
    """The entries of `settings_of` that the effective config keeps with more than their
    settings: what verify needs to rebuild them (a t-closeness hierarchy as a table)."""
    out = {}
    for cls in MODELS:
        own = [m for m in models if type(m) is cls]
        if any(m.archived() for m in own):
            out[cls.config_key] = [{**m.settings_entry(), **m.archived()} for m in own]
    return out


def with_threshold(
    models: tuple[PrivacyModel, ...], key: str, value: Any
) -> tuple[PrivacyModel, ...]:
    """A per-run threshold (--k, --l, --t, --c) set on the one configured model owning it."""
    owners = [i for i, m in enumerate(models) if key in m.thresholds]
    if len(owners) != 1:
        kinds = {cls.config_key.replace("_", "-") for cls in MODELS if key in cls.thresholds}
        raise ConfigError(
            f"{key} sets the threshold of the one configured {' / '.join(sorted(kinds))} "
            f"criterion, but the config lists {len(owners)}"
        )
    out = list(models)
    out[owners[0]] = models[owners[0]].with_threshold(key, value)
    return tuple(out)


def bind_models(
    models: tuple[PrivacyModel, ...],
    sensitive: Mapping[str, Any] | None,
    n_records: int | None = None,
) -> tuple[PrivacyModel, ...]:
    """Each model with phase 1's statistics of its attribute (checks that need the data) and,
    when given, the input's record count."""
    if n_records is not None:
        models = tuple(m.with_records(n_records) for m in models)
    if any(m.attribute for m in models) and sensitive is None:
        raise ValueError("criteria need phase 1's statistics of their attributes")
    out, seen = [], dict.fromkeys(MODELS, 0)
    for m in models:
        where = f"privacy.{m.config_key}[{seen[type(m)]}]"
        seen[type(m)] += 1
        out.append(m.bind(sensitive or {}, where) if m.attribute else m)
    return tuple(out)


def check_entry(entry: object) -> str | None:
    """What is wrong with a manifest's model entry (the rest of a line after its place), or
    None when a model of this registry can rebuild it."""
    if not isinstance(entry, dict) or not isinstance(entry.get("model"), str):
        return " must be an object naming its model"
    for cls in MODELS:
        if entry["model"] in cls.manifest_models:
            return cls.check_entry(entry)
    return " names a model verify does not know"


def rebuild(entry: dict, ctx: RebuildContext) -> PrivacyModel | str:
    """A model from its manifest entry, or why it cannot be re-checked from the release."""
    name = entry.get("model", "")
    for cls in MODELS:
        if name in cls.manifest_models:
            return cls.rebuild(entry, ctx)
    return f"not re-checked: model '{name}' is not known to this version"

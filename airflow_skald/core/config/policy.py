"""The privacy policy of a run: its config's models, bound to what phase 1 learnt about the
sensitive attributes (their value codes, and for t-closeness the distribution over all input
records). Checks that need the data (l above an attribute's distinct values, `ordered` on a
text attribute, a hierarchy that misses a value) fail here, one line each."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.privacy.policy import PrivacyPolicy
from airflow_skald.core.privacy.registry import bind_models
from airflow_skald.core.transform.research_subset.classes import flags_of


def describe_privacy(config: SkaldConfig) -> list[dict]:
    """The criteria as configured (no data needed), in registry order."""
    return [m.describe() for m in config.privacy]


def build_policy(
    config: SkaldConfig,
    sensitive: Mapping[str, Any] | None = None,
    n_records: int | None = None,
) -> PrivacyPolicy:
    """The privacy models and suppression limit `config` asks for; models on a sensitive
    attribute need phase 1's statistics of it (`DomainStats.sensitive`), k-map with a
    population size the input's records."""
    models = bind_models(config.privacy, sensitive, n_records)
    subset = flags_of(config.research_subset, sensitive)
    return PrivacyPolicy(models, config.suppression.limit, subset)
